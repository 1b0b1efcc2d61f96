//! Links between hosts over QUIC (`MCAST_TRANSPORT=quic`): mutual TLS
//! with the job's own CA (`crate::quic`), one bidirectional stream per pair
//! of ranks carrying the same framing as a TCP link, so the mesh's reader
//! (`net/read.rs`) and writer (`crate::outq`) serve it unchanged.
//!
//! # Who dials
//!
//! As in the socket mesh, rank i dials every j < i and accepts every
//! j > i, here only the peers of other hosts (the same host keeps its Unix
//! sockets and rings). The dialler insists on a certificate naming the rank
//! it dials; the acceptor learns the peer's rank from its certificate and
//! takes it only if the rendezvous said that rank would come (another
//! host's rank above this one, not yet connected), and if the job-token
//! hello on the stream names the same rank. Refusals are logged with the
//! peer's address and the mesh waits on for the right peer (bounded by the
//! start-up timeout of `mesh.rs`).
//!
//! # The write side
//!
//! The writer (`Out`) hands quinn the queued chunks (`Bytes`, no copy) on
//! the sender's thread, polling the stream's write once; what the stream's
//! flow control does not take yet waits in the queue for the writer task,
//! as on a full socket. A goodbye's shutdown finishes the stream and waits
//! (bounded) for the peer to acknowledge it. (The first version wrote into
//! a Unix socket pair that a task copied into the stream: one more copy,
//! and two more task wake-ups, per packet.)
//!
//! # Failure
//!
//! The runtime's heartbeats go over the stream like any packet; quinn's
//! idle timeout is the failure bound, with keep-alives at a third of it so
//! that a connection made early survives a slow start-up.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Semaphore};

use super::connect::{self, Reach};
use super::link::io_err;
use super::read::Rd;
use crate::bootstrap::{PeerHello, PROTOCOL_VERSION};
use crate::config::{JobEnv, ENV_QUIC_IDENTITY};
use crate::error::Error;
use crate::outq::Half;
use crate::quic::{self, LinkOptions, RankIdentity};

/// Handshakes the gatekeeper runs at once after start-up.
const GATE_HANDSHAKES: usize = 4;
/// How long an accepted connection may take to open its stream and say
/// hello (as for TCP).
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// A QUIC link, ready for the mesh: its read half and the write half the
/// writer uses.
pub(crate) struct QuicLink {
    pub(crate) rd: Rd,
    pub(crate) half: Half,
}

/// This rank's side before the runtime exists: its identity and the UDP
/// socket it published.
pub(crate) struct QuicSide {
    pub(crate) identity: RankIdentity,
    pub(crate) socket: UdpSocket,
}

/// Read this rank's bundle from `MCAST_QUIC_IDENTITY` and bind the UDP
/// socket on `bind` (any port). Fails, naming the variable, when the bundle
/// is missing, malformed, or for another rank.
pub(crate) fn prepare(bind: &str, rank: usize) -> Result<(QuicSide, u16), Error> {
    prepare_with(std::env::var(ENV_QUIC_IDENTITY), bind, rank)
}

/// [`prepare`] with the variable's value given.
fn prepare_with(
    value: Result<String, std::env::VarError>,
    bind: &str,
    rank: usize,
) -> Result<(QuicSide, u16), Error> {
    let identity = super::register::identity_from(value, rank)?;
    let socket = UdpSocket::bind((bind, 0))
        .map_err(|e| io_err(&format!("binding UDP on {bind} for QUIC"), e))?;
    let port = socket.local_addr()?.port();
    Ok((QuicSide { identity, socket }, port))
}

/// Check that the bundle is of job `job` (known after the rendezvous).
pub(crate) fn check_job(side: &QuicSide, job: u32) -> Result<(), Error> {
    if side.identity.job() == job {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "{ENV_QUIC_IDENTITY} is for job {:08x}, this is job {job:08x}",
        side.identity.job()
    )))
}

/// The QUIC options of a link: idle timeout = the failure bound.
pub(crate) fn options(bound: Duration) -> LinkOptions {
    let bound = bound.max(Duration::from_millis(30));
    LinkOptions {
        idle_timeout: bound,
        keep_alive: Some(bound / 3),
    }
}

/// A link from an established stream (the stream keeps its connection).
fn link(send: quinn::SendStream, recv: quinn::RecvStream) -> QuicLink {
    QuicLink {
        rd: Box::new(recv),
        half: Half::Quic(send),
    }
}

/// Whether rank `r` is to be reached over QUIC from a rank on `host`.
fn remote(a: &Reach, host: Option<&str>) -> bool {
    a.unix_on(host).is_none()
}

/// The endpoint once the mesh is built, with what its [`gatekeeper`]
/// needs to run handshakes.
pub(crate) struct Gate {
    ep: quinn::Endpoint,
    identity: RankIdentity,
    opts: LinkOptions,
    /// The job's size (a certificate for a rank beyond it is no rank).
    size: usize,
}

/// Connect to every peer of another host: dial down, accept up. Returns
/// the links (by rank) and the endpoint, which then refuses strangers.
pub(crate) async fn mesh(
    job: &JobEnv,
    side: QuicSide,
    host: Option<&str>,
    addrs: &[Reach],
    opts: LinkOptions,
) -> Result<(Vec<Option<QuicLink>>, Gate), Error> {
    let QuicSide { identity, socket } = side;
    let ep = quic::endpoint_on(&identity, socket, &opts)
        .map_err(|e| Error::InvalidArgument(format!("QUIC endpoint: {e}")))?;
    tracing::debug!(addr = ?ep.local_addr(), rank = job.rank, "quic: endpoint");
    let me = PeerHello {
        version: PROTOCOL_VERSION,
        token: job.token.clone(),
        rank: job.rank as u32,
    };
    let wanted: Vec<bool> = addrs
        .iter()
        .enumerate()
        .map(|(r, a)| r != job.rank && remote(a, host))
        .collect();
    let dial_down = async {
        let mut out = Vec::new();
        for (j, a) in addrs.iter().enumerate().take(job.rank) {
            if !wanted[j] {
                continue;
            }
            let addr = a.udp_addr().ok_or_else(|| {
                Error::Protocol(format!(
                    "rank {j} ({}) offers no QUIC endpoint: is MCAST_TRANSPORT=quic set \
                     for every rank?",
                    a.tcp
                ))
            })?;
            let conn = quic::connect(&ep, &identity, addr, j as u32, &opts)
                .await
                .map_err(|e| Error::PeerLost {
                    rank: j,
                    reason: format!("QUIC handshake with {addr} failed: {e}"),
                })?;
            let lost = |e: &dyn std::fmt::Display| Error::PeerLost {
                rank: j,
                reason: format!("QUIC stream to {addr}: {e}"),
            };
            let (send, recv) = conn.open_bi().await.map_err(|e| lost(&e))?;
            let mut s = tokio::io::join(recv, send);
            connect::greet(&mut s, &me, job, j, &addr.to_string()).await?;
            let (recv, send) = s.into_inner();
            drop(conn);
            out.push((j, link(send, recv)));
        }
        Ok::<_, Error>(out)
    };
    let accept_up = async {
        let need = wanted.iter().skip(job.rank + 1).filter(|&&w| w).count();
        let published: Vec<Option<SocketAddr>> = addrs.iter().map(Reach::udp_addr).collect();
        let mut out = Vec::new();
        let mut seen = vec![false; job.size];
        let (tx, mut rx) = mpsc::unbounded_channel();
        while out.len() < need {
            tokio::select! {
                incoming = ep.accept() => {
                    let incoming = incoming.ok_or_else(|| {
                        Error::Protocol("the QUIC endpoint closed during start-up".into())
                    })?;
                    let (tx, job, identity) = (tx.clone(), job.clone(), identity.clone());
                    let (wanted, published) = (wanted.clone(), published.clone());
                    tokio::spawn(async move {
                        let expect = (&wanted[..], &published[..]);
                        if let Some(x) = screen(incoming, &identity, &opts, &job, expect).await {
                            let _ = tx.send(x);
                        }
                    });
                }
                Some((r, conn, mut send, recv)) = rx.recv() => {
                    if seen[r] {
                        tracing::warn!(peer = %conn.remote_address(), rank = r,
                            "quic: refusing a second connection from the same rank");
                        conn.close(0u32.into(), b"already connected");
                        continue;
                    }
                    connect::write_hello(&mut send, &me).await?;
                    seen[r] = true;
                    drop(conn);
                    out.push((r, link(send, recv)));
                }
            }
        }
        Ok::<_, Error>(out)
    };
    let (down, up) = tokio::try_join!(dial_down, accept_up)?;
    let mut links: Vec<Option<QuicLink>> = (0..job.size).map(|_| None).collect();
    for (r, l) in down.into_iter().chain(up) {
        links[r] = Some(l);
    }
    let size = job.size;
    Ok((
        links,
        Gate {
            ep,
            identity,
            opts,
            size,
        },
    ))
}

type Screened = (
    usize,
    quinn::Connection,
    quinn::SendStream,
    quinn::RecvStream,
);

/// The handshake of one incoming connection: its certificate must name a
/// rank the rendezvous said would come from another host and above us
/// (and from the UDP address that rank published),
/// and its hello (the job token) the same rank. A refusal is logged with
/// the peer's address.
async fn screen(
    incoming: quinn::Incoming,
    identity: &RankIdentity,
    opts: &LinkOptions,
    job: &JobEnv,
    (wanted, published): (&[bool], &[Option<SocketAddr>]),
) -> Option<Screened> {
    let addr = incoming.remote_address();
    // Refusals at the handshake are logged by the identity layer.
    let acc = quic::accept_incoming(incoming, identity, opts).await.ok()?;
    let refuse = |why: String| {
        tracing::warn!(peer = %addr, %why, "quic: refusing connection");
        acc.connection.close(0u32.into(), b"refused");
        None
    };
    let r = acc.rank as usize;
    if r >= job.size || r <= job.rank || !wanted[r] {
        return refuse(format!("rank {r} was not expected here"));
    }
    // A rank dials from the endpoint it published.
    if let Some(p) = published[r].filter(|&p| p != addr) {
        return refuse(format!("rank {r} published {p}, not this address"));
    }
    let stream = tokio::time::timeout(HELLO_TIMEOUT, acc.connection.accept_bi()).await;
    let (send, recv) = match stream {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return refuse(format!("rank {r}: no stream: {e}")),
        Err(_) => return refuse(format!("rank {r}: no stream within {HELLO_TIMEOUT:?}")),
    };
    match connect::screen(tokio::io::join(recv, send), job).await {
        Ok((h, s)) if h == r => {
            let (recv, send) = s.into_inner();
            Some((r, acc.connection, send, recv))
        }
        Ok((h, _)) => refuse(format!("certificate of rank {r}, hello of rank {h}")),
        Err(why) => refuse(format!("rank {r}: {why}")),
    }
}

/// After start-up nothing joins a running job: every new connection to
/// the endpoint runs the handshake (at most [`GATE_HANDSHAKES`] at once;
/// beyond that it is refused unread) and is then closed. A stranger is
/// refused at the handshake and logged with its address and why (no
/// certificate, another CA, expired: by the identity layer); a rank of this
/// job, whose certificate is good, is told the job is running, and logged.
pub(crate) async fn gatekeeper(gate: Gate) {
    let Gate {
        ep,
        identity,
        opts,
        size,
    } = gate;
    let busy = Arc::new(Semaphore::new(GATE_HANDSHAKES));
    let refused = |from: SocketAddr, why: &str| {
        if let Some(held) = connect::REFUSALS.admit(why, std::time::Instant::now()) {
            tracing::warn!(%from, "quic: refusing a connection to a running job: {why}{}",
                connect::also(held));
        }
    };
    while let Some(incoming) = ep.accept().await {
        let from = incoming.remote_address();
        let Ok(permit) = busy.clone().try_acquire_owned() else {
            incoming.refuse();
            refused(from, "too many handshakes at once");
            continue;
        };
        let (identity, opts) = (identity.clone(), opts);
        tokio::spawn(async move {
            let _permit = permit;
            let hs = quic::accept_incoming(incoming, &identity, &opts);
            match tokio::time::timeout(HELLO_TIMEOUT, hs).await {
                Ok(Ok(acc)) if acc.rank as usize >= size => {
                    acc.connection.close(0u32.into(), b"no such rank");
                    let why = format!(
                        "rank {}'s certificate, but the job has {size} ranks",
                        acc.rank
                    );
                    refused(from, &why);
                }
                Ok(Ok(acc)) => {
                    acc.connection.close(0u32.into(), b"job running");
                    let why = format!("rank {}'s certificate, but the job is running", acc.rank);
                    refused(from, &why);
                }
                // A refusal is logged by the identity layer.
                Ok(Err(e)) if e.refusal().is_some() => {}
                Ok(Err(e)) => refused(from, &format!("handshake failed: {e}")),
                Err(_) => refused(from, &format!("no handshake within {HELLO_TIMEOUT:?}")),
            }
        });
    }
}

#[cfg(test)]
#[path = "quicmesh_tests.rs"]
mod tests;
