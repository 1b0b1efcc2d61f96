//! The tokio driver of the NI engine: the engine, its commands from the host,
//! and the links that carry its packets.
//!
//! The NI lives in one current-thread tokio runtime: the engine, the links'
//! reader and writer tasks, and (on a socket mesh) the gatekeeper. Which
//! thread drives that runtime is `drive`'s business: the host while it waits
//! in mcast, a background thread while the host is away. Nothing busy-spins
//! for long: a waiting host polls for `MCAST_SPIN_US`, then sleeps in epoll,
//! so ranks may outnumber cores.
//!
//! Layout:
//! * `link` — the transport seam ([`Links`](link::Links)) and what starting
//!   a transport yields;
//! * `intake` — the one intake of every incoming packet (checked once, then
//!   heartbeat, goodbye, control or data), and the Heartbeat/Bye packets;
//! * `read` — framing on a byte stream, silence timers, payload reads;
//! * `register` — learning the job: the rendezvous (over TLS under QUIC)
//!   or PMI-2;
//! * `connect` — mesh set-up and handshake screening;
//! * `mesh` — transport: TCP and Unix-domain sockets, one per peer, with
//!   the host's shared-memory arenas;
//! * `fablink` — transport: one link to an emulated switch fabric, and the
//!   host's part of its cost model.
//!
//! Only this file knows the engine; the transports reach it through
//! `intake::Host`, so no transport imports the driver.

mod connect;
mod fablink;
mod inline;
mod intake;
mod lend;
mod link;
mod mesh;
mod netpoll;
mod quicmesh;
mod read;
mod register;
mod rings;
mod tcprx;

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::algorithm::{Medium, TreeKind};
use crate::config::{Config, JobEnv};
use crate::control::Control;
use crate::drive::Drive;
use crate::engine::{Action, NiEngine};
use crate::error::Error;
use crate::inbox::{Inbox, Stamp};
use crate::ring::Flag;
use crate::shm::Filling;
use crate::sync::lock;
use crate::wire::{Goodbye, Header, Kind, Member, Packet, Route};
use intake::Host;
pub(crate) use lend::Staging;
pub use link::Link;
use link::{io_err, Ambient, Links, SHUTDOWN_FLUSH};

/// A request from the host to its NI.
#[derive(Debug)]
pub(crate) enum Cmd {
    /// A bcast from this rank: to every rank (`among` empty), or to the
    /// other members of a sub-communicator (`among`, in chain order).
    Bcast {
        seq: u64,
        data: Bytes,
        tree: TreeKind,
        among: Vec<Member>,
    },
    Multicast {
        seq: u64,
        dests: Vec<Member>,
        data: Bytes,
        tree: TreeKind,
    },
    /// A point-to-point message (see `NiEngine::post_p2p`).
    P2p {
        kind: Kind,
        to: usize,
        seq: u64,
        index: u32,
        data: Bytes,
    },
    /// Send a control message to every peer.
    Control(Control),
    /// Send a control message to these peers.
    ControlTo(Vec<usize>, Control),
    /// Fabric mode: a bcast (`members` empty) or multicast as switch-based
    /// worms.
    Worm {
        kind: Kind,
        seq: u64,
        members: Vec<Member>,
        data: Bytes,
        worm: crate::worms::Worm,
    },
}

/// Handle to the NI: its runtime, its shared state and the background thread.
pub(crate) struct Net {
    /// The link to every peer (`None` for this rank).
    pub(crate) links: Vec<Option<Link>>,
    /// Shared memory when every rank of the job is on this host with an
    /// arena (a fact of the address table, so every rank agrees).
    pub(crate) medium: Medium,
    /// The host of every rank (an index), when known.
    pub(crate) hosts: Option<Arc<[u32]>>,
    /// How messages are cut into packets (the shared-memory size in
    /// shared memory; across hosts, large messages in larger packets).
    pub(crate) packets: crate::engine::PacketSize,
    /// `ip:port` this rank accepts peer connections on.
    pub(crate) data_addr: String,
    sh: Arc<Shared>,
    drive: Arc<Drive>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    writer_tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Set once by the shutdown: the communicators that share this NI
    /// (sub-communicators hold it too) then get `Stopped`.
    closed: std::sync::atomic::AtomicBool,
}

impl Net {
    /// Join the job and connect to every peer, over the fabric if `cfg`
    /// names one, else over a socket mesh. Returns the handle and the job id.
    pub(crate) fn start(
        cfg: &Config,
        job: &JobEnv,
        inbox: Arc<Inbox>,
    ) -> Result<(Net, u32), Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| io_err("starting the NI runtime", e))?;
        let joined = match &cfg.fabric {
            Some(addr) => fablink::join(cfg, job, &inbox, &rt, addr)?,
            None => mesh::join(cfg, job, &inbox)?,
        };
        let sh = Arc::new(Shared {
            me: job.rank,
            size: job.size,
            job: joined.job,
            engine: Mutex::new(
                NiEngine::new(
                    job.rank,
                    job.size,
                    joined.job,
                    cfg.forwarding,
                    joined.packets.base(),
                )
                .with_packets(joined.packets)
                .with_topology(joined.topology.map(Arc::new))
                .with_hosts(joined.hosts.clone()),
            ),
            inbox: inbox.clone(),
            links: joined.links,
        });
        let mut writer_tasks = joined.tasks;
        let poller = joined.poller;
        let (links, tasks) = (joined.connect)(&rt, sh.clone())?;
        writer_tasks.extend(tasks);
        let drive = Arc::new(Drive::new(rt, cfg.spin).with_poller(poller));
        let bg = drive.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mcast-ni-{}", job.rank))
            .spawn(move || bg.background())
            .map_err(|e| io_err("spawning the background thread that drives the NI", e))?;
        inbox.set_driver(Some(drive.clone()));
        Ok((
            Net {
                links,
                medium: joined.medium,
                hosts: joined.hosts,
                packets: joined.packets,
                data_addr: joined.data_addr,
                sh,
                drive,
                thread: Mutex::new(Some(thread)),
                writer_tasks: Mutex::new(writer_tasks),
                closed: false.into(),
            },
            joined.job,
        ))
    }

    /// Fabric mode: refuse a worm scheme this fabric does not carry.
    pub(crate) fn check_worm(&self, w: crate::worms::Worm) -> Result<(), Error> {
        if self.sh.links.carries(w) {
            Ok(())
        } else {
            Err(w.refusal())
        }
    }

    /// The fabric's welcome, in fabric mode.
    pub(crate) fn fabric(&self) -> Option<&crate::fabric::FabricWelcome> {
        self.sh.links.welcome()
    }

    /// A model time in cycles, with the fabric's cycle length.
    pub(crate) fn model_latency(&self, s: Stamp) -> Option<crate::ModelLatency> {
        self.sh
            .links
            .cycle_ps()
            .map(|cycle_ps| crate::ModelLatency {
                cycles: s.latency(),
                cycle_ps,
            })
    }

    /// Packets this rank sent as shared-memory descriptors so far.
    pub(crate) fn shm_sent(&self) -> u64 {
        self.sh
            .links
            .shm()
            .map_or(0, |s| s.sent.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// This rank's place among the ranks of its host and how many they
    /// are, where it has rings to them.
    pub(crate) fn host_place(&self) -> Option<(usize, usize)> {
        self.sh.links.rings().map(|r| r.host_place())
    }

    /// Whether this rank has shared-memory rings, and so barrier flags, to
    /// the ranks of its host.
    pub(crate) fn has_flags(&self) -> bool {
        self.sh.links.rings().is_some()
    }

    /// Set barrier flag `which` of communicator slot `slot` in world rank
    /// `peer`'s ring segment to `value` and ring its bell (nothing without
    /// rings).
    pub(crate) fn signal(&self, peer: usize, slot: usize, which: Flag, value: u64) {
        if let Some(r) = self.sh.links.rings() {
            r.signal(peer, slot, which, value);
        }
    }

    /// The value world rank `from` last stored in this rank's barrier flag
    /// `which` of slot `slot` (0 without rings).
    pub(crate) fn flag(&self, from: usize, slot: usize, which: Flag) -> u64 {
        self.sh
            .links
            .rings()
            .map_or(0, |r| r.flag(from, slot, which))
    }

    /// Hand a request to the NI engine (on this thread), then let the
    /// writers put what it queued on the wire.
    pub(crate) fn send(&self, cmd: Cmd) -> Result<(), Error> {
        self.send_filling(cmd, None)
    }

    /// [`Net::send`] for a payload from [`Net::staged`]: each packet's
    /// range of an arena payload is copied
    /// into the arena just before the packet leaves (the rest, if any,
    /// before this returns); a lent one is taken back on return.
    pub(crate) fn send_filling(
        &self,
        cmd: Cmd,
        mut stage: Option<Staging<'_>>,
    ) -> Result<(), Error> {
        if self.is_closed() {
            // The request's bytes go before a lent buffer is taken back
            // (`Lent`'s drop checks that nothing refers to it any more).
            drop(cmd);
            drop(stage);
            return Err(Error::Stopped("the NI has stopped".into()));
        }
        let mut fill = stage.as_mut().and_then(Staging::filling);
        let links = &self.sh.links;
        let amb = match &cmd {
            Cmd::Bcast { data, .. } | Cmd::Multicast { data, .. } | Cmd::P2p { data, .. } => {
                links.post(self.packets.count(data.len()))
            }
            _ => Ambient::Idle,
        };
        let res = match cmd {
            Cmd::Control(msg) => {
                send_control(&self.sh, &msg);
                Ok(())
            }
            Cmd::ControlTo(peers, msg) => {
                send_control_to(&self.sh, &peers, &msg);
                Ok(())
            }
            Cmd::Worm {
                kind,
                seq,
                members,
                data,
                worm,
            } => {
                if !links.carries(worm) {
                    return Err(worm.refusal());
                }
                // Worms are cut from the whole message: copy it first.
                if let Some(f) = fill.as_mut() {
                    f.finish();
                }
                let me = self.sh.me;
                let dests: Vec<usize> = if members.is_empty() {
                    (0..self.sh.size).filter(|&r| r != me).collect()
                } else {
                    members.iter().map(|m| m.rank as usize).collect()
                };
                let plan = links.worm_plan(worm, me, &dests)?;
                let packets =
                    lock(&self.sh.engine).worm_packets(kind, seq, me, &data, &worm.route(&members));
                links.send_worms(me, &plan, &packets);
                Ok(())
            }
            // A point-to-point message of one packet goes straight to the
            // link (`NiEngine::p2p_packet`); a longer one is posted.
            Cmd::P2p {
                kind,
                to,
                seq,
                index,
                data,
            } => {
                // Its bytes come as they are (`Net::send`), never as an
                // arena to fill; were a fill given, it is completed first.
                if let Some(f) = fill.as_mut() {
                    f.finish();
                }
                let one = lock(&self.sh.engine).p2p_packet(kind, to, seq, index, &data);
                match one {
                    Ok(Some(p)) => {
                        links.send(to, p, amb);
                        Ok(())
                    }
                    Ok(None) => with_engine(&self.sh, amb, None, |eng| {
                        eng.post_p2p(kind, to, seq, index, data)
                    }),
                    Err(e) => Err(e),
                }
            }
            cmd => with_engine(&self.sh, amb, fill, |eng| match cmd {
                Cmd::Bcast {
                    seq,
                    data,
                    tree,
                    among,
                } if among.is_empty() => eng.post_bcast(seq, data, tree),
                Cmd::Bcast {
                    seq,
                    data,
                    tree,
                    among,
                } => eng.post_bcast_among(seq, &among, data, tree),
                Cmd::Multicast {
                    seq,
                    dests,
                    data,
                    tree,
                } => eng.post_multicast(seq, &dests, data, tree),
                // Taken above.
                Cmd::Control(_) | Cmd::ControlTo(..) | Cmd::Worm { .. } | Cmd::P2p { .. } => Ok(()),
            }),
        };
        if let Err(e) = res {
            self.sh
                .inbox
                .fatal(Error::Protocol(format!("NI refused a host request: {e}")));
        }
        // Small packets went out from this thread; what the sockets could
        // not take waits for the writer tasks, which need the runtime run.
        if !links.flushed() {
            self.drive.tick();
        }
        Ok(())
    }

    /// Give flow-control credit back to the sources whose data the host
    /// took (see `inbox::flow`), each in one control message.
    pub(crate) fn return_credits(&self) {
        let due = self.sh.inbox.credits_due();
        if due.is_empty() || self.is_closed() {
            return;
        }
        for d in due {
            let msg = Control::Credit {
                class: d.class as u8,
                bytes: d.bytes,
            };
            send_control_to(&self.sh, &[d.to], &msg);
        }
        if !self.sh.links.flushed() {
            self.drive.tick();
        }
    }

    /// Flush every link, say goodbye (finalized) to every peer, and stop
    /// the NI.
    pub(crate) fn shutdown(&self) {
        self.shutdown_with(Goodbye::Finalized);
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Flush every link, say `bye` to every peer, and stop the NI (once:
    /// later calls do nothing).
    pub(crate) fn shutdown_with(&self, bye: Goodbye) {
        if self.closed.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        // What waits for room in a ring goes before the goodbye (which
        // takes the socket): the peers are draining their rings.
        if let Some(p) = self.drive.poller().cloned() {
            let links = self.sh.links.clone();
            self.drive.run(async move {
                let end = std::time::Instant::now() + SHUTDOWN_FLUSH;
                while !links.flushed() && std::time::Instant::now() < end {
                    if !p.poll() {
                        p.park(std::time::Duration::from_millis(1));
                    }
                    tokio::task::yield_now().await;
                }
            });
        }
        // Every writer flushes what it has, sends the goodbye, and shuts
        // its half of the connection down.
        self.sh.links.close(&bye);
        let tasks = std::mem::take(&mut *lock(&self.writer_tasks));
        self.drive.run(async {
            let _ = tokio::time::timeout(SHUTDOWN_FLUSH, async {
                for t in tasks {
                    let _ = t.await;
                }
            })
            .await;
        });
        self.sh.inbox.set_driver(None);
        self.drive.stop();
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
        self.sh.links.release();
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What the host, the readers and the writers share.
struct Shared {
    me: usize,
    size: usize,
    job: u32,
    engine: Mutex<NiEngine>,
    inbox: Arc<Inbox>,
    links: Arc<dyn Links>,
}

impl Host for Shared {
    fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    fn control_in(&self, from: usize, payload: &[u8]) -> Result<(), String> {
        let msg =
            Control::decode(payload).map_err(|e| format!("malformed control message: {e}"))?;
        for notice in self.inbox.control(from, msg) {
            send_control(self, &notice);
        }
        Ok(())
    }

    fn engine_in(&self, from: usize, p: Packet, amb: Ambient) -> Result<(), String> {
        // A point-to-point packet is delivered as it is, never forwarded:
        // the engine checks and counts it, with no action to queue and
        // collect (`NiEngine::p2p_in`). Any other packet takes the engine's
        // lock once, below.
        if NiEngine::is_p2p(&p) && lock(&self.engine).p2p_in(&p).map_err(|e| e.to_string())? {
            deliver(self, [(p, self.links.stamp(amb))]);
            return Ok(());
        }
        with_engine(self, amb, None, |eng| eng.packet_in(from, p)).map_err(|e| e.to_string())
    }

    fn deliver(&self, p: Packet, stamp: Option<Stamp>) {
        deliver(self, [(p, stamp)]);
    }
}

/// Send a control message to every peer; a mismatch notice on a
/// sub-communicator to its other members only (a disjoint communicator may
/// have the same id elsewhere).
fn send_control(sh: &Shared, msg: &Control) {
    let comm = match msg {
        Control::Mismatch { seq, .. } => crate::wire::comm_of(*seq),
        _ => 0,
    };
    // Only a sub-communicator's notice asks the inbox (and takes its lock).
    let members = if comm == 0 {
        None
    } else {
        sh.inbox.members(comm)
    };
    let peers: Vec<usize> = match members {
        Some(m) => m.iter().copied().filter(|&p| p != sh.me).collect(),
        None => (0..sh.size).filter(|&p| p != sh.me).collect(),
    };
    send_control_to(sh, &peers, msg);
}

/// Send a control message to `peers`.
fn send_control_to(sh: &Shared, peers: &[usize], msg: &Control) {
    let payload = Bytes::from(msg.encode());
    let seq = match msg {
        Control::Probe { seq, .. } | Control::Mismatch { seq, .. } => *seq,
        Control::Credit { .. } => 0,
    };
    let me = sh.me as u32;
    let header = Header::new(Kind::Control, sh.job, seq, me, me, payload.len() as u64);
    for &peer in peers {
        let packet = Packet {
            header,
            route: Route::None,
            payload: payload.clone(),
        };
        sh.links.send(peer, packet, Ambient::Idle);
    }
}

/// Hand packets to the host, announcing any mismatch they reveal.
fn deliver(sh: &Shared, packets: impl IntoIterator<Item = (Packet, Option<Stamp>)>) {
    for notice in sh.inbox.deliver_stamped(packets) {
        send_control(sh, &notice);
    }
}

/// Run `f` on the engine, then carry out what it queued: the sends on the
/// links, then the deliveries to the host in one batch (and announce any
/// mismatch the delivery revealed). `amb` says when, in model time, the
/// packets are ready (ignored by links without model time). `fill`: the
/// payload a post of this rank's cuts its packets from, copied into the
/// arena up to each packet's end just before the packet leaves (and
/// whole before this returns).
fn with_engine<T>(
    sh: &Shared,
    amb: Ambient,
    mut fill: Option<&mut Filling<'_>>,
    f: impl FnOnce(&mut NiEngine) -> T,
) -> T {
    // Inline: a small message's actions need no allocation.
    let mut deliveries: smallvec::SmallVec<[Packet; 2]> = smallvec::SmallVec::new();
    let mut sends: smallvec::SmallVec<[(usize, Packet); 4]> = smallvec::SmallVec::new();
    let r = {
        let mut eng = lock(&sh.engine);
        let r = f(&mut eng);
        while let Some(a) = eng.poll_action() {
            match a {
                Action::Send { to, packet } => sends.push((to, packet)),
                Action::Deliver(p) => deliveries.push(p),
            }
        }
        r
    };
    // Sent outside the engine's lock: a send may write to the socket.
    for (to, packet) in sends {
        if let Some(f) = fill.as_deref_mut() {
            f.to(packet.header.offset as usize + packet.payload.len());
        }
        sh.links.send(to, packet, amb);
    }
    if let Some(f) = fill {
        f.finish();
    }
    if !deliveries.is_empty() {
        let stamp = sh.links.stamp(amb);
        deliver(sh, deliveries.into_iter().map(|p| (p, stamp)));
    }
    r
}
