//! The socket mesh: one connection per peer, a Unix-domain stream socket in
//! the abstract namespace to a peer on the same host (same boot id and
//! network namespace), TCP with TCP_NODELAY to any other
//! (`MCAST_TRANSPORT=tcp` forces TCP, `quic` puts QUIC in TCP's place:
//! `quicmesh.rs`); and the host's shared-memory arenas,
//! through which large payloads go to the ranks of this host as descriptors.
//!
//! Each connection has a reader task and a writer ([`Out`]: vectored writes
//! of header, route and payload straight from the shared `Bytes`, on the
//! sender's thread when the socket takes them; its task flushes the rest,
//! beats when idle and sends the goodbye).

use std::sync::{Arc, OnceLock};

use tokio::net::{TcpListener, UnixListener};
use tokio::runtime::Runtime;

use super::connect::{self, Conn, Listeners, Reach};
use super::intake::{self, Host, Intake};
use super::link::{io_err, Ambient, Connected, Joined, Link, Links};
use super::netpoll::NetPoll;
use super::quicmesh::{self, QuicLink, QuicSide};
use super::read::{self, Landing, Rd};
use super::register;
use super::rings::Rings;
use super::tcprx::{self, TcpRx};
use crate::algorithm::Medium;
use crate::config::{Config, JobEnv, Transport};
use crate::engine::PacketSize;
use crate::error::Error;
use crate::inbox::Inbox;
use crate::outq::{Half, Out};
use crate::ring::{self, Segment};
use crate::shm::{Arena, Shm};
use crate::wire::{Goodbye, Header, Kind, Packet, Route};

/// The mesh's links: a writer per connected peer.
pub(crate) struct Mesh {
    me: usize,
    job: u32,
    inbox: Arc<Inbox>,
    /// Set once the mesh is built (before that, nothing is sent).
    writers: OnceLock<Vec<Option<Arc<Out>>>>,
    /// The host's shared-memory arenas (none without Unix sockets).
    shm: Option<Arc<Shm>>,
    /// The shared-memory rings, when the whole job shares this host.
    rings: Option<Arc<Rings>>,
    /// How many writers have bytes waiting (`Out::sharing`).
    waiting: Arc<std::sync::atomic::AtomicUsize>,
    /// What a waiting host polls: the rings and the TCP links.
    poll: Arc<NetPoll>,
}

impl Mesh {
    /// After a write to `to`'s ring: an impossible ring index is the
    /// peer's protocol violation (it is declared lost).
    fn ring_sent(&self, to: usize, r: Result<(), String>) {
        if let Err(e) = r {
            self.broken(
                to,
                format!("protocol violation in its shared-memory ring: {e}"),
            );
        }
    }
}

impl Links for Mesh {
    fn send(&self, to: usize, p: Packet, _amb: Ambient) {
        if let Some(r) = self.rings.as_ref().filter(|r| r.has(to)) {
            self.ring_sent(to, r.send(to, &p));
        } else if let Some(Some(out)) = self.writers.get().and_then(|w| w.get(to)) {
            out.send(p);
        }
    }

    fn inline_to(&self, to: usize) -> bool {
        self.rings.as_ref().is_some_and(|r| r.has(to))
    }

    fn send_inline(&self, to: usize, header: Header, route: &Route, payload: &[u8]) {
        if let Some(r) = self.rings.as_ref().filter(|r| r.has(to)) {
            self.ring_sent(to, r.send_parts(to, header, route, payload));
        }
    }

    fn flushed(&self) -> bool {
        // One load for all the writers (they share the count), not a lock
        // per peer on every send.
        self.rings.as_ref().is_none_or(|r| r.flushed())
            && self.waiting.load(std::sync::atomic::Ordering::Acquire) == 0
    }

    fn close(&self, bye: &Goodbye) {
        let Some(writers) = self.writers.get() else {
            return;
        };
        for (peer, out) in writers.iter().enumerate() {
            if let Some(out) = out {
                out.close(intake::bye(self.job, self.me, &bye.for_peer(peer)));
            }
        }
    }

    /// The peer is lost; if its connection may still be read (it hung,
    /// went silent), tell it so and close: a stopped rank that resumes
    /// learns at once that it is cut off, and why.
    fn broken(&self, peer: usize, why: String) {
        if self.inbox.said_bye(peer) {
            return;
        }
        self.inbox.lost(peer, why.clone());
        if let Some(r) = &self.rings {
            r.lost(peer);
        }
        if let Some(s) = &self.shm {
            s.holder_lost(peer);
        }
        if let Some(Some(out)) = self.writers.get().and_then(|w| w.get(peer)) {
            let expel = Goodbye::Expelled { reason: why };
            out.close(intake::bye(self.job, self.me, &expel));
        }
    }

    fn shm(&self) -> Option<&Arc<Shm>> {
        self.shm.as_ref()
    }

    fn rings(&self) -> Option<&Arc<Rings>> {
        self.rings.as_ref()
    }

    fn reclaim(&self, lo: usize, hi: usize) {
        for out in self.writers.get().into_iter().flatten().flatten() {
            out.reclaim(lo, hi);
        }
    }

    fn release(&self) {
        self.poll.release();
        if let Some(r) = &self.rings {
            r.release();
        }
    }
}

/// Bind the listeners (and the shared-memory arena), tell mclaunch's
/// rendezvous (blocking, from this thread) how to reach this rank, and get
/// every rank's address; `connect` then builds the mesh.
pub(crate) fn join<'a>(
    cfg: &'a Config,
    job: &'a JobEnv,
    inbox: &Arc<Inbox>,
) -> Result<Joined<'a>, Error> {
    let bind = connect::bind_addr(cfg, job)?;
    let listener = std::net::TcpListener::bind((bind.as_str(), 0))
        .map_err(|e| io_err(&format!("binding {bind}"), e))?;
    let data_addr = listener.local_addr()?.to_string();
    let unix = match cfg.transport {
        Transport::Auto | Transport::Quic => connect::bind_unix(job.rank),
        Transport::Tcp | Transport::QuicAll => None,
    };
    // Under QUIC: the identity (checked before the rendezvous: a rank
    // without one fails here) and a UDP socket on the same address.
    let quic = match cfg.transport {
        t if t.is_quic() => Some(quicmesh::prepare(&bind, job.rank)?),
        _ => None,
    };
    let (quic, udp) = match quic {
        Some((side, port)) => (Some(side), Some(port)),
        None => (None, None),
    };
    // Our shared-memory arena, if we have Unix sockets and it is wanted.
    let arena = match (&unix, cfg.shm_bytes) {
        (Some(_), bytes) if bytes > 0 => match Arena::create(job.rank, bytes) {
            Ok(a) => Some(a),
            Err(e) => {
                tracing::warn!("no shared-memory arena, large payloads go inline: {e}");
                None
            }
        },
        _ => None,
    };
    // Our ring segment beside the arena (sparse: pages come with use), made
    // before the exchange so that peers can map it as soon as they learn
    // of it. It is used only if the whole job turns out to share this host.
    let ring_bytes = cfg
        .ring_bytes
        .unwrap_or_else(|| ring::auto_ring_bytes(job.size));
    let own_rings = match &arena {
        Some((_, path)) if ring_bytes > 0 && job.size > 1 => {
            match Segment::create(&ring::segment_path(path), job.size, ring_bytes) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!("no shared-memory rings, packets go over sockets: {e}");
                    None
                }
            }
        }
        _ => None,
    };
    let reach = Reach {
        tcp: data_addr.clone(),
        unix: unix.as_ref().map(|(_, n, h)| (n.clone(), h.clone())),
        shm: arena.as_ref().map(|(_, p)| p.clone()),
        udp,
    };
    let host = unix.as_ref().map(|(_, _, h)| h.clone());
    let unix_listener = unix.map(|(l, _, _)| l);
    let tls = quic.as_ref().map(|side| &side.identity);
    let (job_id, addrs, token) = register::exchange(job, &reach.encode(), cfg.timeout, tls)?;
    if let Some(side) = &quic {
        quicmesh::check_job(side, job_id)?;
    }
    // Under srun the token is learnt in the exchange.
    let job = JobEnv {
        token,
        ..job.clone()
    };
    let addrs: Vec<Reach> = addrs.iter().map(|a| Reach::parse(a)).collect();
    let mine = host.as_deref();
    let hosts = host_table(&addrs);
    let count = hosts.iter().max().map_or(0, |&h| h as usize + 1);
    let medium = if addrs
        .iter()
        .all(|a| a.unix_on(mine).is_some() && a.shm.is_some())
    {
        Medium::SharedMemory
    } else if count > 1 && count < addrs.len() {
        Medium::Hosts { hosts: count }
    } else {
        Medium::Network
    };
    let packets = match medium {
        Medium::SharedMemory => PacketSize::uniform(cfg.shm_packet_bytes),
        Medium::Hosts { .. } => cfg.hosts_packets(),
        Medium::Network => PacketSize::uniform(cfg.network_packet_bytes(addrs.len())),
    };
    let shm = match arena {
        Some((own, _)) => Some(Arc::new(open_arenas(job.rank, own, &addrs, mine)?)),
        None => None,
    };
    // Rings to every other rank of this host that made a segment (all of
    // them, if any: each with an arena made one).
    let neighbours = addrs
        .iter()
        .enumerate()
        .any(|(r, a)| r != job.rank && a.unix_on(mine).is_some() && a.shm.is_some());
    let rings = match own_rings {
        Some(own) if neighbours => {
            let r = open_rings(job.rank, own, &addrs, mine, shm.clone(), inbox.clone())?;
            Some(Arc::new(r))
        }
        _ => None,
    };
    let listeners = Listeners {
        tcp: listener,
        unix: unix_listener,
        host,
    };
    let waiting: Arc<std::sync::atomic::AtomicUsize> = Default::default();
    let poll = Arc::new(NetPoll::new(rings.clone(), waiting.clone()));
    let mesh = Arc::new(Mesh {
        me: job.rank,
        job: job_id,
        inbox: inbox.clone(),
        writers: OnceLock::new(),
        shm,
        rings,
        waiting,
        poll: poll.clone(),
    });
    let links = mesh.clone();
    Ok(Joined {
        job: job_id,
        medium,
        hosts: Some(hosts.into()),
        packets,
        data_addr,
        topology: cfg.topology.clone(),
        links,
        tasks: Vec::new(),
        poller: Some(poll as Arc<dyn crate::drive::Poller>),
        connect: Box::new(move |rt: &Runtime, host: Arc<dyn Host>| {
            // Connect on this thread; the tasks then wait for whoever drives.
            let intake = Intake::new(host, job_id, job.size, job.rank);
            if let Some(r) = &mesh.rings {
                r.set_intake(intake.clone());
            }
            let setup = setup(cfg, &job, (listeners, quic), &addrs, &mesh, intake);
            let connected = rt.block_on(setup)?;
            // Every peer opened every arena and ring segment before its
            // handshake with us.
            if let Some(shm) = &mesh.shm {
                shm.unlink_own();
            }
            if let Some(r) = &mesh.rings {
                r.unlink_own();
            }
            Ok(connected)
        }),
    })
}

/// The host of every rank, numbered in order of first appearance: ranks
/// that published the same host key share a host; a rank that published
/// none (TCP only) is a host of its own. Every rank computes it from the
/// same address table, so all agree.
fn host_table(addrs: &[Reach]) -> Vec<u32> {
    let mut keys: Vec<(&str, u32)> = Vec::new();
    let mut next = 0u32;
    let mut fresh = || {
        next += 1;
        next - 1
    };
    addrs
        .iter()
        .map(|a| match &a.unix {
            Some((_, key)) => match keys.iter().find(|(k, _)| k == key) {
                Some(&(_, id)) => id,
                None => {
                    let id = fresh();
                    keys.push((key, id));
                    id
                }
            },
            None => fresh(),
        })
        .collect()
}

/// Map the arena of every rank of this host that published one (ours is
/// `own`). Failing to map one is an error: a descriptor into it could not be
/// read.
fn open_arenas(me: usize, own: Arena, addrs: &[Reach], host: Option<&str>) -> Result<Shm, Error> {
    let mut arenas: Vec<Option<Arc<Arena>>> = (0..addrs.len()).map(|_| None).collect();
    arenas[me] = Some(Arc::new(own));
    for (r, a) in addrs.iter().enumerate() {
        if r == me || a.unix_on(host).is_none() {
            continue;
        }
        if let Some(path) = &a.shm {
            let arena = Arena::open(path).map_err(|e| {
                mapping_failed(e, r, "arena", "MCAST_SHM_BYTES=0 turns shared memory off")
            })?;
            arenas[r] = Some(Arc::new(arena));
        }
    }
    Ok(Shm::new(me, arenas))
}

/// Mapping rank `r`'s shared-memory `what` failed with `e`; `off` says
/// how to do without.
fn mapping_failed(e: std::io::Error, r: usize, what: &str, off: &str) -> Error {
    Error::Io(std::io::Error::new(
        e.kind(),
        format!("mapping rank {r}'s shared-memory {what}: {e} ({off})"),
    ))
}

/// Map the ring segment of every other rank of this host with an arena
/// (each made one beside it); ranks of other hosts get none.
fn open_rings(
    me: usize,
    own: Segment,
    addrs: &[Reach],
    host: Option<&str>,
    shm: Option<Arc<Shm>>,
    inbox: Arc<Inbox>,
) -> Result<Rings, Error> {
    let own = Arc::new(own);
    let mut segs = Vec::with_capacity(addrs.len());
    for (r, a) in addrs.iter().enumerate() {
        if r == me {
            segs.push(Some(own.clone()));
            continue;
        }
        let Some(path) = a.shm.as_ref().filter(|_| a.unix_on(host).is_some()) else {
            segs.push(None);
            continue;
        };
        let seg = Segment::open(&ring::segment_path(path), addrs.len())
            .map_err(|e| mapping_failed(e, r, "rings", "MCAST_RING_BYTES=0 turns the rings off"))?;
        segs.push(Some(Arc::new(seg)));
    }
    segs[me] = None;
    Rings::new(me, own, segs, shm, inbox).map_err(Error::Protocol)
}

/// A link's read half: a TCP link's is read from any thread (`tcprx`).
enum Reading {
    Tcp(tokio::net::tcp::OwnedReadHalf),
    Task(Rd),
}

/// A link to one peer as set-up leaves it: its kind, read and write
/// halves.
type Opened = (Link, Reading, Half);

/// Connect to every peer, then start the gatekeeper, and a reader and a
/// writer per peer. Returns the links and the writers' tasks.
async fn setup(
    cfg: &Config,
    job: &JobEnv,
    (listeners, quic): (Listeners, Option<QuicSide>),
    addrs: &[Reach],
    links: &Arc<Mesh>,
    intake: Intake,
) -> Result<Connected, Error> {
    listeners.tcp.set_nonblocking(true)?;
    let listener = TcpListener::from_std(listeners.tcp)?;
    let unix = match listeners.unix {
        Some(l) => {
            l.set_nonblocking(true)?;
            Some(UnixListener::from_std(l)?)
        }
        None => None,
    };
    let host = listeners.host.as_deref();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let detect = cfg.detection(job.size, cores);
    let tcp_remote = quic.is_none();
    let both = async {
        let socks = connect::mesh(job, &listener, unix.as_ref(), host, addrs, tcp_remote);
        let quic = async {
            match quic {
                Some(side) => {
                    let opts = quicmesh::options(detect.bound);
                    let (links, ep) = quicmesh::mesh(job, side, host, addrs, opts).await?;
                    Ok((links, Some(ep)))
                }
                None => Ok((Vec::new(), None)),
            }
        };
        tokio::try_join!(socks, quic)
    };
    let (conns, (mut quic_links, ep)) =
        tokio::time::timeout(cfg.timeout, both)
            .await
            .map_err(|_| Error::Timeout {
                op: "connecting to peers".into(),
                after: cfg.timeout,
                detail: format!("rank {} of {}", job.rank, job.size),
            })??;
    tokio::spawn(connect::gatekeeper(listener, unix, job.clone()));
    if let Some(gate) = ep {
        tokio::spawn(quicmesh::gatekeeper(gate));
    }
    // Every link as (kind, read half, write half), the QUIC ones
    // where the sockets left a gap.
    quic_links.resize_with(job.size, || None);
    let conns: Vec<Option<Opened>> = conns
        .into_iter()
        .zip(quic_links)
        .map(|(c, q)| match (c, q) {
            (Some(Conn::Tcp(s)), _) => {
                let (rd, wr) = s.into_split();
                Some((Link::Tcp, Reading::Tcp(rd), Half::Tcp(wr)))
            }
            (Some(c), _) => {
                let kind = match links.rings.is_some() {
                    true => Link::Ring,
                    false => Link::Unix,
                };
                let (rd, half) = c.split();
                Some((kind, Reading::Task(rd), half))
            }
            (None, Some(QuicLink { rd, half })) => Some((Link::Quic, Reading::Task(rd), half)),
            (None, None) => None,
        })
        .collect();
    let kinds: Vec<Option<Link>> = conns.iter().map(|c| c.as_ref().map(|c| c.0)).collect();
    let heartbeat = intake::signal(Kind::Heartbeat, links.job, job.rank);
    let mut writers: Vec<Option<Arc<Out>>> = (0..job.size).map(|_| None).collect();
    let mut writer_tasks = Vec::new();
    let mut fast = Vec::new();
    for (peer, conn) in conns.into_iter().enumerate() {
        let Some((kind, rd, half)) = conn else {
            continue;
        };
        // Descriptors go only to a Unix peer that mapped the host's arenas
        // (it published one of its own); it may send us some in return.
        let landing = Landing::on(kind, links.shm.as_ref());
        let shm_out = landing.desc.clone().filter(|_| addrs[peer].shm.is_some());
        let out = Arc::new(Out::new(peer, half, shm_out).sharing(links.waiting.clone()));
        // Our first heartbeat now, from this thread: the peer holds us to
        // the silence bound only from our first packet on, and with the
        // rings carrying the data, our socket may carry nothing else before
        // the writer task first runs.
        out.send_raw(heartbeat.clone());
        writers[peer] = Some(out.clone());
        writer_tasks.push(tokio::spawn(out.run(
            links.inbox.clone(),
            heartbeat.clone(),
            detect.beat,
        )));
        // Silence for 90% of the bound declares the peer lost, leaving the
        // rest for waking the waiting call.
        let silence = detect.silence;
        let (links, intake) = (links.clone(), intake.clone());
        let first = cfg.timeout.max(silence);
        match rd {
            Reading::Tcp(rd) => {
                let rings = links.rings.clone();
                let rx = Arc::new(TcpRx::new(peer, rd, intake, landing.arena, rings));
                fast.push(rx.clone());
                tokio::spawn(tcprx::run(rx, links, (silence, first)));
            }
            Reading::Task(rd) => {
                tokio::spawn(read::reader(
                    peer,
                    rd,
                    links,
                    intake,
                    (silence, first),
                    landing,
                ));
            }
        }
    }
    // The host polls outside the runtime if every peer is on a ring (its
    // Unix socket carries only heartbeats, pokes and the goodbye) or on a
    // TCP link it reads itself.
    let all = kinds
        .iter()
        .enumerate()
        .all(|(p, k)| p == job.rank || matches!(k, Some(Link::Tcp | Link::Ring)));
    links.poll.set_tcp(fast, all);
    if let Some(r) = &links.rings {
        r.set_pokers(writers.clone(), heartbeat.clone());
    }
    // Readers forward only once the runtime is driven, after this.
    let _ = links.writers.set(writers);
    Ok((kinds, writer_tasks))
}
