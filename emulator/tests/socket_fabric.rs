//! The socket fabric against fake ranks that speak frames over TCP.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcast::fabric::{route_kind, unicast_route, FabricHello, FabricWelcome, Frame, FABRIC_VERSION};
use mcast_emulator::cost::FabricCostModel;
use mcast_emulator::sim::spec::SimFabric;
use mcast_emulator::sim::{unicast, Happening, Net};
use mcast_emulator::socket_fabric::{FabricServer, FabricStats};
use mcast_emulator::switch::routing::PathHeader;
use mcast_emulator::switch::{SwitchHeader, SwitchPacket};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::time::timeout;

const TOKEN: &str = "job-token";
const WAIT: Duration = Duration::from_secs(5);
const IRREGULAR: &str = "irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=3";

struct Rank {
    rank: u32,
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
}

impl Rank {
    async fn connect(addr: &str, token: &str, rank: u32) -> (Rank, Frame) {
        let s = timeout(WAIT, TcpStream::connect(addr))
            .await
            .expect("connect in time")
            .expect("connect");
        let (r, w) = s.into_split();
        let mut me = Rank {
            rank,
            r: BufReader::new(r),
            w,
        };
        me.send(&Frame::Hello(FabricHello {
            version: FABRIC_VERSION,
            token: token.into(),
            rank,
        }))
        .await;
        let answer = me.recv().await;
        (me, answer)
    }

    async fn join(addr: &str, rank: u32) -> (Rank, FabricWelcome) {
        let (me, answer) = Rank::connect(addr, TOKEN, rank).await;
        match answer {
            Frame::Welcome(w) => (me, w),
            other => panic!("rank {rank}: expected a welcome, got {other:?}"),
        }
    }

    async fn send(&mut self, f: &Frame) {
        let b = f.to_bytes().unwrap();
        timeout(WAIT, self.w.write_all(&b))
            .await
            .expect("write in time")
            .expect("write");
    }

    async fn send_packet(&mut self, stamp: u64, post: u64, kind: u8, route: Bytes, data: Bytes) {
        self.send(&Frame::Packet {
            vc: 0,
            stamp,
            post,
            route_kind: kind,
            route,
            data,
        })
        .await;
    }

    /// The next frame that is not a heartbeat.
    async fn recv(&mut self) -> Frame {
        loop {
            let f = timeout(WAIT, Frame::read(&mut self.r))
                .await
                .unwrap_or_else(|_| panic!("rank {}: nothing within {WAIT:?}", self.rank))
                .unwrap_or_else(|e| panic!("rank {}: read failed: {e}", self.rank));
            if f != Frame::Heartbeat {
                return f;
            }
        }
    }

    /// The next packet: (stamp, post, data).
    async fn recv_packet(&mut self) -> (u64, u64, Bytes) {
        match self.recv().await {
            Frame::Packet {
                stamp,
                post,
                route_kind: k,
                route,
                data,
                ..
            } => {
                assert_eq!(k, route_kind::UNICAST);
                assert!(route.is_empty());
                (stamp, post, data)
            }
            other => panic!("rank {}: expected a packet, got {other:?}", self.rank),
        }
    }
}

fn start(spec: &str, cost: FabricCostModel, ranks: usize) -> FabricServer {
    FabricServer::start(spec, cost, TOKEN.into(), ranks, Duration::from_secs(30)).unwrap()
}

/// Wait until the fabric is idle with `injected` packets injected.
async fn settle(f: &FabricServer, injected: u64) -> FabricStats {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let s = f.stats();
        if s.injected == injected && s.in_fabric == 0 {
            return s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "fabric not idle: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The simulator's answer: host `a` injects a unicast to `b` at `s` (the
/// rank paid the NI's t_ns); the packet reaches `b`'s NI when the tail
/// arrives (the rank adds t_nr).
fn sim_stamp(spec: &str, cost: &FabricCostModel, a: usize, b: usize, s: u64) -> u64 {
    let f = SimFabric::parse(spec, cost.dateline).unwrap();
    let mut net: Net<()> = Net::new(f.routing(), cost).unwrap();
    net.inject(
        a,
        s,
        SwitchPacket {
            id: 0,
            header: unicast(b),
        },
    );
    match net.step().unwrap() {
        Some(Happening::Arrived { node, at, .. }) => {
            assert_eq!(node, b);
            at
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn zero_load_unicasts_match_the_simulator() {
    let specs = [
        "torus:4x4",
        "torus:4x4:uni",
        "mesh:3x4",
        "hypercube:3",
        IRREGULAR,
        "crossbar:4",
        "min:3",
    ];
    let mut other = FabricCostModel::preset("ncube2").unwrap();
    other.set_pair("link_delay=3").unwrap();
    for cost in [FabricCostModel::default(), other] {
        for spec in specs {
            let n = SimFabric::parse(spec, cost.dateline).unwrap().nodes();
            let f = start(spec, cost.clone(), n);
            let mut ranks = Vec::new();
            for r in 0..n {
                let (rank, w) = Rank::join(&f.host_addrs()[r], r as u32).await;
                assert_eq!(w.node, r as u32);
                assert_eq!(w.nodes, n as u32);
                assert_eq!(w.spec, spec);
                assert_eq!(w.dma, cost.dma_cycles());
                assert_eq!(w.packet_bytes as u64, cost.packet_flits * cost.flit_bytes);
                ranks.push(rank);
            }
            let pairs = [
                (0, n - 1),
                (n - 1, 0),
                (1, 2),
                (2, 1),
                (0, n / 2),
                (n / 2 + 1, 1),
            ];
            for (k, &(a, b)) in pairs.iter().enumerate() {
                let s = 1_000_000 * (k as u64 + 1) + 17;
                let data = Bytes::from(format!("{spec} {a}->{b}"));
                ranks[a]
                    .send_packet(
                        s,
                        5 + k as u64,
                        route_kind::UNICAST,
                        unicast_route(b as u32),
                        data.clone(),
                    )
                    .await;
                let (stamp, post, got) = ranks[b].recv_packet().await;
                assert_eq!(got, data);
                assert_eq!(post, 5 + k as u64);
                assert_eq!(
                    stamp,
                    sim_stamp(spec, &cost, a, b, s),
                    "{spec} ({}) {a}->{b}",
                    cost.preset
                );
            }
            let st = settle(&f, pairs.len() as u64).await;
            assert_eq!(st.delivered, pairs.len() as u64);
            assert_eq!(st.dropped, 0);
            f.shutdown();
        }
    }
}

/// Send every worm of a plan from its sender; every destination gets the
/// message exactly once, nobody else gets anything.
async fn run_worms(spec: &str, sends: Vec<(usize, u8, Bytes)>, dests: &[usize]) {
    let cost = FabricCostModel::default();
    let n = SimFabric::parse(spec, cost.dateline).unwrap().nodes();
    let f = start(spec, cost, n);
    let mut ranks = Vec::new();
    for r in 0..n {
        ranks.push(Rank::join(&f.host_addrs()[r], r as u32).await.0);
    }
    let data = Bytes::from_static(b"the message");
    for (k, (sender, kind, route)) in sends.iter().enumerate() {
        ranks[*sender]
            .send_packet(1000 * k as u64, 1, *kind, route.clone(), data.clone())
            .await;
    }
    for &d in dests {
        let (_, post, got) = ranks[d].recv_packet().await;
        assert_eq!((post, got), (1, data.clone()), "{spec}: destination {d}");
    }
    let st = settle(&f, sends.len() as u64).await;
    assert_eq!(st.delivered, dests.len() as u64, "{spec}: {st:?}");
    assert_eq!(st.dropped, 0);
    f.shutdown();
}

#[tokio::test]
async fn worms_deliver_exactly_once() {
    use mcast_algorithms::irregular::Scheme;
    let fab = SimFabric::parse(IRREGULAR, true).unwrap();
    let SimFabric::Irregular(irr) = &fab else {
        unreachable!()
    };
    let dests = [1usize, 4, 9, 13, 20, 27, 31];
    for scheme in [Scheme::SsrGreedy, Scheme::TreeWorm, Scheme::PathGreedy] {
        let plan = irr.fabric().plan(scheme, 0, &dests).unwrap();
        let sends = plan
            .sends
            .iter()
            .map(|s| {
                (
                    s.sender,
                    route_kind::IRREGULAR,
                    Bytes::from(s.header.encode()),
                )
            })
            .collect();
        run_worms(IRREGULAR, sends, &dests).await;
    }
    // A path worm on a unidirectional torus (intermediate reception).
    let spec = "torus:4x4:uni";
    let fab = SimFabric::parse(spec, true).unwrap();
    let topo = fab.topology().unwrap();
    let dests = [2usize, 5, 7, 8, 11, 14];
    let pa: mcast_algorithms::path::PathAlgorithm = "storus".parse().unwrap();
    let plan = mcast_algorithms::path::plan(topo, pa, 3, &dests).unwrap();
    let sends = plan
        .sends
        .iter()
        .map(|s| {
            let b = mcast_algorithms::path::header::encode_simple(s.delivers()).unwrap();
            (s.sender, route_kind::PATH, Bytes::from(b))
        })
        .collect();
    run_worms(spec, sends, &dests).await;
}

/// One worm in an idle fabric: every destination's stamp is the
/// simulator's.
async fn worm_stamps(spec: &str, sender: usize, kind: u8, route: Bytes, header: SwitchHeader) {
    let cost = FabricCostModel::default();
    let fab = SimFabric::parse(spec, cost.dateline).unwrap();
    let n = fab.nodes();
    let s = 5000;
    let mut net: Net<()> = Net::new(fab.routing(), &cost).unwrap();
    net.inject(sender, s, SwitchPacket { id: 0, header });
    let mut want = BTreeSet::new();
    while let Some(h) = net.step().unwrap() {
        if let Happening::Arrived { node, at, .. } = h {
            want.insert((node, at));
        }
    }
    assert!(!want.is_empty(), "{spec}: the worm reaches someone");
    let f = start(spec, cost, n);
    let mut ranks = Vec::new();
    for r in 0..n {
        ranks.push(Rank::join(&f.host_addrs()[r], r as u32).await.0);
    }
    ranks[sender]
        .send_packet(s, 0, kind, route, Bytes::from_static(b"w"))
        .await;
    let mut got = BTreeSet::new();
    for &(d, _) in &want {
        let (stamp, _, _) = ranks[d].recv_packet().await;
        got.insert((d, stamp));
    }
    assert_eq!(got, want, "{spec}");
    let st = settle(&f, 1).await;
    assert_eq!(st.delivered, want.len() as u64);
    f.shutdown();
}

#[tokio::test]
async fn idle_worms_match_the_simulator() {
    use mcast_algorithms::irregular::Scheme;
    let fab = SimFabric::parse(IRREGULAR, true).unwrap();
    let SimFabric::Irregular(irr) = &fab else {
        unreachable!()
    };
    let dests = [1usize, 4, 9, 13, 20, 27, 31];
    for scheme in [Scheme::TreeWorm, Scheme::PathGreedy, Scheme::SsrGreedy] {
        let plan = irr.fabric().plan(scheme, 0, &dests).unwrap();
        let w = &plan.sends[0];
        worm_stamps(
            IRREGULAR,
            w.sender,
            route_kind::IRREGULAR,
            Bytes::from(w.header.encode()),
            SwitchHeader::Irregular(Box::new(w.header.clone())),
        )
        .await;
    }
    let spec = "torus:4x4:uni";
    let fab = SimFabric::parse(spec, true).unwrap();
    let pa: mcast_algorithms::path::PathAlgorithm = "storus".parse().unwrap();
    let plan = mcast_algorithms::path::plan(fab.topology().unwrap(), pa, 3, &[2, 5, 7, 8, 11, 14])
        .unwrap();
    let w = &plan.sends[0];
    let list: Vec<u32> = w.delivers().iter().map(|&d| d as u32).collect();
    worm_stamps(
        spec,
        w.sender,
        route_kind::PATH,
        Bytes::from(mcast_algorithms::path::header::encode_simple(w.delivers()).unwrap()),
        SwitchHeader::Path(Box::new(PathHeader {
            dests: list.into(),
            pos: 0,
            on_h: false,
        })),
    )
    .await;
}

#[tokio::test]
async fn a_min_region_header_matches_the_simulator() {
    let h = mcast_algorithms::min::RegionHeader::new(3, 2, 6).unwrap();
    worm_stamps(
        "min:3",
        0,
        route_kind::MIN,
        Bytes::from(h.encode()),
        SwitchHeader::Min(h),
    )
    .await;
}

/// Every rank sends to rank 0 at once: all arrive, and no two use the
/// link into rank 0 at once (their tails arrive at least a packet time
/// apart; with backfilling they need not arrive in stamp order).
#[tokio::test]
async fn a_hot_spot_drains() {
    let spec = "torus:4x4";
    let f = start(spec, FabricCostModel::default(), 16);
    let mut ranks = Vec::new();
    for r in 0..16 {
        ranks.push(Rank::join(&f.host_addrs()[r], r as u32).await.0);
    }
    let per = 150u64;
    for (r, rank) in ranks.iter_mut().enumerate().skip(1) {
        let mut buf = bytes::BytesMut::new();
        for k in 0..per {
            Frame::Packet {
                vc: 0,
                stamp: k,
                post: r as u64,
                route_kind: route_kind::UNICAST,
                route: unicast_route(0),
                data: Bytes::from(vec![r as u8; 64]),
            }
            .encode(&mut buf)
            .unwrap();
        }
        rank.w.write_all(&buf).await.unwrap();
    }
    let mut stamps = Vec::new();
    let mut from = [0u64; 16];
    for _ in 0..15 * per {
        let (stamp, post, data) = ranks[0].recv_packet().await;
        stamps.push(stamp);
        assert_eq!(data[0] as u64, post);
        from[post as usize] += 1;
    }
    stamps.sort_unstable();
    let c = FabricCostModel::default();
    let ser = c.packet_flits.div_ceil(c.link_bandwidth);
    assert!(
        stamps.windows(2).all(|w| w[1] >= w[0] + ser),
        "two packets shared the link into rank 0: {:?}",
        stamps
            .windows(2)
            .filter(|w| w[1] < w[0] + ser)
            .take(5)
            .collect::<Vec<_>>()
    );
    assert!(from[1..].iter().all(|&c| c == per), "{from:?}");
    let st = settle(&f, 15 * per).await;
    assert_eq!(st.delivered, 15 * per);
    f.shutdown();
}

#[tokio::test]
async fn many_packets_under_load() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    for spec in ["torus:4x4@vc_buf_flits=128", "min:4", IRREGULAR] {
        let cost = FabricCostModel::default();
        let mut c2 = cost.clone();
        let bare = mcast_emulator::sim::spec::split_spec(spec, &mut c2).unwrap();
        let n = SimFabric::parse(bare, true).unwrap().nodes();
        let f = start(spec, cost, n);
        let per = 50usize;
        // Destinations from a fixed LCG.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut plan: Vec<Vec<usize>> = Vec::new();
        let mut expect: Vec<BTreeSet<(usize, usize)>> = vec![BTreeSet::new(); n];
        for s in 0..n {
            let mut v = Vec::new();
            for k in 0..per {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let mut d = (x >> 33) as usize % (n - 1);
                if d >= s {
                    d += 1;
                }
                v.push(d);
                expect[d].insert((s, k));
            }
            plan.push(v);
        }
        let plan = Arc::new(plan);
        // Everyone joins before anyone sends (deliveries to a port with no
        // rank are dropped).
        let mut joined = Vec::new();
        for r in 0..n {
            joined.push(Rank::join(&f.host_addrs()[r], r as u32).await.0);
        }
        let mut set = tokio::task::JoinSet::new();
        for (r, rank) in joined.into_iter().enumerate() {
            let Rank {
                rank: id,
                r: rd,
                mut w,
            } = rank;
            let plan = plan.clone();
            let want = expect[r].clone();
            set.spawn(async move {
                let writer = tokio::spawn(async move {
                    let mut buf = bytes::BytesMut::new();
                    for (k, &d) in plan[r].iter().enumerate() {
                        let mut data = vec![0u8; 100];
                        data[..8].copy_from_slice(&(r as u64).to_le_bytes());
                        data[8..16].copy_from_slice(&(k as u64).to_le_bytes());
                        Frame::Packet {
                            vc: 0,
                            stamp: 10 * k as u64,
                            post: 0,
                            route_kind: route_kind::UNICAST,
                            route: unicast_route(d as u32),
                            data: Bytes::from(data),
                        }
                        .encode(&mut buf)
                        .unwrap();
                    }
                    w.write_all(&buf).await.unwrap();
                    w
                });
                let mut me = Rank {
                    rank: id,
                    r: rd,
                    w: writer.await.unwrap(),
                };
                let mut got = BTreeSet::new();
                while got.len() < want.len() {
                    let (_, _, data) = me.recv_packet().await;
                    let s = u64::from_le_bytes(data[..8].try_into().unwrap()) as usize;
                    let k = u64::from_le_bytes(data[8..16].try_into().unwrap()) as usize;
                    assert!(got.insert((s, k)), "rank {r}: ({s}, {k}) twice");
                }
                assert_eq!(got, want, "rank {r}");
                me
            });
        }
        let mut ranks = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok(r) => ranks.push(r),
                Err(e) => panic!("{spec}: {e}; {:?}", f.stats()),
            }
        }
        let total = (n * per) as u64;
        let st = settle(&f, total).await;
        assert_eq!(st.delivered, total, "{spec}: {st:?}");
        assert_eq!(st.bytes_delivered, total * 100);
        assert_eq!(st.dropped, 0);
        assert!(st.hops >= total);
        f.shutdown();
    }
}

#[tokio::test]
async fn bad_input_does_not_hurt_the_others() {
    let f = start("torus:4x4", FabricCostModel::default(), 8);
    let a = f.host_addrs().to_vec();
    // Wrong token, wrong rank, wrong version.
    let (_, ans) = Rank::connect(&a[1], "nope", 1).await;
    assert!(
        matches!(ans, Frame::Refused(ref r) if r.contains("token")),
        "{ans:?}"
    );
    let (_, ans) = Rank::connect(&a[1], TOKEN, 2).await;
    assert!(matches!(ans, Frame::Refused(_)), "{ans:?}");
    // Garbage instead of a hello.
    let mut g = TcpStream::connect(&a[3]).await.unwrap();
    g.write_all(&[0xff; 64]).await.unwrap();
    let mut r0 = Rank::join(&a[0], 0).await.0;
    let mut r1 = Rank::join(&a[1], 1).await.0;
    // A second connection to a taken port.
    let (_, ans) = Rank::connect(&a[1], TOKEN, 1).await;
    assert!(
        matches!(ans, Frame::Refused(ref r) if r.contains("already")),
        "{ans:?}"
    );
    // Garbage after a good hello: lost, reported to the others.
    let mut r2 = Rank::join(&a[2], 2).await.0;
    r2.w.write_all(&[5, 0, 0, 0, 99, 1, 2, 3, 4]).await.unwrap();
    for r in [&mut r0, &mut r1] {
        match r.recv().await {
            Frame::Lost { rank: 2, reason } => assert!(reason.contains("malformed"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
    // Unusable routes are dropped, counted, and do not hurt.
    r0.send_packet(0, 0, route_kind::UNICAST, unicast_route(99), Bytes::new())
        .await;
    r0.send_packet(
        0,
        0,
        route_kind::PATH,
        Bytes::from_static(&[1, 2]),
        Bytes::new(),
    )
    .await;
    r0.send_packet(0, 0, 0x80, unicast_route(1), Bytes::new())
        .await;
    // The others keep working.
    r0.send_packet(
        100,
        7,
        route_kind::UNICAST,
        unicast_route(1),
        Bytes::from_static(b"hi"),
    )
    .await;
    let (_, post, data) = r1.recv_packet().await;
    assert_eq!((post, &data[..]), (7, &b"hi"[..]));
    assert_eq!(f.stats().dropped_route, 3);
    // A rank that disconnects without Bye is lost.
    let r5 = Rank::join(&a[5], 5).await.0;
    drop(r5);
    for r in [&mut r0, &mut r1] {
        match r.recv().await {
            Frame::Lost { rank: 5, reason } => {
                assert!(
                    reason.contains("rank 5") && reason.contains("without Bye"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
    // A rank that says Bye: its packet first, then the Bye.
    let mut r6 = Rank::join(&a[6], 6).await.0;
    r6.send_packet(
        10_000,
        3,
        route_kind::UNICAST,
        unicast_route(0),
        Bytes::from_static(b"last"),
    )
    .await;
    // It left without finalize, at collective 9: the goodbye says so.
    let goodbye = mcast::fabric::Goodbye::departed([9], [(0, 1)], None);
    let bye = Frame::Bye {
        rank: 6,
        goodbye: goodbye.clone(),
    };
    r6.send(&bye).await;
    drop(r6);
    let (_, _, data) = r0.recv_packet().await;
    assert_eq!(&data[..], b"last");
    assert_eq!(r0.recv().await, bye);
    assert_eq!(r1.recv().await, bye);
    // The garbage connection was closed by the fabric.
    let mut sink = Vec::new();
    let closed = timeout(
        WAIT,
        tokio::io::AsyncReadExt::read_to_end(&mut g, &mut sink),
    )
    .await;
    assert!(closed.is_ok());
    assert_eq!(f.stats().lost, 2);
    f.shutdown();
}

#[tokio::test]
async fn a_silent_rank_is_lost() {
    let f = FabricServer::start(
        "crossbar:4",
        FabricCostModel::default(),
        TOKEN.into(),
        2,
        Duration::from_millis(800),
    )
    .unwrap();
    let _quiet = Rank::join(&f.host_addrs()[0], 0).await.0;
    let Rank {
        r: mut rd, mut w, ..
    } = Rank::join(&f.host_addrs()[1], 1).await.0;
    // Rank 1 keeps its link alive from another task.
    let beat = tokio::spawn(async move {
        let hb = Frame::Heartbeat.to_bytes().unwrap();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if w.write_all(&hb).await.is_err() {
                return;
            }
        }
    });
    let lost = loop {
        let f = timeout(WAIT, Frame::read(&mut rd)).await.unwrap().unwrap();
        if f != Frame::Heartbeat {
            break f;
        }
    };
    beat.abort();
    match lost {
        Frame::Lost { rank: 0, reason } => assert!(reason.contains("sent nothing"), "{reason}"),
        other => panic!("{other:?}"),
    }
    f.shutdown();
}

#[test]
fn bad_starts_are_errors() {
    let c = FabricCostModel::default();
    let t = Duration::from_secs(1);
    assert!(FabricServer::start("torus:2x2", c.clone(), "t".into(), 5, t).is_err());
    assert!(FabricServer::start("nonsense:3", c.clone(), "t".into(), 1, t).is_err());
    assert!(FabricServer::start("torus:4x4@bogus=1", c.clone(), "t".into(), 1, t).is_err());
    assert!(FabricServer::start("torus:4x4", c, "t".into(), 1, Duration::ZERO).is_err());
}
