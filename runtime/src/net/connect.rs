//! Joining a job over sockets: the addresses ranks publish at the
//! rendezvous (`register.rs`), and building the full mesh (rank i connects to every
//! j < i and accepts every j > i) with its handshake screening: both ends
//! exchange a [`PeerHello`] carrying the job token, a connection with the
//! wrong token, garbage or silence is refused and logged, and after the mesh
//! is built the gatekeeper refuses every stranger.

use std::net::{TcpListener as StdListener, ToSocketAddrs};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use serde::{de::DeserializeOwned, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc;

use super::link::io_err;
use super::read::Rd;
use crate::bootstrap::{PeerHello, PROTOCOL_VERSION};
use crate::config::{Config, JobEnv};
use crate::error::Error;
use crate::logging::{reason_kind, RateLimits};
use crate::outq::Half;

/// Largest handshake frame.
const MAX_HELLO: usize = 4096;
/// How long an incoming connection may take to send its handshake.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection to a peer, before it is split.
pub(crate) enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    pub(crate) fn split(self) -> (Rd, Half) {
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
/// written `ip:port unix=NAME host=KEY`, and under `MCAST_TRANSPORT=quic`
/// the UDP port of its QUIC endpoint on the same address, ` udp=PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reach {
    pub(crate) tcp: String,
    pub(crate) unix: Option<(String, String)>,
    /// The rank's shared-memory arena (only meaningful with `unix`).
    pub(crate) shm: Option<String>,
    /// The UDP port of the rank's QUIC endpoint (same IP as `tcp`).
    pub(crate) udp: Option<u16>,
}

impl Reach {
    pub(crate) fn encode(&self) -> String {
        let mut s = self.tcp.clone();
        if let Some((name, host)) = &self.unix {
            s += &format!(" unix={name} host={host}");
            if let Some(path) = &self.shm {
                s += &format!(" shm={path}");
            }
        }
        if let Some(port) = self.udp {
            s += &format!(" udp={port}");
        }
        s
    }

    /// Parse a published address; unknown fields are ignored, so a peer
    /// that offers only TCP is reached over TCP.
    pub(crate) fn parse(s: &str) -> Reach {
        let mut it = s.split_whitespace();
        let tcp = it.next().unwrap_or_default().to_string();
        let (mut name, mut host, mut shm, mut udp) = (None, None, None, None);
        for f in it {
            if let Some(v) = f.strip_prefix("unix=") {
                name = Some(v.to_string());
            } else if let Some(v) = f.strip_prefix("host=") {
                host = Some(v.to_string());
            } else if let Some(v) = f.strip_prefix("shm=") {
                shm = Some(v.to_string());
            } else if let Some(v) = f.strip_prefix("udp=") {
                udp = v.parse().ok();
            }
        }
        let unix = name.zip(host);
        Reach {
            shm: shm.filter(|_| unix.is_some()),
            tcp,
            unix,
            udp,
        }
    }

    /// The address of the rank's QUIC endpoint, if it published one.
    pub(crate) fn udp_addr(&self) -> Option<std::net::SocketAddr> {
        let tcp: std::net::SocketAddr = self.tcp.parse().ok()?;
        Some(std::net::SocketAddr::new(tcp.ip(), self.udp?))
    }

    /// The Unix socket to reach this rank by, if it lives on `host`.
    pub(crate) fn unix_on(&self, host: Option<&str>) -> Option<&str> {
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
pub(crate) fn bind_unix(rank: usize) -> Option<(std::os::unix::net::UnixListener, String, String)> {
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
pub(crate) fn bind_unix(
    _rank: usize,
) -> Option<(std::os::unix::net::UnixListener, String, String)> {
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

/// The address this rank listens on for peers: `MCAST_BIND` if set; else
/// with `MCAST_IF` the first address it selects; else, when the rendezvous
/// (under srun: srun's host) is elsewhere, this host's address on the route to it (the
/// interface that reaches the other hosts); else loopback. A rank of a job
/// whose rendezvous is elsewhere never listens on loopback unless told to
/// with `MCAST_BIND`: peers on other hosts could not reach it.
pub(crate) fn bind_addr(cfg: &Config, job: &JobEnv) -> Result<String, Error> {
    use crate::netif::{self, IfSelector};
    if let Some(b) = &cfg.bind {
        return Ok(b.clone());
    }
    // Under srun: toward srun's host; under mclaunch: toward the rendezvous.
    let remote = job
        .bind_toward
        .or_else(|| {
            job.rendezvous
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .map(|a| a.ip())
        })
        .filter(|ip| !netif::is_loopback(ip));
    if cfg.iface.is_none() && remote.is_none() {
        return Ok("127.0.0.1".into());
    }
    let selector = match &cfg.iface {
        Some(list) => Some(list.parse::<IfSelector>().map_err(|e| {
            Error::InvalidArgument(format!("{}={list}: {e}", crate::config::ENV_IF))
        })?),
        None => None,
    };
    let ifs = netif::list_interfaces()
        .map_err(|e| Error::InvalidArgument(format!("cannot list the interfaces: {e}")))?;
    let route = remote.and_then(|ip| netif::route_source(ip).ok());
    let ip = netif::pick_bind(selector.as_ref(), &ifs, route)
        .map_err(|e| Error::InvalidArgument(format!("no address to listen on: {e}")))?;
    if remote.is_some() && netif::is_loopback(&ip) {
        return Err(Error::InvalidArgument(format!(
            "this rank would listen on the loopback address {ip}, but the job spans hosts \
             (the rendezvous or srun is at {}), whose ranks could not reach it (check {})",
            remote.map_or_else(String::new, |r| r.to_string()),
            crate::config::ENV_IF
        )));
    }
    Ok(ip.to_string())
}

pub(super) async fn write_hello<T: Serialize, S: AsyncWrite + Unpin>(
    s: &mut S,
    msg: &T,
) -> Result<(), Error> {
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
pub(super) async fn screen<S: AsyncRead + Unpin>(
    mut s: S,
    job: &JobEnv,
) -> Result<(usize, S), String> {
    match tokio::time::timeout(HELLO_TIMEOUT, read_hello::<PeerHello, S>(&mut s)).await {
        Ok(Ok(h)) => check_peer(&h, job, None).map(|r| (r, s)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no handshake within {HELLO_TIMEOUT:?}")),
    }
}

/// Refused strangers are logged at most once a second per kind of reason
/// (a port scanner must not flood the log), with the count held back.
pub(super) static REFUSALS: LazyLock<RateLimits> =
    LazyLock::new(|| RateLimits::new(Duration::from_secs(1)));

/// The tail of a rate-limited line: how many like it were held back.
pub(super) fn also(held: u64) -> String {
    match held {
        0 => String::new(),
        n => format!(" (and {n} more refused since the last such line)"),
    }
}

/// After the mesh is built the listener stays open, and every connection to
/// it is screened, logged and closed: nothing joins a running job, and a
/// stranger's bytes never reach the engine.
pub(crate) async fn gatekeeper(listener: TcpListener, unix: Option<UnixListener>, job: JobEnv) {
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
            if let Some(held) = REFUSALS.admit(&reason_kind(&why), Instant::now()) {
                tracing::warn!(%from, %why, "refusing connection to a running job{}", also(held));
            }
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
pub(crate) struct Listeners {
    pub(crate) tcp: StdListener,
    pub(crate) unix: Option<std::os::unix::net::UnixListener>,
    pub(crate) host: Option<String>,
}

/// Our side of an outgoing handshake: say hello, check the answer.
pub(super) async fn greet<S: AsyncRead + AsyncWrite + Unpin>(
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
/// reached over its Unix socket, any other over TCP, or (`tcp_remote`
/// false: QUIC carries those, `quicmesh.rs`) not here.
pub(crate) async fn mesh(
    job: &JobEnv,
    listener: &TcpListener,
    unix: Option<&UnixListener>,
    host: Option<&str>,
    addrs: &[Reach],
    tcp_remote: bool,
) -> Result<Vec<Option<Conn>>, Error> {
    let wanted: Vec<bool> = addrs
        .iter()
        .map(|a| tcp_remote || a.unix_on(host).is_some())
        .collect();
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
                None if !tcp_remote => continue,
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
        let need = wanted.iter().skip(job.rank + 1).filter(|&&w| w).count();
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
                            Err(why) => {
                                if let Some(held) = REFUSALS.admit(&reason_kind(&why), Instant::now()) {
                                    tracing::warn!(%from, %why, "refusing connection{}", also(held));
                                }
                            }
                        }
                    });
                }
                Some((r, mut conn, from)) = rx.recv() => {
                    if seen[r] || !wanted[r] {
                        tracing::warn!(%from, rank = r, "refusing a second or unexpected connection from the rank");
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

#[cfg(test)]
#[path = "connect_tests.rs"]
mod tests;
