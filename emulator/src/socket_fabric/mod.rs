//! The socket fabric: the emulated switch fabric that real ranks talk
//! through over real sockets (`mclaunch --fabric`).
//!
//! [`FabricServer::start`] parses a fabric spec (the simulator's grammar,
//! [`crate::sim::spec::SimFabric::parse`], with optional `@key=value`
//! cost knobs), opens one loopback TCP listener per host port `0..ranks`
//! ([`FabricServer::host_addrs`]) and runs every switch of the fabric as
//! its own tokio task, each driving one sans-IO
//! [`crate::switch::SwitchEngine`]. Everything runs on one dedicated thread
//! (a current-thread runtime with a `LocalSet`).
//!
//! # Links
//! * **Host ports** speak the frames of [`mcast::fabric`]: a rank connects
//!   to its port, sends `Hello`, gets `Welcome` (or `Refused` and the
//!   connection is closed: wrong version, token, rank ≠ port, or the port
//!   already has a live connection), then sends and receives `Packet` frames.
//! * **Every switch-to-switch link is a real socket**: one
//!   `tokio::net::UnixStream::pair()` per directed link (output port of the
//!   upstream switch → input port of the downstream one), carrying
//!   `Frame::Packet` downstream (`stamp` = head arrival at the downstream
//!   switch, `vc` = the downstream VC, `route` = the header state in a
//!   private route kind, see [`route`]) and `Frame::Credit` upstream (`at` =
//!   when the credits are usable upstream).
//! * The injection and ejection links between a host's NI and its switch
//!   are in-process channels (the NI model needs the send and receive sides
//!   of a host in one place; on a MIN they attach to different switches).
//!
//! # Timing (the simulator's, [`crate::sim::Net`])
//! * The NI processor (t_ns per copy sent, t_nr per packet received, one
//!   `ni_free` for both) is modelled by the rank (`mcast`'s fabric mode),
//!   because the rank's NI engine decides what it forwards and in which
//!   order: a packet of a rank enters the injection queue at its `stamp`
//!   (the NI is done with it), and a delivered packet's `stamp` is its
//!   arrival at the NI. (Modelled here, the NI would see a forward only
//!   when the rank's copy comes back over the socket, after packets that
//!   arrived later in model time: the order would depend on the machine.)
//! * NI send: a rank's packet is queued at `stamp` for the injection link, which holds `ser` cycles per packet and needs a
//!   VC with credits for a whole packet towards the switch's input buffer
//!   (round-robin over the VCs); the head reaches the switch `t_r` later.
//! * Switch → switch: a `Send` at `at` reaches the next switch at
//!   `at + t_w`, handed to its engine at `at + t_w + t_r`; credits are
//!   usable upstream at `at + credit_delay`.
//! * Delivery: a `Deliver` at `at` reaches the host's NI at
//!   `at + t_w + ser`, the `stamp` of the packet the rank receives (`route_kind` UNICAST, empty route, `post`
//!   and data unchanged).
//!
//! # Virtual time
//! Events are processed in wall-clock arrival order, each carrying its
//! virtual time. After a batch of external events (frames in), a switch
//! runs its engine to quiescence: the batch and every timer the engine arms
//! go through one min-heap in virtual-time order until it is empty — no
//! waiting in wall time. Because events come in wall-clock order, the
//! engines run with [`crate::switch::SwitchEngine::set_backfill`]: each
//! link keeps its reservations in virtual time and a packet takes the
//! first gap at or after its routing, heads are routed at their own
//! arrival plus t_r, and credits count buffer space without a time. So a
//! packet that is later in virtual time but got to a switch first does not
//! delay earlier ones, and the model time is **exact** whenever uses of a
//! link do not truly overlap in virtual time (a unicast, a worm, one bcast
//! in an idle fabric: the delivered stamps equal the simulator's). When
//! they do overlap, the first in wall time wins; waiting for buffer space
//! costs no virtual time (the buffers still bound the fabric in wall time).
//!
//! # Payloads
//! The engines only see `SwitchPacket { id, header }`. Each switch keeps the
//! payload (`post`, data, origin host) by id, and a FIFO of ids per input
//! VC; the engine's `Credit` action for an input VC means its front packet
//! has sent every branch (or was dropped), so the payload is freed then.
//!
//! # Liveness
//! A rank whose connection ends without `Bye`, that sends a malformed
//! frame, or that sends nothing (packets or heartbeats) for 90% of the
//! failure timeout is lost: every other connected rank gets
//! `Frame::Lost { rank, reason }`, and so does the lost rank itself (a
//! stopped rank that resumes learns it was cut off). A rank's `Bye`, with
//! its goodbye (finalized, or departed without finalize at a collective),
//! is forwarded to every
//! other rank once every packet it sent before the `Bye` has been injected
//! and delivered (or dropped). The fabric sends `Heartbeat` on a rank link
//! that has been idle for a quarter of the failure timeout. While a rank's
//! injection queue holds more than [`MAX_QUEUED`] packets the fabric stops
//! reading its socket (TCP backpressure).

mod host;
pub mod route;
mod switch;
mod wiring;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcast::fabric::{FabricWelcome, FABRIC_VERSION};
use tokio::sync::mpsc;

use crate::cost::FabricCostModel;
use crate::sim::spec::{split_spec, SimFabric};
use crate::switch::{PortLink, Routing, SwitchHeader, SwitchParams, Time};
use route::FabricKind;

/// Packets a rank's injection queue may hold before the fabric stops
/// reading its socket.
pub const MAX_QUEUED: usize = 1024;

/// Why the fabric did not start.
#[derive(Debug, thiserror::Error)]
pub enum FabricError {
    /// The spec or a cost knob is bad.
    #[error("fabric spec: {0}")]
    Spec(String),
    /// More ranks than the fabric has hosts.
    #[error("{ranks} ranks but the fabric `{spec}` has only {nodes} hosts")]
    TooManyRanks {
        /// Ranks asked for.
        ranks: usize,
        /// Hosts of the fabric.
        nodes: usize,
        /// The spec.
        spec: String,
    },
    /// A zero failure timeout.
    #[error("the failure timeout must be positive")]
    Timeout,
    /// Sockets or the runtime could not be set up.
    #[error("fabric setup: {0}")]
    Io(#[from] std::io::Error),
    /// The fabric thread failed while starting.
    #[error("fabric thread: {0}")]
    Thread(String),
}

/// Counters of a running fabric.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FabricStats {
    /// Packets injected into the fabric by ranks.
    pub injected: u64,
    /// Packets delivered to ranks.
    pub delivered: u64,
    /// Data bytes delivered to ranks.
    pub bytes_delivered: u64,
    /// Packet-hops: copies sent on a switch output (links and ejection).
    pub hops: u64,
    /// Packets dropped, all causes (the sum of the three below).
    pub dropped: u64,
    /// Packets whose route the fabric could not use (dropped at the NI).
    pub dropped_route: u64,
    /// Packets a switch could not route.
    pub dropped_switch: u64,
    /// Deliveries to host ports with no connected rank.
    pub dropped_unconnected: u64,
    /// Ranks reported lost.
    pub lost: u64,
    /// Packet copies inside the fabric now (in switch buffers, on links,
    /// or on their way to a host's NI); 0 when the fabric is idle.
    pub in_fabric: u64,
}

#[derive(Debug, Default)]
struct Counters {
    injected: AtomicU64,
    delivered: AtomicU64,
    bytes_delivered: AtomicU64,
    hops: AtomicU64,
    dropped_route: AtomicU64,
    dropped_switch: AtomicU64,
    dropped_unconnected: AtomicU64,
    lost: AtomicU64,
    in_fabric: AtomicU64,
}

impl Counters {
    fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
    fn snapshot(&self) -> FabricStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (r, s, u) = (
            g(&self.dropped_route),
            g(&self.dropped_switch),
            g(&self.dropped_unconnected),
        );
        FabricStats {
            injected: g(&self.injected),
            delivered: g(&self.delivered),
            bytes_delivered: g(&self.bytes_delivered),
            hops: g(&self.hops),
            dropped: r + s + u,
            dropped_route: r,
            dropped_switch: s,
            dropped_unconnected: u,
            lost: g(&self.lost),
            in_fabric: g(&self.in_fabric),
        }
    }
}

/// An event for a switch task.
#[derive(Debug)]
enum SwEv {
    /// A head arrived on input `port`, VC `vc`, at `arrived`.
    SwitchPacket {
        port: u16,
        vc: u16,
        arrived: Time,
        header: SwitchHeader,
        payload: Payload,
    },
    /// Credits for output `port`, VC `vc`, usable from `at`.
    Credit {
        port: u16,
        vc: u16,
        flits: u32,
        at: Time,
    },
}

/// What the engines do not see.
#[derive(Debug, Clone)]
struct Payload {
    origin: u32,
    post: u64,
    data: Bytes,
}

/// An event for a host's NI task from the fabric side.
#[derive(Debug)]
enum HostEv {
    /// Credits for the injection link, usable from `at`.
    Credit { vc: u16, flits: u32, at: Time },
    /// A packet's tail reached the NI at `at`.
    Deliver { at: Time, payload: Payload },
}

/// An event for a host's NI task from its rank.
#[derive(Debug)]
enum RankEv {
    SwitchPacket {
        stamp: u64,
        post: u64,
        kind: u8,
        route: Bytes,
        data: Bytes,
    },
    Bye(mcast::fabric::Goodbye),
}

/// Immutable configuration every task shares.
struct Ctx {
    routing: Arc<dyn Routing>,
    params: SwitchParams,
    t_w: Time,
    credit_delay: Time,
    nodes: usize,
    ranks: usize,
    kind: FabricKind,
    token: String,
    failure_timeout: Duration,
    welcome: FabricWelcome,
    ports: usize,
    /// `switch * ports + port`: where an output port leads.
    links: Vec<PortLink>,
    /// `switch * ports + port`: who feeds an input port.
    ups: Vec<PortLink>,
    counters: Arc<Counters>,
}

/// Per-host mutable state shared by the tasks (all on one thread).
#[derive(Default)]
struct HostShared {
    /// The connected rank's outgoing frames.
    writer: Option<mpsc::UnboundedSender<Bytes>>,
    /// Packet copies from this host still in the fabric.
    inflight: u64,
    /// Packets in this host's injection queue.
    queued: usize,
    /// A `Bye` (with its goodbye) waits for the host's packets to leave
    /// the fabric.
    bye_pending: Option<mcast::fabric::Goodbye>,
}

struct Shared {
    hosts: Vec<HostShared>,
    counters: Arc<Counters>,
}

type SharedRc = Rc<RefCell<Shared>>;

impl Shared {
    /// Send `frame` to every connected rank but `except`.
    fn broadcast(&self, except: usize, frame: &mcast::fabric::Frame) {
        let Ok(bytes) = frame.to_bytes() else {
            return;
        };
        for (i, h) in self.hosts.iter().enumerate() {
            if i != except {
                if let Some(w) = &h.writer {
                    let _ = w.send(bytes.clone());
                }
            }
        }
    }

    /// A copy from `origin` left the fabric.
    fn left(&mut self, origin: u32) {
        if let Some(h) = self.hosts.get_mut(origin as usize) {
            if h.inflight > 0 {
                h.inflight -= 1;
                self.counters.in_fabric.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.try_bye(origin as usize);
    }

    fn entered(&mut self, origin: u32) {
        if let Some(h) = self.hosts.get_mut(origin as usize) {
            h.inflight += 1;
            Counters::add(&self.counters.in_fabric, 1);
        }
    }

    /// Forward host `i`'s pending `Bye` once its packets have left.
    fn try_bye(&mut self, i: usize) {
        let Some(h) = self.hosts.get_mut(i) else {
            return;
        };
        if h.bye_pending.is_some() && h.queued == 0 && h.inflight == 0 {
            if let Some(goodbye) = h.bye_pending.take() {
                let bye = mcast::fabric::Frame::Bye {
                    rank: i as u32,
                    goodbye,
                };
                self.broadcast(i, &bye);
            }
        }
    }
}

/// A running socket fabric. Dropping it shuts it down.
pub struct FabricServer {
    host_addrs: Vec<String>,
    nodes: usize,
    counters: Arc<Counters>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for FabricServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FabricServer")
            .field("host_addrs", &self.host_addrs)
            .finish()
    }
}

impl FabricServer {
    /// Start the fabric `spec` (e.g. `torus:4x4`, `torus:4x4:uni`,
    /// `mesh:4x4`, `hypercube:4`, `irregular:...`, `min:5`, `crossbar:8`,
    /// optionally followed by `@key=value,...` cost knobs applied to
    /// `cost`), with host ports `0..ranks` listening on loopback TCP; ranks
    /// must present `token`. A rank silent for 90% of `failure_timeout` is
    /// reported lost.
    ///
    /// # Errors
    /// [`FabricError`]: a bad spec or cost model, more ranks than hosts, a
    /// zero timeout, or sockets that cannot be opened.
    pub fn start(
        spec: &str,
        mut cost: FabricCostModel,
        token: String,
        ranks: usize,
        failure_timeout: Duration,
    ) -> Result<FabricServer, FabricError> {
        if failure_timeout.is_zero() {
            return Err(FabricError::Timeout);
        }
        let bare = split_spec(spec, &mut cost)
            .map_err(|e| FabricError::Spec(e.to_string()))?
            .trim()
            .to_string();
        cost.validate()
            .map_err(|e| FabricError::Spec(format!("cost model: {e}")))?;
        let fabric =
            SimFabric::parse(&bare, cost.dateline).map_err(|e| FabricError::Spec(e.to_string()))?;
        let routing = fabric.routing();
        let nodes = routing.nodes();
        if ranks > nodes {
            return Err(FabricError::TooManyRanks {
                ranks,
                nodes,
                spec: bare,
            });
        }
        let kind = match &fabric {
            SimFabric::Direct(_) => FabricKind::Direct,
            SimFabric::Irregular(_) => FabricKind::Irregular,
            SimFabric::Crossbar(_) => FabricKind::Crossbar,
            SimFabric::Min(m) => FabricKind::Min(m.net().stages()),
        };
        let params =
            SwitchParams::from_cost(&cost, routing.vc_classes()).map_err(FabricError::Spec)?;
        let to_u32 = |x: u64, what: &str| {
            u32::try_from(x).map_err(|_| FabricError::Spec(format!("{what} = {x} is too large")))
        };
        let packet_bytes = to_u32(
            cost.packet_flits.saturating_mul(cost.flit_bytes),
            "packet bytes",
        )?;
        let ports = routing.ports();
        if ports > usize::from(u16::MAX) {
            return Err(FabricError::Spec(format!("{ports} ports per switch")));
        }
        let (links, ups) = crate::switch::link_tables(routing.as_ref());
        let welcome = FabricWelcome {
            version: FABRIC_VERSION,
            node: 0,
            nodes: nodes as u32,
            spec: bare.clone(),
            cycle_ns: cost.cycle_ns,
            t_hs: cost.t_hs,
            t_hr: cost.t_hr,
            dma: cost.dma_cycles(),
            t_ns: cost.t_ns,
            t_nr: cost.t_nr,
            packet_bytes,
        };
        let counters = Arc::new(Counters::default());
        let ctx = Ctx {
            routing,
            params,
            t_w: cost.link_delay,
            credit_delay: cost.credit_delay,
            nodes,
            ranks,
            kind,
            token,
            failure_timeout,
            welcome,
            ports,
            links,
            ups,
            counters: counters.clone(),
        };
        // Listeners are bound here, so the addresses are known on return.
        let mut listeners = Vec::with_capacity(ranks);
        let mut host_addrs = Vec::with_capacity(ranks);
        for _ in 0..ranks {
            let l = std::net::TcpListener::bind("127.0.0.1:0")?;
            l.set_nonblocking(true)?;
            host_addrs.push(l.local_addr()?.to_string());
            listeners.push(l);
        }
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("mcast-fabric".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("runtime: {e}")));
                        return;
                    }
                };
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, async move {
                    match wiring::run(ctx, listeners).await {
                        Ok(()) => {
                            let _ = ready_tx.send(Ok(()));
                            let _ = stop_rx.await;
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                        }
                    }
                });
                // Dropping the LocalSet and the runtime ends every task and
                // closes every socket.
                drop(local);
                drop(rt);
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(FabricServer {
                host_addrs,
                nodes,
                counters,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(FabricError::Thread(e))
            }
            Err(_) => {
                let _ = thread.join();
                Err(FabricError::Thread("the fabric thread died".into()))
            }
        }
    }

    /// `127.0.0.1:PORT` of host port `i`, for `i` in `0..ranks`.
    pub fn host_addrs(&self) -> &[String] {
        &self.host_addrs
    }

    /// Host ports of the fabric (the ranks may be fewer).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The counters so far.
    pub fn stats(&self) -> FabricStats {
        self.counters.snapshot()
    }

    /// Stop every task, close every socket and join the fabric thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FabricServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}
