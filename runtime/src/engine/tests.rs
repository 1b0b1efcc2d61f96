//! The engine against the paper's trees, FPFS ordering and bad packets.

use mcast_algorithms::Shape;

use super::*;

/// Run a bcast through a set of engines with instantaneous delivery, in
/// action order, and return (deliveries per rank, copies sent).
fn run(
    size: usize,
    root: usize,
    shape: Shape,
    fw: Forwarding,
    len: usize,
    pkt: usize,
) -> Vec<Vec<Packet>> {
    run_tree(size, root, TreeKind::Chain(shape), None, fw, len, pkt)
}

/// [`run`] for any tree, the engines knowing the host of every rank.
fn run_tree(
    size: usize,
    root: usize,
    tree: TreeKind,
    hosts: Option<&[u32]>,
    fw: Forwarding,
    len: usize,
    pkt: usize,
) -> Vec<Vec<Packet>> {
    let mut engines = engines_on(size, hosts, fw, pkt);
    let data: Bytes = (0..len).map(|i| (i % 251) as u8).collect::<Vec<_>>().into();
    engines[root].post_bcast(5, data, tree).unwrap();
    flood(&mut engines, root).0
}

/// Engines for ranks `0..size`, knowing the host of every rank.
fn engines_on(size: usize, hosts: Option<&[u32]>, fw: Forwarding, pkt: usize) -> Vec<NiEngine> {
    (0..size)
        .map(|r| NiEngine::new(r, size, 9, fw, pkt).with_hosts(hosts.map(Arc::from)))
        .collect()
}

/// One send of [`flood`]: sender, child, the route the child received.
type Sent = (usize, usize, Route);

/// Carry what `root` posted through `engines` with instantaneous delivery,
/// in action order: the deliveries per rank, and every send (sender,
/// child, route) in order.
fn flood(engines: &mut [NiEngine], root: usize) -> (Vec<Vec<Packet>>, Vec<Sent>) {
    let mut got = vec![Vec::new(); engines.len()];
    let mut sends = Vec::new();
    let mut queue: VecDeque<(usize, Action)> = VecDeque::new();
    while let Some(a) = engines[root].poll_action() {
        queue.push_back((root, a));
    }
    while let Some((at, a)) = queue.pop_front() {
        match a {
            Action::Send { to, packet } => {
                sends.push((at, to, packet.route.clone()));
                engines[to].packet_in(at, packet).unwrap();
                while let Some(b) = engines[to].poll_action() {
                    queue.push_back((to, b));
                }
            }
            Action::Deliver(p) => got[at].push(p),
        }
    }
    (got, sends)
}

#[test]
fn bcast_reaches_everyone_once() {
    for fw in [Forwarding::Fpfs, Forwarding::Fcfs] {
        for shape in [
            Shape::Flat,
            Shape::KBinomial { k: 1 },
            Shape::KBinomial { k: 2 },
            Shape::KBinomial { k: 3 },
        ] {
            for root in 0..7 {
                let got = run(7, root, shape, fw, 1000, 300);
                for (r, ps) in got.iter().enumerate() {
                    if r == root {
                        assert!(ps.is_empty());
                    } else {
                        let idx: Vec<u32> = ps.iter().map(|p| p.header.pkt_idx).collect();
                        assert_eq!(
                            idx,
                            vec![0, 1, 2, 3],
                            "{fw:?} {shape:?} root {root} rank {r}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn fpfs_forwards_before_delivering() {
    let mut e = NiEngine::new(1, 4, 0, Forwarding::Fpfs, 10);
    let p = Packet {
        header: Header {
            kind: Kind::Bcast,
            job: 0,
            comm: 0,
            seq: 0,
            source: 0,
            root: 0,
            msg_len: 20,
            offset: 0,
            pkt_idx: 0,
            pkt_count: 2,
            payload_len: 10,
            route_kind: 1,
            route_len: 16,
        },
        route: Route::Range {
            shape: Shape::KBinomial { k: 1 },
            size: 4,
            lo: 1,
            hi: 3,
        },
        payload: Bytes::from_static(&[0; 10]),
    };
    e.packet_in(0, p).unwrap();
    assert!(matches!(e.poll_action(), Some(Action::Send { to: 2, .. })));
    assert!(matches!(e.poll_action(), Some(Action::Deliver(_))));
    assert_eq!(e.in_flight(), 1);
}

#[test]
fn rejects_misrouted_packets() {
    let mut e = NiEngine::new(1, 4, 7, Forwarding::Fpfs, 10);
    let mut h = Header {
        kind: Kind::P2p,
        job: 7,
        comm: 0,
        seq: 0,
        source: 0,
        root: 0,
        msg_len: 0,
        offset: 0,
        pkt_idx: 0,
        pkt_count: 1,
        payload_len: 0,
        route_kind: 0,
        route_len: 0,
    };
    let pk = |h: Header, route: Route| Packet {
        header: h,
        route,
        payload: Bytes::new(),
    };
    h.kind = Kind::Bcast;
    let r = Route::Range {
        shape: Shape::Flat,
        size: 4,
        lo: 2,
        hi: 2,
    };
    assert!(matches!(
        e.packet_in(0, pk(h, r)),
        Err(EngineError::Misrouted { .. })
    ));
    h.kind = Kind::Multicast;
    let r = Route::List {
        tree: TreeKind::Chain(Shape::Flat),
        covers: vec![
            Member {
                rank: 1,
                ordinal: 0,
            },
            Member {
                rank: 9,
                ordinal: 0,
            },
        ],
    };
    assert!(matches!(
        e.packet_in(0, pk(h, r)),
        Err(EngineError::BadRank(9))
    ));
    assert!(e.post_p2p(Kind::P2p, 1, 0, 0, Bytes::new()).is_err());
    assert!(e.post_p2p(Kind::Bcast, 2, 0, 0, Bytes::new()).is_err());
    assert!(e.post_p2p(Kind::Msg, 2, 0, 4, Bytes::new()).is_err());
    assert!(e
        .post_multicast(
            0,
            &[Member {
                rank: 1,
                ordinal: 0
            }],
            Bytes::new(),
            TreeKind::Chain(Shape::Flat)
        )
        .is_err());
}

#[test]
fn point_to_point_goes_straight_in_packets() {
    let mut a = NiEngine::new(0, 4, 7, Forwarding::Fpfs, 10);
    let mut b = NiEngine::new(3, 4, 7, Forwarding::Fpfs, 10);
    let data: Bytes = (0..25u8).collect::<Vec<_>>().into();
    a.post_p2p(Kind::Msg, 3, 41, 0, data.clone()).unwrap();
    let mut got = Vec::new();
    while let Some(act) = a.poll_action() {
        let Action::Send { to: 3, packet } = act else {
            panic!("{act:?}");
        };
        b.packet_in(0, packet).unwrap();
        while let Some(Action::Deliver(p)) = b.poll_action() {
            got.push(p);
        }
    }
    assert_eq!(got.len(), 3, "25 bytes in packets of 10");
    let h = got[2].header;
    assert_eq!(
        (h.kind, h.seq, h.root, h.offset, h.pkt_count),
        (Kind::Msg, 41, 0, 20, 3)
    );
    let joined: Vec<u8> = got.iter().flat_map(|p| p.payload.to_vec()).collect();
    assert_eq!(joined, data.to_vec());
    assert_eq!(b.in_flight(), 0, "a receiver forwards nothing");
}

#[test]
fn host_aware_bcast_reaches_everyone_once_and_crosses_each_host_once() {
    // 9 ranks on 3 hosts, not in rank order.
    let hosts: Vec<u32> = vec![0, 1, 2, 0, 1, 2, 0, 1, 2];
    for fw in [Forwarding::Fpfs, Forwarding::Fcfs] {
        for k in 1..4 {
            for root in 0..9 {
                let got = run_tree(9, root, TreeKind::Hosts { k }, Some(&hosts), fw, 1000, 300);
                for (r, ps) in got.iter().enumerate() {
                    let idx: Vec<u32> = ps.iter().map(|p| p.header.pkt_idx).collect();
                    let want: Vec<u32> = if r == root { vec![] } else { vec![0, 1, 2, 3] };
                    assert_eq!(idx, want, "k={k} root={root} rank={r} {fw:?}");
                }
            }
        }
    }
    // Without a host table the tree cannot be forwarded: an error, not a panic.
    let mut e = NiEngine::new(0, 4, 9, Forwarding::Fpfs, 100);
    assert!(e
        .post_bcast(1, Bytes::from_static(b"x"), TreeKind::Hosts { k: 1 })
        .is_err());
}

/// A job that cuts large messages into larger packets: the size a message
/// takes is a function of its length alone, the engine cuts it so, and
/// every receiver gets every byte, the last packet ragged.
#[test]
fn large_messages_go_in_large_packets() {
    let sizing = PacketSize::uniform(300).with_large(1000, 2000);
    assert_eq!(sizing.large(), Some((1000, 2000)));
    assert_eq!(PacketSize::uniform(300).large(), None);
    assert_eq!(PacketSize::uniform(0).for_len(5), 1);
    assert_eq!(sizing.largest(), 1000);
    assert_eq!(PacketSize::uniform(300).largest(), 300);
    for (len, bytes, count) in [
        (0, 300, 1),
        (1, 300, 1),
        (1999, 300, 7),
        (2000, 1000, 2),
        (2001, 1000, 3),
        (4000, 1000, 4),
    ] {
        assert_eq!(sizing.for_len(len), bytes, "{len}");
        assert_eq!(sizing.count(len), count, "{len}");
    }
    let hosts: Vec<u32> = vec![0, 0, 1, 1, 2, 2];
    for len in [1999, 2000, 2501] {
        let mut engines: Vec<NiEngine> = engines_on(6, Some(&hosts), Forwarding::Fpfs, 300)
            .into_iter()
            .map(|e| e.with_packets(sizing))
            .collect();
        let data: Bytes = (0..len).map(|i| (i % 251) as u8).collect::<Vec<_>>().into();
        engines[0]
            .post_bcast(5, data.clone(), TreeKind::Hosts { k: 1 })
            .unwrap();
        let got = flood(&mut engines, 0).0;
        for (r, ps) in got.iter().enumerate().skip(1) {
            let mut whole = vec![0u8; len];
            for p in ps {
                let h = p.header;
                assert_eq!(h.pkt_count as usize, sizing.count(len), "{len} {r}");
                assert_eq!(h.offset as usize, h.pkt_idx as usize * sizing.for_len(len));
                whole[h.offset as usize..h.offset as usize + p.payload.len()]
                    .copy_from_slice(&p.payload);
            }
            assert_eq!(ps.len(), sizing.count(len), "{len} {r}");
            assert_eq!(&whole[..], &data[..], "{len} {r}");
        }
    }
}

/// The root's plan for one small packet (what `Net::bcast_inline` writes
/// into the rings) is exactly what `post_bcast` emits: the same header and,
/// child by child in the same order, the same route.
#[test]
fn one_packet_plan_matches_the_posted_packets() {
    for shape in [
        Shape::Flat,
        Shape::KBinomial { k: 1 },
        Shape::KBinomial { k: 3 },
        Shape::KBinomial { k: 64 },
    ] {
        for (size, root) in [(2, 0), (4, 0), (5, 3), (8, 6)] {
            for fw in [Forwarding::Fpfs, Forwarding::Fcfs] {
                let mut a = NiEngine::new(root, size, 9, fw, 1024);
                let mut b = NiEngine::new(root, size, 9, fw, 1024);
                let data = Bytes::from(vec![7u8; 100]);
                a.post_bcast(11, data, TreeKind::Chain(shape)).unwrap();
                let mut posted = Vec::new();
                while let Some(act) = a.poll_action() {
                    match act {
                        Action::Send { to, packet } => posted.push((to, packet)),
                        Action::Deliver(_) => panic!("the root delivers nothing"),
                    }
                }
                let (header, children) = b.bcast_source_plan(11, 100, shape).unwrap().unwrap();
                assert_eq!(children.len(), posted.len(), "{shape:?} {size} {root}");
                for ((to, route), (pto, p)) in children.iter().zip(&posted) {
                    assert_eq!(to, pto);
                    assert_eq!(route, &p.route);
                    assert_eq!(header, p.header);
                }
                b.sent_copies(children.len());
                assert_eq!(a.stats().copies_out, b.stats().copies_out);
                // Asked again, the plan is the kept one.
                let (_, again) = b.bcast_source_plan(12, 100, shape).unwrap().unwrap();
                assert!(Arc::ptr_eq(&children, &again));
            }
        }
    }
    // More than one packet, or nobody to send to: no plan.
    let mut e = NiEngine::new(0, 4, 9, Forwarding::Fpfs, 1024);
    assert_eq!(e.bcast_source_plan(1, 1025, Shape::Flat).unwrap(), None);
    let mut lone = NiEngine::new(0, 1, 9, Forwarding::Fpfs, 1024);
    assert_eq!(lone.bcast_source_plan(1, 10, Shape::Flat).unwrap(), None);
    // A shape that cannot be built is refused as `post_bcast` refuses it.
    assert!(e
        .bcast_source_plan(1, 10, Shape::KBinomial { k: 0 })
        .is_err());
}

/// A receiver whose range is itself alone (every receiver of the flat
/// tree) is a leaf: it delivers, forwards nothing, and neither plans
/// children nor keeps forwarding state.
#[test]
fn a_leaf_delivers_without_planning_or_state() {
    let mut root = NiEngine::new(0, 4, 9, Forwarding::Fpfs, 1024);
    root.post_bcast(5, Bytes::from_static(b"leaf"), TreeKind::Chain(Shape::Flat))
        .unwrap();
    let mut sends = Vec::new();
    while let Some(a) = root.poll_action() {
        if let Action::Send { to, packet } = a {
            sends.push((to, packet));
        }
    }
    assert_eq!(sends.len(), 3);
    for (to, packet) in sends {
        assert!(matches!(packet.route, Route::Range { lo, hi, .. } if lo == hi));
        let mut leaf = NiEngine::new(to, 4, 9, Forwarding::Fpfs, 1024);
        leaf.packet_in(0, packet.clone()).unwrap();
        let actions: Vec<Action> = std::iter::from_fn(|| leaf.poll_action()).collect();
        assert!(matches!(&actions[..], [Action::Deliver(p)] if *p == packet));
        assert!(leaf.forwards.is_empty() && leaf.chain_plans.is_empty());
        assert_eq!((leaf.stats.packets_in, leaf.stats.delivered), (1, 1));
        // Still checked: a leaf packet for another rank is misrouted.
        let mut other = NiEngine::new((to % 3) + 1, 4, 9, Forwarding::Fpfs, 1024);
        if (to % 3) + 1 != to {
            assert!(matches!(
                other.packet_in(0, packet),
                Err(EngineError::Misrouted { .. })
            ));
        }
    }
}

#[test]
fn one_packet_point_to_point_is_the_posted_packet_without_actions() {
    // `p2p_packet` gives the packet `post_p2p` queues, refuses what it
    // refuses, and declines a message of several packets.
    let (mut fast, mut posted) = (
        NiEngine::new(1, 4, 7, Forwarding::Fpfs, 10),
        NiEngine::new(1, 4, 7, Forwarding::Fpfs, 10),
    );
    let mut sent = Vec::new();
    for len in [0u8, 1, 10] {
        let data: Bytes = (0..len).collect::<Vec<_>>().into();
        let p = fast.p2p_packet(Kind::P2p, 3, 41, 2, &data).unwrap();
        let p = p.expect("at most one packet's bytes");
        assert!(fast.poll_action().is_none(), "nothing queued");
        posted.post_p2p(Kind::P2p, 3, 41, 2, data).unwrap();
        let Some(Action::Send { to: 3, packet }) = posted.poll_action() else {
            panic!("post_p2p queued no send to 3");
        };
        assert!(posted.poll_action().is_none());
        assert_eq!(p, packet);
        sent.push(p);
    }
    assert_eq!(fast.stats(), posted.stats());
    let eleven: Bytes = vec![0u8; 11].into();
    assert_eq!(fast.p2p_packet(Kind::Msg, 3, 0, 1, &eleven), Ok(None));
    for (kind, to, index) in [
        (Kind::P2p, 1, 0),
        (Kind::P2p, 4, 0),
        (Kind::Bcast, 2, 0),
        (Kind::Msg, 2, 4),
    ] {
        let refused = posted
            .post_p2p(kind, to, 0, index, Bytes::new())
            .unwrap_err();
        assert_eq!(
            fast.p2p_packet(kind, to, 0, index, &Bytes::new()),
            Err(refused)
        );
    }

    // `p2p_in` checks and counts as `packet_in` does, queues nothing, and
    // takes point-to-point packets only.
    let (mut fast, mut slow) = (
        NiEngine::new(3, 4, 7, Forwarding::Fpfs, 10),
        NiEngine::new(3, 4, 7, Forwarding::Fpfs, 10),
    );
    for p in &sent {
        assert_eq!(fast.p2p_in(p), Ok(true));
        assert!(fast.poll_action().is_none());
        slow.packet_in(1, p.clone()).unwrap();
        assert!(matches!(slow.poll_action(), Some(Action::Deliver(q)) if q == *p));
    }
    assert_eq!(fast.stats(), slow.stats());
    let mut bad = sent[0].clone();
    bad.header.root = 9;
    assert_eq!(fast.p2p_in(&bad), Err(EngineError::BadRank(9)));
    assert_eq!(slow.packet_in(1, bad), Err(EngineError::BadRank(9)));
    let mut bcast = sent[0].clone();
    bcast.header.kind = Kind::Bcast;
    let before = fast.stats();
    assert_eq!(fast.p2p_in(&bcast), Ok(false));
    assert_eq!(fast.stats(), before, "not counted: packet_in takes it");
}

/// Every send of one bcast from `root` through `engines` (sender, child,
/// route), in action order.
fn sends_of(engines: &mut [NiEngine], root: usize, seq: u64, tree: TreeKind) -> Vec<Sent> {
    engines[root]
        .post_bcast(seq, Bytes::from_static(b"xy"), tree)
        .unwrap();
    flood(engines, root).1
}

/// A list plan is made once and kept (`NiEngine::list_plan`): the bcasts
/// after the first, from the same root, send exactly what it sent, and
/// another root or another tree gets its own plan, not a kept one.
#[test]
fn kept_list_plans_are_the_plans() {
    let hosts: Vec<u32> = vec![0, 1, 2, 0, 1, 2, 0, 1, 2];
    let mut engines = engines_on(9, Some(&hosts), Forwarding::Fpfs, 100);
    for (root, k) in [(0, 1), (4, 1), (0, 2), (7, 3)] {
        let tree = TreeKind::Hosts { k };
        // A fresh set of engines plans from scratch.
        let mut fresh = engines_on(9, Some(&hosts), Forwarding::Fpfs, 100);
        let want = sends_of(&mut fresh, root, 1, tree);
        assert_eq!(want.len(), 8, "root {root} k {k}: one send per other rank");
        for seq in 10..13 {
            assert_eq!(
                sends_of(&mut engines, root, seq, tree),
                want,
                "root {root} k {k}"
            );
        }
    }
    assert!(engines.iter().any(|e| !e.list_plans.is_empty()));
    // A multicast's list carries its ordinals, new every call: not kept.
    let kept = engines[0].list_plans.len();
    let dests: Vec<Member> = [1, 2, 4]
        .iter()
        .map(|&rank| Member { rank, ordinal: 3 })
        .collect();
    engines[0]
        .post_multicast(
            20,
            &dests,
            Bytes::from_static(b"m"),
            TreeKind::Hosts { k: 1 },
        )
        .unwrap();
    assert_eq!(engines[0].list_plans.len(), kept);
}
