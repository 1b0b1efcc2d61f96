//! The tokio driver of the NI engine over sockets (direct mode).
//!
//! The NI lives in one current-thread tokio runtime: the engine, one reader
//! and one writer task per peer, and the gatekeeper. Which thread drives that
//! runtime is `drive`'s business: the host while it waits in mcast, a
//! background thread while the host is away. Nothing busy-spins for long:
//! a waiting host polls for `MCAST_SPIN_US`, then sleeps in epoll, so ranks may
//! outnumber cores. Peers on the same host (same boot id and network
//! namespace) are reached over Unix-domain stream sockets in the abstract
//! namespace, others over TCP with TCP_NODELAY (`MCAST_TRANSPORT=tcp` forces
//! TCP). A writer sends header, route and payload of a batch of packets with
//! vectored writes, the payload straight from the shared `Bytes` (no copy).
//!
//! Startup: bind the listeners, tell mclaunch's rendezvous (blocking, from the
//! host thread) how to reach this rank, get every rank's address, then build a
//! full mesh: rank i connects to every j < i and accepts every j > i; both
//! ends exchange a [`PeerHello`] carrying the job token, and a connection with
//! the wrong token is closed and logged.

use std::net::{TcpListener as StdListener, TcpStream as StdStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::algorithm::{Medium, TreeKind};
use bytes::{BufMut, Bytes, BytesMut};
use serde::{de::DeserializeOwned, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc;

use crate::bootstrap::{self, Hello, PeerHello, RendezvousReply, PROTOCOL_VERSION};
use crate::config::{Config, JobEnv, Transport};
use crate::control::Control;
use crate::drive::Drive;
use crate::engine::{Action, NiEngine};
use crate::error::Error;
use crate::fablink::{self, Ambient, FabricState};
use crate::inbox::Inbox;
use crate::outq::{Half, Out};
use crate::shm::{Arena, Shm};
use crate::wire::{Header, Kind, Member, Packet, Route, ShmDesc, FLAG_SHM, HEADER_LEN};

/// A request from the host to its NI.
#[derive(Debug)]
pub(crate) enum Cmd {
    Bcast {
        seq: u64,
        data: Bytes,
        tree: TreeKind,
    },
    Multicast {
        seq: u64,
        dests: Vec<Member>,
        data: Bytes,
        tree: TreeKind,
    },
    P2p {
        to: usize,
        seq: u64,
        data: Bytes,
    },
    /// Send a control message to every peer.
    Control(Control),
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

/// What carries the packets to one peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// TCP (with TCP_NODELAY).
    Tcp,
    /// A Unix-domain stream socket (peers on the same host).
    Unix,
    /// Through the emulated switch fabric (`mclaunch --fabric`).
    Fabric,
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Link::Tcp => "tcp",
            Link::Unix => "unix",
            Link::Fabric => "fabric",
        })
    }
}

/// Handle to the NI: its runtime, its shared state and the background thread.
pub(crate) struct Net {
    /// The link to every peer (`None` for this rank).
    pub(crate) links: Vec<Option<Link>>,
    /// Shared memory when every rank of the job is on this host with an
    /// arena (a fact of the address table, so every rank agrees).
    pub(crate) medium: Medium,
    /// Payload bytes per packet (the shared-memory size in shared memory).
    pub(crate) packet_bytes: usize,
    /// `ip:port` this rank accepts peer connections on.
    pub(crate) data_addr: String,
    sh: Arc<Shared>,
    drive: Arc<Drive>,
    thread: Option<std::thread::JoinHandle<()>>,
    writer_tasks: Vec<tokio::task::JoinHandle<()>>,
    closed: bool,
}

/// How long an orderly shutdown may take to flush.
const SHUTDOWN_FLUSH: Duration = Duration::from_secs(10);
/// Largest handshake frame.
const MAX_HELLO: usize = 4096;
/// How long an incoming connection may take to send its handshake.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// The reader's buffer: many small packets per read system call, while a
/// payload larger than this is read straight into its own buffer.
const READ_BUFFER: usize = 16 * 1024;

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{what}: {e}")))
}

/// The read half of a peer connection (TCP or Unix-domain).
pub(crate) type Rd = Box<dyn AsyncRead + Unpin + Send>;

/// A connection to a peer, before it is split.
enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn split(self) -> (Rd, Half) {
        match self {
            Conn::Tcp(s) => {
                let (r, w) = s.into_split();
                (Box::new(r), Half::Tcp(w))
            }
            Conn::Unix(s) => {
                let (r, w) = s.into_split();
                (Box::new(r), Half::Unix(w))
            }
        }
    }
}

/// How a rank can be reached, as published through the rendezvous:
/// `ip:port`, and for same-host peers a Unix socket in the abstract namespace
/// with the key of the host (boot id and network namespace) it lives on,
/// written `ip:port unix=NAME host=KEY`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reach {
    tcp: String,
    unix: Option<(String, String)>,
    /// The rank's shared-memory arena (only meaningful with `unix`).
    shm: Option<String>,
}

impl Reach {
    fn encode(&self) -> String {
        let mut s = self.tcp.clone();
        if let Some((name, host)) = &self.unix {
            s += &format!(" unix={name} host={host}");
            if let Some(path) = &self.shm {
                s += &format!(" shm={path}");
            }
        }
        s
    }

    /// Parse a published address; unknown fields are ignored, so a peer
    /// that offers only TCP is reached over TCP.
    fn parse(s: &str) -> Reach {
        let mut it = s.split_whitespace();
        let tcp = it.next().unwrap_or_default().to_string();
        let (mut name, mut host, mut shm) = (None, None, None);
        for f in it {
            if let Some(v) = f.strip_prefix("unix=") {
                name = Some(v.to_string());
            } else if let Some(v) = f.strip_prefix("host=") {
                host = Some(v.to_string());
            } else if let Some(v) = f.strip_prefix("shm=") {
                shm = Some(v.to_string());
            }
        }
        let unix = name.zip(host);
        Reach {
            shm: shm.filter(|_| unix.is_some()),
            tcp,
            unix,
        }
    }

    /// The Unix socket to reach this rank by, if it lives on `host`.
    fn unix_on(&self, host: Option<&str>) -> Option<&str> {
        match (&self.unix, host) {
            (Some((name, h)), Some(mine)) if h == mine => Some(name),
            _ => None,
        }
    }
}

/// This host's key: ranks with equal keys share a kernel and a network
/// namespace, so they can meet on abstract Unix sockets.
#[cfg(target_os = "linux")]
fn host_key() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let netns = std::fs::metadata("/proc/self/ns/net").ok()?.ino();
    Some(format!("{}-{netns}", boot.trim()))
}

#[cfg(target_os = "linux")]
fn abstract_addr(name: &str) -> std::io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
}

/// Bind this rank's Unix listener (abstract namespace: nothing to clean up).
#[cfg(target_os = "linux")]
fn bind_unix(rank: usize) -> Option<(std::os::unix::net::UnixListener, String, String)> {
    let host = host_key()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("mcast-{}-{rank}-{nanos:08x}", std::process::id());
    let l = abstract_addr(&name)
        .and_then(|a| std::os::unix::net::UnixListener::bind_addr(&a))
        .map_err(|e| tracing::debug!("no Unix-domain listener: {e}"))
        .ok()?;
    Some((l, name, host))
}

#[cfg(not(target_os = "linux"))]
fn bind_unix(_rank: usize) -> Option<(std::os::unix::net::UnixListener, String, String)> {
    None
}

#[cfg(target_os = "linux")]
fn connect_unix(name: &str) -> std::io::Result<UnixStream> {
    let s = std::os::unix::net::UnixStream::connect_addr(&abstract_addr(name)?)?;
    s.set_nonblocking(true)?;
    UnixStream::from_std(s)
}

#[cfg(not(target_os = "linux"))]
fn connect_unix(_name: &str) -> std::io::Result<UnixStream> {
    Err(std::io::ErrorKind::Unsupported.into())
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
                Error::Io(std::io::Error::new(
                    e.kind(),
                    format!(
                        "mapping rank {r}'s shared-memory arena: {e} \
                         (MCAST_SHM_BYTES=0 turns shared memory off)"
                    ),
                ))
            })?;
            arenas[r] = Some(Arc::new(arena));
        }
    }
    Ok(Shm::new(me, arenas))
}

/// Register with the rendezvous; returns (job id, address of every rank).
fn rendezvous(
    job: &JobEnv,
    data_addr: &str,
    timeout: Duration,
) -> Result<(u32, Vec<String>), Error> {
    let addr = job
        .rendezvous
        .to_socket_addrs()
        .map_err(|e| io_err(&format!("resolving rendezvous {}", job.rendezvous), e))?
        .next()
        .ok_or_else(|| {
            Error::InvalidArgument(format!("rendezvous {} has no address", job.rendezvous))
        })?;
    let mut s = StdStream::connect_timeout(&addr, timeout)
        .map_err(|e| io_err(&format!("connecting to rendezvous {addr}"), e))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    bootstrap::write_frame(
        &mut s,
        &Hello {
            version: PROTOCOL_VERSION,
            token: job.token.clone(),
            rank: job.rank as u32,
            size: job.size as u32,
            data_addr: data_addr.to_string(),
            pid: std::process::id(),
        },
    )?;
    let reply: RendezvousReply = bootstrap::read_frame(&mut s).map_err(|e| match e {
        Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Error::Timeout {
                op: "rendezvous".into(),
                after: timeout,
                detail: format!("no address table from {addr}"),
            }
        }
        other => other,
    })?;
    match reply {
        RendezvousReply::Table { job: id, addrs } if addrs.len() == job.size => Ok((id, addrs)),
        RendezvousReply::Table { addrs, .. } => Err(Error::Protocol(format!(
            "rendezvous sent {} addresses for {} ranks",
            addrs.len(),
            job.size
        ))),
        RendezvousReply::Failed { reason } => {
            Err(Error::Protocol(format!("rendezvous failed: {reason}")))
        }
    }
}

impl Net {
    /// Join the job and connect to every peer. Returns the handle and the job id.
    pub(crate) fn start(
        cfg: &Config,
        job: &JobEnv,
        inbox: Arc<Inbox>,
    ) -> Result<(Net, u32), Error> {
        if let Some(addr) = &cfg.fabric {
            return Net::start_fabric(cfg, job, inbox, addr);
        }
        let listener = StdListener::bind((cfg.bind.as_str(), 0))
            .map_err(|e| io_err(&format!("binding {}", cfg.bind), e))?;
        let data_addr = listener.local_addr()?.to_string();
        let unix = match cfg.transport {
            Transport::Auto => bind_unix(job.rank),
            Transport::Tcp => None,
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
        let reach = Reach {
            tcp: data_addr.clone(),
            unix: unix.as_ref().map(|(_, n, h)| (n.clone(), h.clone())),
            shm: arena.as_ref().map(|(_, p)| p.clone()),
        };
        let host = unix.as_ref().map(|(_, _, h)| h.clone());
        let unix_listener = unix.map(|(l, _, _)| l);
        let (job_id, addrs) = rendezvous(job, &reach.encode(), cfg.timeout)?;
        let addrs: Vec<Reach> = addrs.iter().map(|a| Reach::parse(a)).collect();
        let mine = host.as_deref();
        let medium = if addrs
            .iter()
            .all(|a| a.unix_on(mine).is_some() && a.shm.is_some())
        {
            Medium::SharedMemory
        } else {
            Medium::Network
        };
        let packet_bytes = match medium {
            Medium::SharedMemory => cfg.shm_packet_bytes,
            Medium::Network => cfg.packet_bytes,
        };
        let shm = match arena {
            Some((own, _)) => Some(Arc::new(open_arenas(
                job.rank,
                own,
                &addrs,
                host.as_deref(),
            )?)),
            None => None,
        };
        let listeners = Listeners {
            tcp: listener,
            unix: unix_listener,
            host,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| io_err("starting the NI runtime", e))?;
        let sh = Arc::new(Shared {
            me: job.rank,
            size: job.size,
            job: job_id,
            engine: Mutex::new(
                NiEngine::new(job.rank, job.size, job_id, cfg.forwarding, packet_bytes)
                    .with_topology(cfg.topology.clone().map(Arc::new)),
            ),
            writers: Mutex::new((0..job.size).map(|_| None).collect()),
            inbox: inbox.clone(),
            shm,
            fabric: None,
        });
        // Connect on this thread; the tasks then wait for whoever drives.
        let (links, writer_tasks) = rt.block_on(setup(cfg, job, listeners, &addrs, sh.clone()))?;
        // Every peer opened every arena before its handshake with us.
        if let Some(shm) = &sh.shm {
            shm.unlink_own();
        }
        let drive = Arc::new(Drive::new(rt, cfg.spin));
        let bg = drive.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mcast-ni-{}", job.rank))
            .spawn(move || bg.background())
            .map_err(|e| io_err("spawning the NI thread", e))?;
        inbox.set_driver(Some(drive.clone()));
        Ok((
            Net {
                links,
                medium,
                packet_bytes,
                data_addr,
                sh,
                drive,
                thread: Some(thread),
                writer_tasks,
                closed: false,
            },
            job_id,
        ))
    }

    /// Fabric mode: join the job, then connect to host port `addr` of the
    /// emulated switch fabric; every packet goes through it.
    fn start_fabric(
        cfg: &Config,
        job: &JobEnv,
        inbox: Arc<Inbox>,
        addr: &str,
    ) -> Result<(Net, u32), Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| io_err("starting the NI runtime", e))?;
        // Join the fabric first: the rendezvous completes only when every
        // rank has said hello, so by then every rank has its host port and
        // no packet can reach a port nobody listens on yet.
        let (stream, welcome) =
            rt.block_on(fablink::connect(addr, &job.token, job.rank, cfg.timeout))?;
        let guard = rt.enter();
        let (rd, half) = Conn::Tcp(stream).split();
        let out = Arc::new(Out::new(usize::MAX, half, None));
        let beat = (cfg.failure_timeout / 4).max(Duration::from_millis(10));
        // Heartbeats while the other ranks join, so the fabric does not
        // take this rank for a silent one.
        let writer = rt.spawn(out.clone().run(inbox.clone(), fablink::heartbeat(), beat));
        drop(guard);
        let reach = format!("fabric={addr}");
        let (job_id, _) = rt.block_on(async {
            let (job, reach, timeout) = (job.clone(), reach.clone(), cfg.timeout);
            tokio::task::spawn_blocking(move || rendezvous(&job, &reach, timeout))
                .await
                .map_err(|e| Error::Stopped(format!("rendezvous task: {e}")))?
        })?;
        let packet_bytes = welcome.packet_bytes as usize;
        // Topology-aware trees map rank i to node i of a direct fabric.
        let topology = cfg
            .topology
            .clone()
            .or_else(|| welcome.spec.parse::<mcast_algorithms::Topology>().ok());
        let _guard = rt.enter();
        let fabric = Arc::new(FabricState::new(out.clone(), welcome));
        let sh = Arc::new(Shared {
            me: job.rank,
            size: job.size,
            job: job_id,
            engine: Mutex::new(
                NiEngine::new(job.rank, job.size, job_id, cfg.forwarding, packet_bytes)
                    .with_topology(topology.map(Arc::new)),
            ),
            writers: Mutex::new((0..job.size).map(|_| None).collect()),
            inbox: inbox.clone(),
            shm: None,
            fabric: Some(fabric.clone()),
        });
        let rsh = sh.clone();
        rt.spawn(fablink::reader(
            rd,
            fabric,
            inbox.clone(),
            job.size,
            job_id,
            // The fabric beats every quarter of its own bound.
            cfg.failure_timeout.mul_f64(0.9),
            move |from, p, arrival, post| fabric_packet_in(&rsh, from, p, arrival, post),
        ));
        drop(_guard);
        let drive = Arc::new(Drive::new(rt, cfg.spin));
        let bg = drive.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mcast-ni-{}", job.rank))
            .spawn(move || bg.background())
            .map_err(|e| io_err("spawning the NI thread", e))?;
        inbox.set_driver(Some(drive.clone()));
        let links = (0..job.size)
            .map(|r| (r != job.rank).then_some(Link::Fabric))
            .collect();
        Ok((
            Net {
                links,
                medium: Medium::Network,
                packet_bytes,
                data_addr: addr.to_string(),
                sh,
                drive,
                thread: Some(thread),
                writer_tasks: vec![writer],
                closed: false,
            },
            job_id,
        ))
    }

    /// Fabric mode: refuse a worm scheme this fabric does not carry.
    pub(crate) fn check_worm(&self, w: crate::worms::Worm) -> Result<(), Error> {
        match &self.sh.fabric {
            Some(f) if f.planner.supports(w) => Ok(()),
            _ => Err(w.refusal()),
        }
    }

    /// The fabric's welcome, in fabric mode.
    pub(crate) fn fabric(&self) -> Option<&crate::fabric::FabricWelcome> {
        self.sh.fabric.as_ref().map(|f| &f.welcome)
    }

    /// A model time in cycles, with the fabric's cycle length.
    pub(crate) fn model_latency(&self, s: crate::inbox::Stamp) -> Option<crate::ModelLatency> {
        self.sh.fabric.as_ref().map(|f| crate::ModelLatency {
            cycles: s.latency(),
            cycle_ps: f.cycle_ps(),
        })
    }

    /// Packets this rank sent as shared-memory descriptors so far.
    pub(crate) fn shm_sent(&self) -> u64 {
        self.sh
            .shm
            .as_ref()
            .map_or(0, |s| s.sent.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// The bytes of a message this rank originates: in its shared-memory
    /// arena when that can serve (a large payload, room in the arena), so
    /// receivers on this host read them in place; otherwise a plain copy.
    pub(crate) fn payload(&self, data: &[u8]) -> Bytes {
        self.sh
            .shm
            .as_ref()
            .and_then(|s| s.copy_in(data))
            .unwrap_or_else(|| Bytes::copy_from_slice(data))
    }

    /// Hand a request to the NI engine (on this thread), then let the
    /// writers put what it queued on the wire.
    pub(crate) fn send(&self, cmd: Cmd) -> Result<(), Error> {
        if self.closed {
            return Err(Error::Stopped("the NI has stopped".into()));
        }
        let pb = self.packet_bytes;
        let amb = match (&self.sh.fabric, &cmd) {
            (Some(f), Cmd::Bcast { data, .. } | Cmd::Multicast { data, .. }) => {
                f.post(crate::engine::packet_count(data.len(), pb), None)
            }
            (Some(f), Cmd::P2p { .. }) => f.post(1, None),
            _ => Ambient::Idle,
        };
        let res = match cmd {
            Cmd::Control(msg) => {
                send_control(&self.sh, &msg);
                Ok(())
            }
            Cmd::Worm {
                kind,
                seq,
                members,
                data,
                worm,
            } => {
                let Some(f) = &self.sh.fabric else {
                    return Err(worm.refusal());
                };
                let me = self.sh.me;
                let dests: Vec<usize> = if members.is_empty() {
                    (0..self.sh.size).filter(|&r| r != me).collect()
                } else {
                    members.iter().map(|m| m.rank as usize).collect()
                };
                let plan = f.planner.plan(worm, me, &dests)?;
                let packets =
                    lock(&self.sh.engine).worm_packets(kind, seq, me, &data, &worm.route(&members));
                f.send_worms(me, &plan, &packets, None);
                Ok(())
            }
            cmd => with_engine(&self.sh, amb, |eng| match cmd {
                Cmd::Bcast { seq, data, tree } => eng.post_bcast(seq, data, tree),
                Cmd::Multicast {
                    seq,
                    dests,
                    data,
                    tree,
                } => eng.post_multicast(seq, &dests, data, tree),
                Cmd::P2p { to, seq, data } => eng.post_p2p(to, seq, data),
                Cmd::Control(_) | Cmd::Worm { .. } => Ok(()),
            }),
        };
        if let Err(e) = res {
            self.sh
                .inbox
                .fatal(Error::Protocol(format!("NI refused a host request: {e}")));
        }
        // Small packets went out from this thread; what the sockets could
        // not take waits for the writer tasks, which need the runtime run.
        let unflushed = match &self.sh.fabric {
            Some(f) => !f.out.is_flushed(),
            None => lock(&self.sh.writers)
                .iter()
                .flatten()
                .any(|o| !o.is_flushed()),
        };
        if unflushed {
            self.drive.tick();
        }
        Ok(())
    }

    /// Flush every connection, say goodbye to every peer, and stop the NI.
    pub(crate) fn shutdown(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        // Orderly close: every writer flushes what it has, sends Bye, and
        // shuts its half of the connection down.
        if let Some(f) = &self.sh.fabric {
            f.closing.store(true, std::sync::atomic::Ordering::Release);
            f.out.close(fablink::bye(self.sh.me));
        }
        let bye = encode_packet(&Packet {
            header: Header::new(
                Kind::Bye,
                self.sh.job,
                0,
                self.sh.me as u32,
                self.sh.me as u32,
                0,
            ),
            route: Route::None,
            payload: Bytes::new(),
        });
        for out in lock(&self.sh.writers).iter().flatten() {
            out.close(bye.clone());
        }
        let tasks = std::mem::take(&mut self.writer_tasks);
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
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn write_hello<T: Serialize, S: AsyncWrite + Unpin>(s: &mut S, msg: &T) -> Result<(), Error> {
    let body = postcard::to_stdvec(msg).map_err(|e| Error::Protocol(e.to_string()))?;
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(&body);
    s.write_all(&buf).await?;
    Ok(())
}

async fn read_hello<T: DeserializeOwned, S: AsyncRead + Unpin>(s: &mut S) -> Result<T, Error> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_HELLO {
        return Err(Error::Protocol(format!("handshake of {len} bytes")));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await?;
    postcard::from_bytes(&body).map_err(|e| Error::Protocol(format!("bad handshake: {e}")))
}

fn check_peer(h: &PeerHello, job: &JobEnv, expect: Option<usize>) -> Result<usize, String> {
    if h.version != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {} (want {PROTOCOL_VERSION})",
            h.version
        ));
    }
    if h.token != job.token {
        return Err("wrong job token".into());
    }
    let r = h.rank as usize;
    if r >= job.size || r == job.rank || expect.is_some_and(|e| e != r) {
        return Err(format!("unexpected rank {r}"));
    }
    Ok(r)
}

/// Read and check the handshake of an incoming connection.
async fn screen<S: AsyncRead + Unpin>(mut s: S, job: &JobEnv) -> Result<(usize, S), String> {
    match tokio::time::timeout(HELLO_TIMEOUT, read_hello::<PeerHello, S>(&mut s)).await {
        Ok(Ok(h)) => check_peer(&h, job, None).map(|r| (r, s)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no handshake within {HELLO_TIMEOUT:?}")),
    }
}

/// After the mesh is built the listener stays open, and every connection to
/// it is screened, logged and closed: nothing joins a running job, and a
/// stranger's bytes never reach the engine.
async fn gatekeeper(listener: TcpListener, unix: Option<UnixListener>, job: JobEnv) {
    loop {
        let (conn, from) = match accept_any(&listener, unix.as_ref()).await {
            Ok(c) => c,
            Err(_) => return,
        };
        let job = job.clone();
        tokio::spawn(async move {
            let screened = match conn {
                Conn::Tcp(s) => screen(s, &job).await.map(|(r, _)| r),
                Conn::Unix(s) => screen(s, &job).await.map(|(r, _)| r),
            };
            let why = match screened {
                Ok(r) => format!("rank {r} is already connected"),
                Err(why) => why,
            };
            tracing::warn!(%from, %why, "refusing connection to a running job");
        });
    }
}

/// Accept the next connection on either listener.
async fn accept_any(
    tcp: &TcpListener,
    unix: Option<&UnixListener>,
) -> std::io::Result<(Conn, String)> {
    let unix_accept = async {
        match unix {
            Some(l) => l.accept().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        acc = tcp.accept() => {
            let (s, from) = acc?;
            s.set_nodelay(true)?;
            Ok((Conn::Tcp(s), from.to_string()))
        }
        acc = unix_accept => {
            let (s, _) = acc?;
            Ok((Conn::Unix(s), "a Unix-domain socket".to_string()))
        }
    }
}

/// The listeners a rank accepts peers on, and the host key it published.
struct Listeners {
    tcp: StdListener,
    unix: Option<std::os::unix::net::UnixListener>,
    host: Option<String>,
}

/// Our side of an outgoing handshake: say hello, check the answer.
async fn greet<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    me: &PeerHello,
    job: &JobEnv,
    j: usize,
    addr: &str,
) -> Result<(), Error> {
    write_hello(s, me).await?;
    let theirs: PeerHello = read_hello(s).await.map_err(|e| Error::PeerLost {
        rank: j,
        reason: format!("handshake failed: {e}"),
    })?;
    check_peer(&theirs, job, Some(j))
        .map(|_| ())
        .map_err(|why| Error::Protocol(format!("rank {j} at {addr}: {why}")))
}

/// Build the full mesh: connect down, accept up. A peer on this host is
/// reached over its Unix socket, any other over TCP.
async fn mesh(
    job: &JobEnv,
    listener: &TcpListener,
    unix: Option<&UnixListener>,
    host: Option<&str>,
    addrs: &[Reach],
) -> Result<Vec<Option<Conn>>, Error> {
    let me = PeerHello {
        version: PROTOCOL_VERSION,
        token: job.token.clone(),
        rank: job.rank as u32,
    };
    let mut conns: Vec<Option<Conn>> = (0..job.size).map(|_| None).collect();
    let connect_down = async {
        let mut out = Vec::new();
        for (j, addr) in addrs.iter().enumerate().take(job.rank) {
            let conn = match addr.unix_on(host) {
                Some(name) => {
                    let mut s = connect_unix(name).map_err(|e| {
                        io_err(&format!("connecting to rank {j} at Unix socket @{name}"), e)
                    })?;
                    greet(&mut s, &me, job, j, name).await?;
                    Conn::Unix(s)
                }
                None => {
                    let tcp = addr.tcp.as_str();
                    let mut s = TcpStream::connect(tcp)
                        .await
                        .map_err(|e| io_err(&format!("connecting to rank {j} at {tcp}"), e))?;
                    s.set_nodelay(true)?;
                    greet(&mut s, &me, job, j, tcp).await?;
                    Conn::Tcp(s)
                }
            };
            out.push((j, conn));
        }
        Ok::<_, Error>(out)
    };
    let accept_up = async {
        let need = job.size - 1 - job.rank;
        let mut out = Vec::new();
        let mut seen = vec![false; job.size];
        let (tx, mut rx) = mpsc::unbounded_channel();
        // Handshakes run concurrently, so a silent or slow stranger cannot
        // hold up the peers behind it.
        while out.len() < need {
            tokio::select! {
                acc = accept_any(listener, unix) => {
                    let (conn, from) = acc?;
                    let tx = tx.clone();
                    let job = job.clone();
                    tokio::spawn(async move {
                        let screened = match conn {
                            Conn::Tcp(s) => screen(s, &job).await.map(|(r, s)| (r, Conn::Tcp(s))),
                            Conn::Unix(s) => screen(s, &job).await.map(|(r, s)| (r, Conn::Unix(s))),
                        };
                        match screened {
                            Ok((r, s)) if r > job.rank => {
                                let _ = tx.send((r, s, from));
                            }
                            Ok((r, _)) => {
                                tracing::warn!(%from, rank = r, "refusing misdirected peer connection");
                            }
                            Err(why) => tracing::warn!(%from, %why, "refusing connection"),
                        }
                    });
                }
                Some((r, mut conn, from)) = rx.recv() => {
                    if seen[r] {
                        tracing::warn!(%from, rank = r, "refusing a second connection from the same rank");
                        continue;
                    }
                    match &mut conn {
                        Conn::Tcp(s) => write_hello(s, &me).await?,
                        Conn::Unix(s) => write_hello(s, &me).await?,
                    }
                    seen[r] = true;
                    out.push((r, conn));
                }
            }
        }
        Ok::<_, Error>(out)
    };
    let (down, up) = tokio::try_join!(connect_down, accept_up)?;
    for (r, s) in down.into_iter().chain(up) {
        conns[r] = Some(s);
    }
    Ok(conns)
}

struct Shared {
    me: usize,
    size: usize,
    job: u32,
    engine: Mutex<NiEngine>,
    writers: Mutex<Vec<Option<Arc<Out>>>>,
    inbox: Arc<Inbox>,
    /// The host's shared-memory arenas (none without Unix sockets).
    shm: Option<Arc<Shm>>,
    /// Fabric mode: the one link, to the switch fabric.
    fabric: Option<Arc<FabricState>>,
}

/// A packet's bytes (header, route, payload) in one buffer.
fn encode_packet(p: &Packet) -> Bytes {
    let mut b = BytesMut::new();
    p.encode_head(&mut b);
    b.extend_from_slice(&p.payload);
    b.freeze()
}

/// Lock, ignoring poison (a panicked holder left the best state there is).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Send a control message to every peer.
fn send_control(sh: &Shared, msg: &Control) {
    let payload = Bytes::from(msg.encode());
    let seq = match msg {
        Control::Probe { seq, .. } | Control::Mismatch { seq, .. } => *seq,
    };
    let me = sh.me as u32;
    let header = Header::new(Kind::Control, sh.job, seq, me, me, payload.len() as u64);
    if let Some(f) = &sh.fabric {
        for peer in (0..sh.size).filter(|&p| p != sh.me) {
            let packet = Packet {
                header,
                route: Route::None,
                payload: payload.clone(),
            };
            f.send(peer, packet, Ambient::Idle);
        }
        return;
    }
    for out in lock(&sh.writers).clone().into_iter().flatten() {
        out.send(Packet {
            header,
            route: Route::None,
            payload: payload.clone(),
        });
    }
}

/// Fabric mode: packet `p` from rank `from` reached this NI at `arrival`
/// (model time) for a message posted at `post`.
fn fabric_packet_in(sh: &Shared, from: usize, p: Packet, arrival: u64, post: u64) {
    let Some(f) = sh.fabric.as_ref() else {
        return;
    };
    match p.header.kind {
        // Untimed: control messages take no model time.
        Kind::Control => {
            if let Err(e) = control_in(sh, from, &p.payload) {
                sh.inbox.lost(from, format!("protocol violation: {e}"));
            }
            return;
        }
        Kind::Heartbeat | Kind::Bye => return,
        Kind::Bcast | Kind::Multicast | Kind::P2p => {}
    }
    let ready = f.received(arrival);
    if let Some(worm) = crate::worms::Worm::of_route(&p.route) {
        let got = worm
            .map_err(|e| e.to_string())
            .and_then(|w| f.worm_in(sh.me, sh.size, w, p, post));
        match got {
            Ok(Some(p)) => deliver(sh, [(p, Some(f.delivered(ready, post)))]),
            Ok(None) => {}
            Err(e) => sh
                .inbox
                .lost(from, format!("protocol violation: bad worm packet: {e}")),
        }
        return;
    }
    let res = with_engine(sh, Ambient::Forward { ready, post }, |eng| {
        eng.packet_in(from, p)
    });
    if let Err(e) = res {
        sh.inbox.lost(
            from,
            format!("protocol violation: bad packet through the fabric: {e}"),
        );
    }
}

/// A control message from rank `from`; `Err` says why it is malformed.
fn control_in(sh: &Shared, from: usize, payload: &[u8]) -> Result<(), String> {
    let msg = Control::decode(payload).map_err(|e| format!("malformed control message: {e}"))?;
    for notice in sh.inbox.control(from, msg) {
        send_control(sh, &notice);
    }
    Ok(())
}

/// Hand packets to the host, announcing any mismatch they reveal.
fn deliver(sh: &Shared, packets: impl IntoIterator<Item = (Packet, Option<crate::inbox::Stamp>)>) {
    for notice in sh.inbox.deliver_stamped(packets) {
        send_control(sh, &notice);
    }
}

/// Run `f` on the engine, then carry out what it queued: the sends on the
/// writers, then the deliveries to the host in one batch (and announce any
/// mismatch the delivery revealed). `amb` says when, in model time, the
/// packets are ready (fabric mode; ignored otherwise).
fn with_engine<T>(sh: &Shared, amb: Ambient, f: impl FnOnce(&mut NiEngine) -> T) -> T {
    let mut deliveries = Vec::new();
    let mut sends = Vec::new();
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
    if let Some(fab) = &sh.fabric {
        for (to, packet) in sends {
            fab.send(to, packet, amb);
        }
        if !deliveries.is_empty() {
            let stamp = match amb {
                Ambient::Forward { ready, post } => Some(fab.delivered(ready, post)),
                _ => None,
            };
            deliver(sh, deliveries.into_iter().map(|p| (p, stamp)));
        }
        return r;
    }
    if !sends.is_empty() {
        let writers = lock(&sh.writers).clone();
        for (to, packet) in sends {
            if let Some(Some(out)) = writers.get(to) {
                // A dead connection has already reported why.
                out.send(packet);
            }
        }
    }
    if !deliveries.is_empty() {
        deliver(sh, deliveries.into_iter().map(|p| (p, None)));
    }
    r
}

/// Connect to every peer, then start the gatekeeper, and a reader and a
/// writer per peer. Returns the links and the writers' tasks.
async fn setup(
    cfg: &Config,
    job: &JobEnv,
    listeners: Listeners,
    addrs: &[Reach],
    sh: Arc<Shared>,
) -> Result<(Vec<Option<Link>>, Vec<tokio::task::JoinHandle<()>>), Error> {
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
    let conns = tokio::time::timeout(
        cfg.timeout,
        mesh(job, &listener, unix.as_ref(), host, addrs),
    )
    .await
    .map_err(|_| Error::Timeout {
        op: "connecting to peers".into(),
        after: cfg.timeout,
        detail: format!("rank {} of {}", job.rank, job.size),
    })??;
    tokio::spawn(gatekeeper(listener, unix, job.clone()));
    let beat = (cfg.failure_timeout / 4).max(Duration::from_millis(10));
    let links: Vec<Option<Link>> = conns
        .iter()
        .map(|c| {
            c.as_ref().map(|c| match c {
                Conn::Tcp(_) => Link::Tcp,
                Conn::Unix(_) => Link::Unix,
            })
        })
        .collect();
    let mut writer_tasks = Vec::new();
    for (peer, conn) in conns.into_iter().enumerate() {
        let Some(conn) = conn else { continue };
        // Descriptors go only to a Unix peer that mapped the host's arenas
        // (it published one of its own); it may send us some in return.
        let shm = match conn {
            Conn::Unix(_) => sh.shm.clone(),
            Conn::Tcp(_) => None,
        };
        let shm_out = shm.clone().filter(|_| addrs[peer].shm.is_some());
        let (rd, half) = conn.split();
        let out = Arc::new(Out::new(peer, half, shm_out));
        lock(&sh.writers)[peer] = Some(out.clone());
        let heartbeat = encode_packet(&Packet {
            header: Header::new(
                Kind::Heartbeat,
                sh.job,
                0,
                job.rank as u32,
                job.rank as u32,
                0,
            ),
            route: Route::None,
            payload: Bytes::new(),
        });
        writer_tasks.push(tokio::spawn(out.run(sh.inbox.clone(), heartbeat, beat)));
        // Silence for 90% of the bound declares the peer lost, leaving the
        // rest for waking the waiting call.
        let silence = cfg.failure_timeout.mul_f64(0.9);
        tokio::spawn(reader(peer, rd, sh.clone(), silence, shm));
    }
    Ok((links, writer_tasks))
}

/// Why a read from a peer stopped.
pub(crate) enum ReadFail {
    Io(std::io::Error),
    Silent,
}

/// Declares a peer silent when nothing has come from it for `within`.
///
/// One timer per connection, pushed back lazily: a completed read only
/// notes the time, and when the timer fires early it is re-armed for the
/// real deadline (a timer per read cost a timer-wheel insertion and removal
/// for every packet).
pub(crate) struct Silence {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    heard: tokio::time::Instant,
    within: Duration,
}

impl Silence {
    pub(crate) fn new(within: Duration) -> Silence {
        let now = tokio::time::Instant::now();
        Silence {
            sleep: Box::pin(tokio::time::sleep_until(now + within)),
            heard: now,
            within,
        }
    }

    /// Something arrived.
    pub(crate) fn heard(&mut self) {
        self.heard = tokio::time::Instant::now();
    }

    /// Run `read` to its end, unless the peer goes silent first. (`read`
    /// need not be cancel-safe: it is dropped only when the peer is given up.)
    pub(crate) async fn guard<T>(
        &mut self,
        read: impl std::future::Future<Output = std::io::Result<T>>,
    ) -> Result<T, ReadFail> {
        tokio::pin!(read);
        loop {
            tokio::select! {
                biased;
                r = &mut read => return r.map_err(ReadFail::Io),
                _ = self.sleep.as_mut() => {
                    let due = self.heard + self.within;
                    if tokio::time::Instant::now() >= due {
                        return Err(ReadFail::Silent);
                    }
                    self.sleep.as_mut().reset(due);
                }
            }
        }
    }
}

/// Read exactly `n` bytes into `buf`'s spare capacity (no zeroing first;
/// a large payload bypasses the reader's buffer, so it is copied only once).
async fn read_payload<R: AsyncReadExt + Unpin>(
    r: &mut R,
    buf: &mut BytesMut,
    n: usize,
) -> std::io::Result<()> {
    while buf.len() < n {
        let want = n - buf.len();
        if r.read_buf(&mut (&mut *buf).limit(want)).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
    }
    Ok(())
}

async fn reader(
    peer: usize,
    rd: Rd,
    sh: Arc<Shared>,
    failure_timeout: Duration,
    shm: Option<Arc<Shm>>,
) {
    let mut r = BufReader::with_capacity(READ_BUFFER, rd);
    let inbox = sh.inbox.clone();
    let lost = |f: ReadFail| {
        if inbox.said_bye(peer) {
            return;
        }
        let reason = match f {
            ReadFail::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                "connection closed without goodbye (process died?)".to_string()
            }
            ReadFail::Io(e) => format!("connection failed: {e}"),
            ReadFail::Silent => {
                format!("no data and no heartbeat for {failure_timeout:?} (hung or unreachable)")
            }
        };
        inbox.lost(peer, reason);
    };
    // A peer that broke the protocol is cut off like a dead one: its bytes can
    // no longer be trusted to line up.
    let violation = |what: String| inbox.lost(peer, format!("protocol violation: {what}"));
    let mut silence = Silence::new(failure_timeout);
    loop {
        let mut hb = [0u8; HEADER_LEN];
        if let Err(f) = silence.guard(r.read_exact(&mut hb)).await {
            lost(f);
            return;
        }
        silence.heard();
        let (mut h, flags) = match Header::decode_flagged(&hb) {
            Ok(x) => x,
            Err(e) => return violation(format!("malformed header: {e}")),
        };
        if h.job != sh.job || h.source as usize != peer {
            return violation(format!(
                "header of job {:#x} from rank {} on rank {peer}'s connection",
                h.job, h.source
            ));
        }
        let mut rb = vec![0u8; h.route_len as usize];
        if let Err(f) = silence.guard(r.read_exact(&mut rb)).await {
            lost(f);
            return;
        }
        let route = match Route::decode(h.route_kind, &rb) {
            Ok(rt) => rt,
            Err(e) => return violation(format!("malformed route header: {e}")),
        };
        let mut payload = BytesMut::with_capacity(h.payload_len as usize);
        let n = h.payload_len as usize;
        if let Err(f) = silence.guard(read_payload(&mut r, &mut payload, n)).await {
            lost(f);
            return;
        }
        silence.heard();
        match h.kind {
            Kind::Heartbeat => continue,
            Kind::Bye => {
                inbox.mark_bye(peer);
                // No heartbeats follow a goodbye; the close comes soon.
                silence.within = SHUTDOWN_FLUSH.max(failure_timeout);
                continue;
            }
            Kind::Control => {
                if let Err(e) = control_in(&sh, peer, &payload) {
                    return violation(e);
                }
                continue;
            }
            Kind::Bcast | Kind::Multicast | Kind::P2p => {}
        }
        let payload = if flags == FLAG_SHM {
            let opened = match &shm {
                Some(s) => ShmDesc::decode(&payload)
                    .map_err(|e| e.to_string())
                    .and_then(|d| s.open_desc(&d)),
                None => Err("a shared-memory descriptor on a link without one".into()),
            };
            match opened {
                // The same bound `Header::decode` puts on inline payloads.
                Ok(b)
                    if h.offset
                        .checked_add(b.len() as u64)
                        .is_some_and(|e| e <= h.msg_len) =>
                {
                    h.payload_len = b.len() as u32;
                    b
                }
                Ok(b) => {
                    return violation(format!(
                        "shared-memory payload of {} bytes at offset {} of a {}-byte message",
                        b.len(),
                        h.offset,
                        h.msg_len
                    ))
                }
                Err(e) => return violation(e),
            }
        } else {
            payload.freeze()
        };
        let packet = Packet {
            header: h,
            route,
            payload,
        };
        let res = with_engine(&sh, Ambient::Idle, |eng| eng.packet_in(peer, packet));
        if let Err(e) = res {
            return violation(format!("bad packet: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_addresses_round_trip_and_pick_the_link() {
        let both = Reach {
            tcp: "10.0.0.1:4000".into(),
            unix: Some(("mcast-1-2-3".into(), "boot-42".into())),
            shm: Some("/dev/shm/mcast-1-2-3".into()),
        };
        assert_eq!(Reach::parse(&both.encode()), both);
        assert_eq!(both.unix_on(Some("boot-42")), Some("mcast-1-2-3"));
        assert_eq!(both.unix_on(Some("other-host")), None);
        assert_eq!(both.unix_on(None), None);
        let tcp_only = Reach::parse("10.0.0.2:4001");
        assert_eq!(tcp_only.unix, None);
        assert_eq!(tcp_only.unix_on(Some("boot-42")), None);
        // A name without a host key (or junk) falls back to TCP.
        assert_eq!(Reach::parse("1.2.3.4:5 unix=x").unix, None);
        assert_eq!(Reach::parse("1.2.3.4:5 zzz host=h").unix, None);
        assert_eq!(Reach::parse("").tcp, "");
        // An arena without a Unix socket is useless: dropped.
        assert_eq!(Reach::parse("1.2.3.4:5 shm=/dev/shm/mcast-x").shm, None);
    }
}
