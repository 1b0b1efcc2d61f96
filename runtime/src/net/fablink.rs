//! Fabric mode: the rank's one link to its host port of an emulated switch
//! fabric (`mclaunch --fabric SPEC`), and the host's part of the cost model.
//!
//! The NI engine runs as in direct mode; only where its packets go changes.
//! Every copy it sends becomes a [`Frame::Packet`] to the fabric with a
//! unicast route to its receiver, and every packet the fabric hands over is
//! fed to the engine as if it came from its sender. So every packet crosses
//! emulated switches and links over real sockets.
//!
//! [`FabricState`] is this transport's [`Links`]; [`join`] starts it, and its
//! reader hands every packet to the intake (`super::intake`) like the
//! mesh's readers do, with model time charged on the way in.
//!
//! # Model time
//! Each packet carries a virtual time in cycles of the fabric's cost model
//! (see `mcast::fabric`). This side models the host and the NI processor
//! ([Sivaram 1998, §6.2] model, exactly as `mcsim run` does); the fabric
//! models the links and switches.
//! * Host send: a message posted when the host clock reads `c` costs the
//!   host `t_hs` (a worm scheme pays it per worm); its packets are DMA'd to
//!   the NI one after another from `c + t_hs` (or when the DMA engine is
//!   free).
//! * NI: one processor for sends and receives: `t_ns` per copy
//!   sent, from when its packet is in NI memory, and `t_nr` per packet
//!   received, from its arrival. The engine's actions are charged in the
//!   order it emits them (FPFS: every child's copy before the host's).
//! * Host receive: a delivered packet is DMA'd to host memory after the
//!   previous one; a message completes `t_hr` after its last packet is in.
//!
//! A message's model latency is its completion here minus the time it was
//! posted at the source; it does not depend on how loaded this machine is.
//! The host clock moves to `c + t_hs` when the host posts and to a
//! message's completion when one arrives (so a rank that waited for a
//! message posts its next one after it, as the causal order requires).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

use super::connect::Conn;
use super::intake::{Host, Intake};
use super::link::{Ambient, Joined, Link, Links};
use super::read::{Rd, ReadFail, Silence};
use super::register;
use crate::algorithm::Medium;
use crate::config::{Config, JobEnv};
use crate::error::Error;
use crate::fabric::Timeline;
use crate::fabric::{packet_prefix, route_kind, FabricHello, FabricWelcome, Frame, FABRIC_VERSION};
use crate::hostni::HostNiCosts;
use crate::inbox::{Inbox, Stamp};
use crate::outq::Out;
use crate::sync::lock;
use crate::wire::{Goodbye, Kind, Member, Packet, Route, HEADER_LEN};
use crate::worms::{Worm, WormSend};

/// The model time of untimed packets (control messages).
pub(crate) const UNTIMED: u64 = 1 << 62;

/// The host's and NI's resources, as timelines: events reach this rank in
/// wall-clock order, and a packet that is earlier in model time than one
/// already handled must not queue behind it (see `mcast::fabric::Timeline`).
#[derive(Debug, Default)]
struct HostClock {
    clock: u64,
    /// Host -> NI DMA of posted messages.
    dma_out: Timeline,
    /// NI -> host DMA of delivered packets.
    dma_in: Timeline,
    /// The NI processor (sends and receives).
    ni: Timeline,
}

/// The link to the fabric and the host's model time.
pub(crate) struct FabricState {
    /// This rank and the job's size.
    me: usize,
    size: usize,
    out: Arc<Out>,
    welcome: FabricWelcome,
    /// The host/NI cost model (the simulator's, `mcast::hostni`).
    costs: HostNiCosts,
    inbox: Arc<Inbox>,
    /// Worm plans on this fabric.
    planner: crate::worms::Planner,
    /// Worm messages this rank must send on once it has them whole:
    /// (kind, root, seq) → the packets so far.
    relay: Mutex<std::collections::HashMap<(u8, u32, u64), Vec<Packet>>>,
    clock: Mutex<HostClock>,
    /// This rank said goodbye: the fabric's close is expected.
    closing: AtomicBool,
}

impl FabricState {
    fn new(job: &JobEnv, out: Arc<Out>, welcome: FabricWelcome, inbox: Arc<Inbox>) -> FabricState {
        FabricState {
            me: job.rank,
            size: job.size,
            out,
            inbox,
            planner: crate::worms::Planner::new(&welcome.spec),
            relay: Mutex::new(std::collections::HashMap::new()),
            costs: HostNiCosts::from(&welcome),
            welcome,
            clock: Mutex::new(HostClock::default()),
            closing: AtomicBool::new(false),
        }
    }

    /// The host posts `m` packets now (of a message first posted at
    /// `post`, or now): the host pays `t_hs`, then DMAs them to the NI.
    fn post_at(&self, m: usize, post: Option<u64>) -> Ambient {
        let mut c = lock(&self.clock);
        let post = post.unwrap_or(c.clock);
        let clock = c.clock;
        let posted = self.costs.post(&mut c.dma_out, clock, m);
        c.clock = posted.host;
        Ambient::Post { posted, post }
    }

    /// A packet's tail reached the NI at `arrival`: when the NI is done
    /// receiving it.
    fn received(&self, arrival: u64) -> u64 {
        let mut c = lock(&self.clock);
        self.costs.receive(&mut c.ni, arrival)
    }

    /// Send `p` into the fabric with the switch route `route` (of kind
    /// `kind`), stamped per `amb`.
    fn send_routed(&self, p: Packet, kind: u8, route: &[u8], amb: Ambient) {
        let (stamp, post) = {
            let mut c = lock(&self.clock);
            let (avail, post) = match amb {
                Ambient::Post { posted, post } => (posted.in_ni(p.header.pkt_idx as usize), post),
                Ambient::Forward { ready, post } => (ready, post),
                // Control messages take no model time: stamped far beyond any
                // data packet, they use no link or NI time a data packet
                // could want.
                Ambient::Idle => (UNTIMED, UNTIMED),
            };
            if avail >= UNTIMED {
                (avail, post)
            } else {
                (self.costs.send(&mut c.ni, avail), post)
            }
        };
        let data_len = HEADER_LEN + p.route.encoded_len() + p.payload.len();
        let mut prefix = BytesMut::new();
        match packet_prefix(&mut prefix, 0, stamp, post, kind, route, data_len) {
            Ok(()) => self.out.send_framed(&prefix, p),
            // The engine never makes a packet this large.
            Err(e) => tracing::error!("cannot frame a packet for the fabric: {e}"),
        }
    }

    /// Send this rank's worms of a message (as its source or as a later
    /// phase's sender): each worm is posted by the host in turn.
    fn send_worms_at(&self, me: usize, plan: &[WormSend], packets: &[Packet], post: Option<u64>) {
        let mut post = post;
        for w in plan.iter().filter(|w| w.sender == me) {
            let amb = self.post_at(packets.len(), post);
            if let Ambient::Post { post: p, .. } = amb {
                post = Some(p);
            }
            for p in packets {
                let mut p = p.clone();
                p.header.source = me as u32;
                self.send_routed(p, w.route_kind, &w.route, amb);
            }
        }
    }

    /// A worm packet arrived (its scheme is `worm`): the copy for this
    /// host (`None` if it is not addressed here), and — once the message
    /// is whole, if the plan makes this rank a later sender — its worms on.
    fn worm_in(
        &self,
        me: usize,
        size: usize,
        worm: Worm,
        p: Packet,
        post: u64,
    ) -> Result<Option<Packet>, String> {
        let h = p.header;
        let Route::List {
            tree,
            covers: members,
        } = &p.route
        else {
            return Err("a worm without a list route".into());
        };
        let (dests, mine): (Vec<usize>, Option<Member>) = match h.kind {
            Kind::Bcast => ((0..size).filter(|&r| r != h.root as usize).collect(), None),
            Kind::Multicast => (
                members[1..].iter().map(|m| m.rank as usize).collect(),
                members[1..].iter().copied().find(|m| m.rank as usize == me),
            ),
            other => return Err(format!("a worm of kind {other:?}")),
        };
        if dests.iter().any(|&d| d >= size) {
            return Err("a worm route names a rank outside the job".into());
        }
        let plan = self
            .planner
            .plan(worm, h.root as usize, &dests)
            .map_err(|e| e.to_string())?;
        if plan.iter().any(|w| w.sender == me) {
            let key = (h.kind as u8, h.root, h.seq);
            let whole = {
                let mut relay = lock(&self.relay);
                let v = relay.entry(key).or_default();
                v.push(p.clone());
                if v.len() >= h.pkt_count as usize {
                    relay.remove(&key)
                } else {
                    None
                }
            };
            if let Some(mut packets) = whole {
                packets.sort_by_key(|p| p.header.pkt_idx);
                self.send_worms_at(me, &plan, &packets, Some(post));
            }
        }
        Ok(match h.kind {
            Kind::Multicast => mine.map(|m| Packet {
                header: h,
                route: Route::List {
                    tree: *tree,
                    covers: vec![m],
                },
                payload: p.payload,
            }),
            _ => Some(p),
        })
    }

    /// A packet the NI finished receiving at `ready` was delivered to the
    /// host: its DMA to host memory, and the model time of its message.
    fn delivered(&self, ready: u64, post: u64) -> Stamp {
        let mut c = lock(&self.clock);
        let in_host = self.costs.to_host(&mut c.dma_in, ready);
        let done = self.costs.complete(in_host);
        c.clock = c.clock.max(done);
        Stamp { done, post }
    }
}

impl Links for FabricState {
    /// Send `p` to rank `to` through the fabric, stamped per `amb`.
    fn send(&self, to: usize, p: Packet, amb: Ambient) {
        self.send_routed(p, route_kind::UNICAST, &(to as u32).to_le_bytes(), amb);
    }

    fn flushed(&self) -> bool {
        self.out.is_flushed()
    }

    fn close(&self, bye: &Goodbye) {
        self.closing.store(true, Ordering::Release);
        self.out.close(frame(Frame::Bye {
            rank: self.me as u32,
            goodbye: bye.clone(),
        }));
    }

    /// The one link to the fabric carries every peer: when it breaks, the
    /// whole job is unreachable (the fabric reports a lost rank itself).
    fn broken(&self, _link: usize, why: String) {
        if self.closing.load(Ordering::Acquire) {
            return;
        }
        self.inbox.fatal(Error::Stopped(format!(
            "lost the link to the switch fabric: {why}"
        )));
    }

    fn post(&self, packets: usize) -> Ambient {
        self.post_at(packets, None)
    }

    fn stamp(&self, amb: Ambient) -> Option<Stamp> {
        match amb {
            Ambient::Forward { ready, post } => Some(self.delivered(ready, post)),
            _ => None,
        }
    }

    fn worm_plan(
        &self,
        worm: Worm,
        me: usize,
        dests: &[usize],
    ) -> Result<Arc<Vec<WormSend>>, Error> {
        self.planner.plan(worm, me, dests)
    }

    fn send_worms(&self, me: usize, plan: &[WormSend], packets: &[Packet]) {
        self.send_worms_at(me, plan, packets, None);
    }

    fn carries(&self, worm: Worm) -> bool {
        self.planner.supports(worm)
    }

    fn welcome(&self) -> Option<&FabricWelcome> {
        Some(&self.welcome)
    }

    /// Model cycles as a duration.
    fn cycle_ps(&self) -> Option<u64> {
        Some((self.welcome.cycle_ns * 1000.0).round().max(0.0) as u64)
    }
}

/// Fabric mode: connect to host port `addr` of the emulated switch fabric,
/// then join the job; `connect` starts the reader. Every packet goes
/// through the fabric.
pub(crate) fn join<'a>(
    cfg: &'a Config,
    job: &'a JobEnv,
    inbox: &Arc<Inbox>,
    rt: &Runtime,
    addr: &str,
) -> Result<Joined<'a>, Error> {
    // Join the fabric first: the rendezvous completes only when every
    // rank has said hello, so by then every rank has its host port and
    // no packet can reach a port nobody listens on yet.
    let (stream, welcome) = rt.block_on(connect(addr, &job.token, job.rank, cfg.timeout))?;
    let guard = rt.enter();
    let (rd, half) = Conn::Tcp(stream).split();
    let out = Arc::new(Out::new(usize::MAX, half, None));
    let beat = (cfg.failure_timeout / 4).max(Duration::from_millis(10));
    // Heartbeats while the other ranks join, so the fabric does not
    // take this rank for a silent one.
    let heartbeat = frame(Frame::Heartbeat);
    let writer = rt.spawn(out.clone().run(inbox.clone(), heartbeat, beat));
    drop(guard);
    let reach = format!("fabric={addr}");
    let tls = register::rendezvous_identity(cfg, job)?;
    let (job_id, _) = rt.block_on(async {
        let (job, reach, timeout) = (job.clone(), reach.clone(), cfg.timeout);
        tokio::task::spawn_blocking(move || {
            register::rendezvous(&job, &reach, timeout, tls.as_ref())
        })
        .await
        .map_err(|e| Error::Stopped(format!("rendezvous task: {e}")))?
    })?;
    let packets = crate::engine::PacketSize::uniform(welcome.packet_bytes as usize);
    // Topology-aware trees map rank i to node i of a direct fabric.
    let topology = cfg
        .topology
        .clone()
        .or_else(|| welcome.spec.parse::<mcast_algorithms::Topology>().ok());
    let fabric = Arc::new(FabricState::new(job, out, welcome, inbox.clone()));
    let links = fabric.clone();
    let size = job.size;
    // The fabric beats every quarter of its own bound.
    let within = cfg.failure_timeout.mul_f64(0.9);
    Ok(Joined {
        job: job_id,
        medium: Medium::Network,
        hosts: None,
        packets,
        data_addr: addr.to_string(),
        topology,
        links,
        tasks: vec![writer],
        poller: None,
        connect: Box::new(move |rt: &Runtime, host: Arc<dyn Host>| {
            let intake = Intake::new(host, job_id, size, job.rank);
            let _guard = rt.enter();
            rt.spawn(reader(rd, fabric, intake, size, within));
            let kinds = (0..size)
                .map(|r| (r != job.rank).then_some(Link::Fabric))
                .collect();
            Ok((kinds, Vec::new()))
        }),
    })
}

/// Connect to host port `addr` as `rank` of the job with `token`; returns
/// the stream and the fabric's welcome.
async fn connect(
    addr: &str,
    token: &str,
    rank: usize,
    timeout: Duration,
) -> Result<(TcpStream, FabricWelcome), Error> {
    let io = |what: &str, e: std::io::Error| {
        Error::Io(std::io::Error::new(
            e.kind(),
            format!("fabric host port {addr}: {what}: {e}"),
        ))
    };
    let fut = async {
        let mut s = TcpStream::connect(addr)
            .await
            .map_err(|e| io("connecting", e))?;
        s.set_nodelay(true).map_err(|e| io("TCP_NODELAY", e))?;
        let hello = Frame::Hello(FabricHello {
            version: FABRIC_VERSION,
            token: token.to_string(),
            rank: rank as u32,
        });
        let b = hello
            .to_bytes()
            .map_err(|e| Error::Protocol(e.to_string()))?;
        s.write_all(&b).await.map_err(|e| io("sending hello", e))?;
        match Frame::read(&mut s)
            .await
            .map_err(|e| io("reading welcome", e))?
        {
            Frame::Welcome(w) if w.version == FABRIC_VERSION && w.node as usize == rank => {
                if w.packet_bytes == 0
                    || w.packet_bytes as usize > crate::config::MAX_PACKET_BYTES
                    || !(w.cycle_ns.is_finite() && w.cycle_ns > 0.0)
                {
                    return Err(Error::Protocol(format!(
                        "fabric at {addr} announced packets of {} bytes and cycles of {} ns",
                        w.packet_bytes, w.cycle_ns
                    )));
                }
                Ok((s, w))
            }
            Frame::Welcome(w) => Err(Error::Protocol(format!(
                "fabric at {addr} welcomed rank {rank} as node {} with protocol version {} \
                 (this rank speaks {FABRIC_VERSION})",
                w.node, w.version
            ))),
            Frame::Refused(why) => Err(Error::Protocol(format!(
                "fabric at {addr} refused rank {rank}: {why}"
            ))),
            other => Err(Error::Protocol(format!(
                "fabric at {addr} answered the hello with {other:?}"
            ))),
        }
    };
    tokio::time::timeout(timeout, fut)
        .await
        .map_err(|_| Error::Timeout {
            op: "joining the fabric".into(),
            after: timeout,
            detail: format!("host port {addr}, rank {rank}"),
        })?
}

/// An encoded fabric frame without a body (goodbye, heartbeat).
fn frame(f: Frame) -> bytes::Bytes {
    f.to_bytes().unwrap_or_default()
}

/// Read buffer of the fabric link.
const READ_BUFFER: usize = 64 * 1024;

/// Read frames from the fabric until it closes; each packet goes through
/// `intake` as if it came from its sender.
async fn reader(rd: Rd, fabric: Arc<FabricState>, intake: Intake, size: usize, within: Duration) {
    let mut r = BufReader::with_capacity(READ_BUFFER, rd);
    let mut silence = Silence::new(within);
    let broken = |why: String| fabric.broken(0, why);
    let inbox = intake.inbox();
    loop {
        let frame = match silence.guard(Frame::read(&mut r)).await {
            Ok(f) => f,
            Err(ReadFail::Silent) => {
                return broken(format!("the fabric was silent for {within:?}"))
            }
            Err(ReadFail::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return broken("the fabric closed the connection".into())
            }
            Err(ReadFail::Io(e)) => return broken(e.to_string()),
        };
        silence.heard();
        match frame {
            Frame::Packet {
                stamp, post, data, ..
            } => {
                let p = match Packet::decode(&data) {
                    Ok(p) => p,
                    Err(e) => return broken(format!("malformed packet from the fabric: {e}")),
                };
                let from = match intake.check(&p.header, None) {
                    Ok(from) => from,
                    Err(e) => return broken(e),
                };
                let data =
                    |host: &dyn Host, p: Packet| packet_in(&fabric, host, from, p, stamp, post);
                if let Err(e) = intake.dispatch(from, p, data) {
                    let why = format!("protocol violation: {e}");
                    inbox.lost(from, why);
                }
            }
            // The fabric declared this rank lost (it was stopped, say):
            // it is cut off, and its next call says why.
            Frame::Lost { rank, reason } if rank as usize == fabric.me => {
                inbox.fatal(super::intake::expelled("the fabric", &reason));
            }
            Frame::Lost { rank, reason } if (rank as usize) < size => {
                let why = format!("{reason} (reported by the fabric)");
                inbox.lost(rank as usize, why);
            }
            Frame::Bye { rank, goodbye } if (rank as usize) < size => {
                intake.goodbye(rank as usize, goodbye)
            }
            Frame::Heartbeat => {}
            Frame::Refused(why) => return broken(format!("refused: {why}")),
            other => return broken(format!("unexpected frame {other:?}")),
        }
    }
}

/// Data packet `p` from rank `from` reached this NI at `arrival` (model
/// time) for a message posted at `post`: the NI receives it, then it is a
/// worm's copy for this host or goes to the engine.
fn packet_in(
    f: &FabricState,
    host: &dyn Host,
    from: usize,
    p: Packet,
    arrival: u64,
    post: u64,
) -> Result<(), String> {
    let ready = f.received(arrival);
    if let Some(worm) = Worm::of_route(&p.route) {
        let got = worm
            .map_err(|e| e.to_string())
            .and_then(|w| f.worm_in(f.me, f.size, w, p, post));
        return match got {
            Ok(Some(p)) => {
                host.deliver(p, Some(f.delivered(ready, post)));
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(format!("bad worm packet: {e}")),
        };
    }
    host.engine_in(from, p, Ambient::Forward { ready, post })
        .map_err(|e| format!("bad packet through the fabric: {e}"))
}
