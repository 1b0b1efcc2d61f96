//! Fabric mode: the rank's one link to its host port of an emulated switch
//! fabric (`mclaunch --fabric SPEC`), and the host's part of the cost model.
//!
//! The NI engine runs as in direct mode; only where its packets go changes.
//! Every copy it sends becomes a [`Frame::Packet`] to the fabric with a
//! unicast route to its receiver, and every packet the fabric hands over is
//! fed to the engine as if it came from its sender. So every packet crosses
//! emulated switches and links over real sockets.
//!
//! # Model time
//! Each packet carries a virtual time in cycles of the fabric's cost model
//! (see `mcast::fabric`). This side models the host and the NI processor
//! (the digest-000 §2.5 model, exactly as `mcsim run` does); the fabric
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

use crate::error::Error;
use crate::fabric::Timeline;
use crate::fabric::{packet_prefix, route_kind, FabricHello, FabricWelcome, Frame, FABRIC_VERSION};
use crate::inbox::Stamp;
use crate::outq::Out;
use crate::wire::{Kind, Member, Packet, Route, HEADER_LEN};
use crate::worms::{Worm, WormSend};

/// The model time of untimed packets (control messages).
pub(crate) const UNTIMED: u64 = 1 << 62;

/// When the packets of one engine call are ready, in model time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ambient {
    /// The host posted a message at `post`; its packet j is in NI memory
    /// at `start + (j+1)·dma`.
    Post { start: u64, post: u64 },
    /// The NI received a packet (ready at `ready`) of a message posted at
    /// `post`; what the engine does now is in answer to it.
    Forward { ready: u64, post: u64 },
    /// Nothing timed (control messages, direct mode).
    Idle,
}

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
    pub(crate) out: Arc<Out>,
    pub(crate) welcome: FabricWelcome,
    /// Worm plans on this fabric.
    pub(crate) planner: crate::worms::Planner,
    /// Worm messages this rank must send on once it has them whole:
    /// (kind, root, seq) → the packets so far.
    relay: Mutex<std::collections::HashMap<(u8, u32, u64), Vec<Packet>>>,
    clock: Mutex<HostClock>,
    /// This rank said goodbye: the fabric's close is expected.
    pub(crate) closing: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl FabricState {
    pub(crate) fn new(out: Arc<Out>, welcome: FabricWelcome) -> FabricState {
        FabricState {
            out,
            planner: crate::worms::Planner::new(&welcome.spec),
            relay: Mutex::new(std::collections::HashMap::new()),
            welcome,
            clock: Mutex::new(HostClock::default()),
            closing: AtomicBool::new(false),
        }
    }

    /// The host posts `m` packets now (of a message first posted at
    /// `post`, or now): the host pays `t_hs`, then DMAs them to the NI.
    pub(crate) fn post(&self, m: usize, post: Option<u64>) -> Ambient {
        let w = &self.welcome;
        let mut c = lock(&self.clock);
        let post = post.unwrap_or(c.clock);
        let h = c.clock + w.t_hs;
        let dur = m as u64 * w.dma;
        let start = c.dma_out.take(h, dur) - dur;
        c.clock = h;
        Ambient::Post { start, post }
    }

    /// A packet's tail reached the NI at `arrival`: when the NI is done
    /// receiving it.
    pub(crate) fn received(&self, arrival: u64) -> u64 {
        let mut c = lock(&self.clock);
        c.ni.take(arrival, self.welcome.t_nr)
    }

    /// Send `p` to rank `to` through the fabric, stamped per `amb`.
    pub(crate) fn send(&self, to: usize, p: Packet, amb: Ambient) {
        self.send_routed(p, route_kind::UNICAST, &(to as u32).to_le_bytes(), amb);
    }

    /// Send `p` into the fabric with the switch route `route` (of kind
    /// `kind`), stamped per `amb`.
    pub(crate) fn send_routed(&self, p: Packet, kind: u8, route: &[u8], amb: Ambient) {
        let w = &self.welcome;
        let (stamp, post) = {
            let mut c = lock(&self.clock);
            let (avail, post) = match amb {
                Ambient::Post { start, post } => {
                    (start + (u64::from(p.header.pkt_idx) + 1) * w.dma, post)
                }
                Ambient::Forward { ready, post } => (ready, post),
                // Control messages take no model time: stamped far beyond any
                // data packet, they use no link or NI time a data packet
                // could want.
                Ambient::Idle => (UNTIMED, UNTIMED),
            };
            if avail >= UNTIMED {
                (avail, post)
            } else {
                (c.ni.take(avail, w.t_ns), post)
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
    pub(crate) fn send_worms(
        &self,
        me: usize,
        plan: &[WormSend],
        packets: &[Packet],
        post: Option<u64>,
    ) {
        let mut post = post;
        for w in plan.iter().filter(|w| w.sender == me) {
            let amb = self.post(packets.len(), post);
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
    pub(crate) fn worm_in(
        &self,
        me: usize,
        size: usize,
        worm: Worm,
        p: Packet,
        post: u64,
    ) -> Result<Option<Packet>, String> {
        let h = p.header;
        let Route::List { tree, members } = &p.route else {
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
                self.send_worms(me, &plan, &packets, Some(post));
            }
        }
        Ok(match h.kind {
            Kind::Multicast => mine.map(|m| Packet {
                header: h,
                route: Route::List {
                    tree: *tree,
                    members: vec![m],
                },
                payload: p.payload,
            }),
            _ => Some(p),
        })
    }

    /// A packet the NI finished receiving at `ready` was delivered to the
    /// host: its DMA to host memory, and the model time of its message.
    pub(crate) fn delivered(&self, ready: u64, post: u64) -> Stamp {
        let w = &self.welcome;
        let mut c = lock(&self.clock);
        let in_host = c.dma_in.take(ready, w.dma);
        let done = in_host + w.t_hr;
        c.clock = c.clock.max(done);
        Stamp { done, post }
    }

    /// Model cycles as a duration.
    pub(crate) fn cycle_ps(&self) -> u64 {
        (self.welcome.cycle_ns * 1000.0).round().max(0.0) as u64
    }
}

/// Connect to host port `addr` as `rank` of the job with `token`; returns
/// the stream and the fabric's welcome.
pub(crate) async fn connect(
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

/// The encoded goodbye and heartbeat frames of `rank`.
pub(crate) fn bye(rank: usize) -> bytes::Bytes {
    Frame::Bye { rank: rank as u32 }
        .to_bytes()
        .unwrap_or_default()
}

/// The encoded heartbeat frame.
pub(crate) fn heartbeat() -> bytes::Bytes {
    Frame::Heartbeat.to_bytes().unwrap_or_default()
}

/// Read buffer of the fabric link.
const READ_BUFFER: usize = 64 * 1024;

/// Read frames from the fabric until it closes; `handle` gets each packet
/// (sender rank, packet, ready, post).
pub(crate) async fn reader(
    rd: crate::net::Rd,
    fabric: Arc<FabricState>,
    inbox: Arc<crate::inbox::Inbox>,
    size: usize,
    job: u32,
    within: Duration,
    mut handle: impl FnMut(usize, Packet, u64, u64),
) {
    let mut r = BufReader::with_capacity(READ_BUFFER, rd);
    let mut silence = crate::net::Silence::new(within);
    let broken = |why: String| {
        if fabric.closing.load(Ordering::Acquire) {
            return;
        }
        inbox.fatal(Error::Stopped(format!(
            "lost the link to the switch fabric: {why}"
        )));
    };
    loop {
        let frame = match silence.guard(Frame::read(&mut r)).await {
            Ok(f) => f,
            Err(crate::net::ReadFail::Silent) => {
                return broken(format!("the fabric was silent for {within:?}"))
            }
            Err(crate::net::ReadFail::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return broken("the fabric closed the connection".into())
            }
            Err(crate::net::ReadFail::Io(e)) => return broken(e.to_string()),
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
                let from = p.header.source as usize;
                if p.header.job != job || from >= size {
                    return broken(format!(
                        "a packet of job {:#x} from rank {from} (this is job {job:#x} of {size} ranks)",
                        p.header.job
                    ));
                }
                handle(from, p, stamp, post);
            }
            Frame::Lost { rank, reason } if (rank as usize) < size => {
                inbox.lost(rank as usize, format!("{reason} (reported by the fabric)"));
            }
            Frame::Bye { rank } if (rank as usize) < size => inbox.mark_bye(rank as usize),
            Frame::Heartbeat => {}
            Frame::Refused(why) => return broken(format!("refused: {why}")),
            other => return broken(format!("unexpected frame {other:?}")),
        }
    }
}
