//! The rendezvous's connections, plain or TLS 1.3 (under QUIC mode), for
//! both ends: the server's [`accept`] (a handshake bounded by a deadline,
//! every refusal told apart for the log) and a rank's [`exchange`].
//! Certificates and configurations are `crate::quic::rdv`'s.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::{ClientConnection, ServerConnection, StreamOwned};

use crate::bootstrap::{read_frame, write_frame, Hello, RendezvousReply};
use crate::error::Error;
use crate::quic::{rdv, RankIdentity};

/// The first byte of every TLS handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// A TCP stream whose reads end at a deadline (each read waits at most
/// what is left of it, so a peer that drips bytes cannot stretch it), and
/// which remembers the first byte it read.
pub(crate) struct Timed {
    tcp: TcpStream,
    deadline: Option<Instant>,
    first: Option<u8>,
}

impl Timed {
    fn new(tcp: TcpStream, deadline: Option<Instant>) -> Self {
        Timed {
            tcp,
            deadline,
            first: None,
        }
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
            }
            self.tcp.set_read_timeout(Some(left))?;
        }
        let n = self.tcp.read(buf)?;
        if self.first.is_none() && n > 0 {
            self.first = Some(buf[0]);
        }
        Ok(n)
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

/// One rank's connection to the server, plain or TLS.
pub(crate) enum Conn {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ServerConnection, Timed>>),
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

impl Conn {
    /// Done writing: a TLS connection sends `close_notify` first.
    pub(crate) fn finish(&mut self) {
        match self {
            Conn::Plain(s) => {
                let _ = s.shutdown(Shutdown::Write);
            }
            Conn::Tls(s) => {
                s.conn.send_close_notify();
                while s.conn.wants_write() {
                    if !matches!(s.conn.write_tls(&mut s.sock), Ok(n) if n > 0) {
                        break;
                    }
                }
                let _ = s.sock.tcp.shutdown(Shutdown::Write);
            }
        }
    }
}

/// Why an incoming connection got no further than the handshake.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Closed before it sent a byte: not worth a word (as a plain one).
    Silent,
    /// Refused; the text, naming the peer, is for the log.
    Note(String),
}

/// The rendezvous's TLS settings.
pub(crate) struct ServerTls {
    pub(crate) config: Arc<rustls::ServerConfig>,
    pub(crate) job: u32,
}

/// Run the server's side of the TLS handshake on `tcp` by `deadline`:
/// the connection and the rank its certificate names, or why it is refused.
pub(crate) fn accept(
    tcp: TcpStream,
    peer: SocketAddr,
    tls: &ServerTls,
    deadline: Instant,
) -> Result<(Conn, u32), Refused> {
    let conn = ServerConnection::new(tls.config.clone())
        .map_err(|e| Refused::Note(format!("cannot serve TLS to {peer}: {e}")))?;
    let mut s = StreamOwned::new(conn, Timed::new(tcp, Some(deadline)));
    while s.conn.is_handshaking() {
        if let Err(e) = s.conn.complete_io(&mut s.sock) {
            return Err(refusal(peer, s.sock.first, &e));
        }
    }
    let rank = s
        .conn
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| rdv::client_rank(tls.job, c))
        .ok_or_else(|| {
            Refused::Note(format!(
                "refused a TLS connection from {peer}: its certificate names no rank"
            ))
        })?;
    Ok((Conn::Tls(Box::new(s)), rank))
}

/// How a failed server handshake is logged.
fn refusal(peer: SocketAddr, first: Option<u8>, e: &io::Error) -> Refused {
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    if let Some(r) = tls.and_then(rdv::refusal_of) {
        return Refused::Note(format!("refused a TLS connection from {peer}: {r}"));
    }
    if let Some(rustls::Error::AlertReceived(alert)) = tls {
        return Refused::Note(format!(
            "a TLS connection from {peer} ended: it refused the rendezvous's certificate \
             (TLS alert {alert:?}; a rank of another job?)"
        ));
    }
    match (first, e.kind()) {
        (None, io::ErrorKind::UnexpectedEof) => Refused::Silent,
        (_, io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => Refused::Note(format!(
            "ignoring connection from {peer}: no TLS handshake in time"
        )),
        (Some(b), _) if b != TLS_HANDSHAKE_RECORD => Refused::Note(format!(
            "refused a connection from {peer}: it does not speak TLS (a rank not in QUIC \
             mode, or no mcast rank): {e}"
        )),
        _ => Refused::Note(format!(
            "refused a TLS connection from {peer}: handshake failed: {e}"
        )),
    }
}

/// A rank's side over TLS: the handshake (`identity` presented, the
/// rendezvous's certificate checked), then `hello` and its reply, as over
/// plain TCP. The read and write timeouts set on `tcp` (`timeout`) bound
/// each step.
pub(crate) fn exchange(
    tcp: TcpStream,
    addr: SocketAddr,
    identity: &RankIdentity,
    hello: &Hello,
    timeout: Duration,
) -> Result<RendezvousReply, Error> {
    let setup = |e: crate::quic::ConfigError| {
        Error::InvalidArgument(format!("cannot set up TLS for the rendezvous: {e}"))
    };
    let config = rdv::client_config(identity).map_err(setup)?;
    let name = rdv::server_name(identity.job()).map_err(setup)?;
    let conn = ClientConnection::new(config, name)
        .map_err(|e| Error::InvalidArgument(format!("cannot start TLS: {e}")))?;
    let mut s = StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn
            .complete_io(&mut s.sock)
            .map_err(|e| match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout {
                    op: "rendezvous TLS handshake".into(),
                    after: timeout,
                    detail: format!(
                        "no TLS handshake from {addr} (a rendezvous without TLS, such as a \
                     plain srun step's? MCAST_TRANSPORT=quic needs mclaunch)"
                    ),
                },
                _ => client_error(addr, e),
            })?;
    }
    write_frame(&mut s, hello).map_err(|e| client_error_of(addr, e))?;
    read_frame(&mut s).map_err(|e| client_error_of(addr, e))
}

fn client_error_of(addr: SocketAddr, e: Error) -> Error {
    match e {
        Error::Io(io) => client_error(addr, io),
        other => other,
    }
}

/// A rank's TLS failure, said plainly. Timeouts stay I/O errors (the
/// caller names them).
fn client_error(addr: SocketAddr, e: io::Error) -> Error {
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    let why = match tls {
        Some(rustls::Error::AlertReceived(alert)) => format!(
            "the rendezvous at {addr} refused this rank's certificate (TLS alert {alert:?}; \
             its log says why)"
        ),
        Some(rustls::Error::InvalidCertificate(c)) => format!(
            "the rendezvous at {addr} presented a certificate this rank does not trust \
             ({c:?}): it is not this job's mclaunch"
        ),
        Some(other) => format!(
            "TLS with the rendezvous at {addr} failed: {other} (under MCAST_TRANSPORT=quic \
             the rendezvous must be mclaunch's, which speaks TLS)"
        ),
        None => match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe => format!(
                "the rendezvous at {addr} closed the connection during TLS: it does not \
                 speak TLS, or it refused this rank (under MCAST_TRANSPORT=quic the \
                 rendezvous must be mclaunch --transport quic's; a plain srun step's \
                 rendezvous has no TLS): {e}"
            ),
            _ => return Error::Io(e),
        },
    };
    Error::Protocol(why)
}
