//! The rendezvous server: ranks say [`Hello`], and once all of them have, each
//! gets the address table ([`RendezvousReply::Table`]). mclaunch runs one per
//! job; under plain `srun` (no PMI) task 0 runs one on the step's first node
//! (`net::register::exchange`). The server tells its owner what happens
//! through a callback ([`Notice`]); the owner tells it which ranks exited
//! ([`Server::rank_exited`]).
//!
//! Plain TCP ([`Server::start`]) or TLS 1.3 ([`Server::start_tls`], which
//! mclaunch uses under `--transport quic` or `quic-all`; `tls.rs` holds
//! both ends of it): the server presents the job CA's certificate for
//! `rendezvous.job-X.mcast.invalid` (`crate::quic::rdv`), each rank checks
//! it against the CA in its bundle and presents its rank certificate, and
//! the server requires a rank certificate of this job's CA. A connection
//! refused at the handshake (plaintext, no certificate, another CA,
//! expired) is logged with the peer's address and the job keeps waiting,
//! as for a wrong token; so is a hello that claims another rank than its
//! certificate names. The handshake and the hello share the hello's read
//! timeout. The frames inside are the same either way; a plain `srun`
//! step's rendezvous stays plain (QUIC mode needs mclaunch).
//!
//! Threads: a listener accepts connections; a short-lived reader per connection
//! reads its hello (bounded by a read timeout, so a silent stray costs nothing);
//! a coordinator owns the [`Roster`] and the deadline, which starts with the
//! first valid hello, so programs that never speak mcast are not affected.
//!
//! A hello with a wrong token is refused on its own connection and the job
//! keeps waiting: a stray must not break the job. A hello with the right token
//! that cannot be satisfied (other protocol version, other job size, rank out
//! of range, a rank claimed twice) fails the whole job at once, as does a rank
//! that exits before joining once others have joined.

mod roster;
pub(crate) mod tls;

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub use roster::{format_ranks, format_secs, ranks_phrase, Member, Roster, Verdict};

use crate::bootstrap::{job_id_from_token, read_frame, write_frame, Hello, RendezvousReply};
use crate::quic::{rdv, RendezvousIdentity};
use tls::{Conn, Refused, ServerTls};

/// How long a connection may take to send its hello.
const HELLO_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on writing a reply to one rank.
const REPLY_WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the server tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Every rank has joined and has been sent the table.
    Complete,
    /// The job cannot start (sent before the ranks are told).
    Failed(String),
    /// Something worth a line in the log (a stray refused, a bad
    /// connection); the job goes on.
    Note(String),
}

/// The owner's callback.
pub type Notify = Arc<dyn Fn(Notice) + Send + Sync>;

/// What the coordinator is told.
enum Input {
    Hello {
        stream: Conn,
        peer: SocketAddr,
        hello: Hello,
    },
    /// A rank's process ended (`how` describes the status).
    RankExited {
        rank: u32,
        how: String,
    },
    Stop,
}

/// A running rendezvous server. Dropping it stops the server.
pub struct Server {
    addr: SocketAddr,
    input: Sender<Input>,
    stop: Arc<AtomicBool>,
    listener: Option<JoinHandle<()>>,
}

impl Server {
    /// Serve a job of `size` ranks on `listener`. The deadline, `timeout`,
    /// starts with the first valid hello; what happens goes to `notify`.
    pub fn start(
        listener: TcpListener,
        size: u32,
        token: String,
        timeout: Duration,
        notify: Notify,
    ) -> io::Result<Server> {
        Server::start_with(listener, size, token, timeout, notify, None)
    }

    /// [`start`](Self::start), but every connection must be TLS 1.3 with
    /// a rank certificate of this job's CA (mutual TLS: the server presents
    /// `identity`, issued by the same CA). A connection refused at the
    /// handshake (plaintext, another CA, no certificate, expired) is logged
    /// as a [`Notice::Note`] and the job keeps waiting, as for a wrong
    /// token; so is a hello whose rank is not its certificate's.
    pub fn start_tls(
        listener: TcpListener,
        size: u32,
        token: String,
        timeout: Duration,
        notify: Notify,
        identity: &RendezvousIdentity,
    ) -> io::Result<Server> {
        let job = job_id_from_token(&token);
        if identity.job() != job {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the rendezvous's certificate is for job {:08x}, the token's job is {job:08x}",
                    identity.job()
                ),
            ));
        }
        let config = rdv::server_config(identity).map_err(io::Error::other)?;
        let tls = ServerTls { config, job };
        Server::start_with(listener, size, token, timeout, notify, Some(Arc::new(tls)))
    }

    fn start_with(
        listener: TcpListener,
        size: u32,
        token: String,
        timeout: Duration,
        notify: Notify,
        tls: Option<Arc<ServerTls>>,
    ) -> io::Result<Server> {
        let addr = listener.local_addr()?;
        let (input, inputs) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));

        let coordinator = Coordinator {
            roster: Roster::new(size, token),
            streams: (0..size).map(|_| None).collect(),
            exited_unjoined: Vec::new(),
            timeout,
            deadline: None,
            notify: notify.clone(),
        };
        thread::Builder::new()
            .name("rendezvous".into())
            .spawn(move || coordinator.run(inputs))?;

        let accept_input = input.clone();
        let accept_stop = stop.clone();
        let listener = thread::Builder::new()
            .name("rendezvous-accept".into())
            .spawn(move || accept_loop(listener, accept_input, accept_stop, notify, tls))?;

        Ok(Server {
            addr,
            input,
            stop,
            listener: Some(listener),
        })
    }

    /// Serve the rendezvous of a plain `srun` step, as its task 0, on every
    /// address of this node at `port`; the failures and notes go to the log
    /// (each rank reports its own failure).
    pub fn serve_step(
        port: u16,
        size: usize,
        token: &str,
        timeout: Duration,
    ) -> Result<Server, crate::Error> {
        let bind = SocketAddr::from(([0, 0, 0, 0], port));
        let io = |e: io::Error| {
            crate::Error::Io(io::Error::new(
                e.kind(),
                format!("task 0 cannot serve the srun step's rendezvous on {bind}: {e}"),
            ))
        };
        let listener = TcpListener::bind(bind).map_err(io)?;
        let notify: Notify = Arc::new(|n: Notice| match n {
            Notice::Complete => tracing::debug!("rendezvous: every task joined"),
            Notice::Failed(why) => tracing::error!("rendezvous failed: {why}"),
            Notice::Note(m) => tracing::warn!("rendezvous: {m}"),
        });
        let size = u32::try_from(size)
            .map_err(|_| crate::Error::InvalidArgument(format!("{size} tasks")))?;
        Server::start(listener, size, token.to_string(), timeout, notify).map_err(io)
    }

    /// The `ip:port` ranks connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Tell the rendezvous that a rank's process has ended.
    pub fn rank_exited(&self, rank: u32, how: String) {
        let _ = self.input.send(Input::RankExited { rank, how });
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.input.send(Input::Stop);
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept. If that fails the thread is left blocked,
        // which is harmless: it owns nothing the job needs.
        if TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok() {
            if let Some(t) = self.listener.take() {
                let _ = t.join();
            }
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    input: Sender<Input>,
    stop: Arc<AtomicBool>,
    notify: Notify,
    tls: Option<Arc<ServerTls>>,
) {
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, peer)) => {
                let (input, note, tls) = (input.clone(), notify.clone(), tls.clone());
                let spawned = thread::Builder::new()
                    .name("rendezvous-conn".into())
                    .spawn(move || read_hello(stream, peer, input, note, tls));
                if let Err(e) = spawned {
                    notify(Notice::Note(format!("dropped connection from {peer}: {e}")));
                }
            }
            Err(e) => {
                notify(Notice::Note(format!("accept failed: {e}")));
                // Back off so a persistent error (e.g. out of descriptors) does not spin.
                thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn read_hello(
    stream: TcpStream,
    peer: SocketAddr,
    input: Sender<Input>,
    notify: Notify,
    tls: Option<Arc<ServerTls>>,
) {
    let _ = stream.set_read_timeout(Some(HELLO_READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(REPLY_WRITE_TIMEOUT));
    // Under TLS the handshake and the hello share the read timeout.
    let (mut stream, cert_rank) = match tls {
        None => (Conn::Plain(stream), None),
        Some(tls) => {
            let deadline = Instant::now() + HELLO_READ_TIMEOUT;
            match tls::accept(stream, peer, &tls, deadline) {
                Ok((conn, rank)) => (conn, Some(rank)),
                Err(Refused::Silent) => return,
                Err(Refused::Note(m)) => return notify(Notice::Note(m)),
            }
        }
    };
    let hello: Hello = match read_frame(&mut stream) {
        Ok(h) => h,
        // A connection closed before a whole hello arrived is not worth a
        // word: typically a rank killed while connecting during teardown.
        Err(crate::Error::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof => return,
        Err(e) => {
            notify(Notice::Note(format!(
                "ignoring connection from {peer}: no valid hello ({e})"
            )));
            return;
        }
    };
    if let Some(rank) = cert_rank.filter(|&r| r != hello.rank) {
        let why = format!(
            "its certificate names rank {rank}, its hello claims rank {}",
            hello.rank
        );
        notify(Notice::Note(format!(
            "refused a hello from {peer} (pid {}): {why}",
            hello.pid
        )));
        let reason = format!("refused by the rendezvous: {why}");
        return reply(&mut stream, &RendezvousReply::Failed { reason });
    }
    if let Err(mpsc::SendError(Input::Hello { mut stream, .. })) = input.send(Input::Hello {
        stream,
        peer,
        hello,
    }) {
        // The coordinator has finished: the job's rendezvous is over.
        reply(
            &mut stream,
            &RendezvousReply::Failed {
                reason: "this job's rendezvous is already over".into(),
            },
        );
    }
}

fn reply(stream: &mut Conn, msg: &RendezvousReply) {
    // A rank that has gone away will be reported by its exit status.
    let _ = write_frame(stream, msg);
    stream.finish();
}

struct Coordinator {
    roster: Roster,
    streams: Vec<Option<Conn>>,
    /// Ranks that ended before joining, while no one had joined yet.
    exited_unjoined: Vec<(u32, String)>,
    timeout: Duration,
    deadline: Option<Instant>,
    notify: Notify,
}

impl Coordinator {
    fn run(mut self, inputs: Receiver<Input>) {
        loop {
            let input = match self.deadline {
                None => match inputs.recv() {
                    Ok(i) => i,
                    Err(_) => return,
                },
                Some(deadline) => {
                    match inputs.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                        Ok(i) => i,
                        Err(RecvTimeoutError::Timeout) => {
                            let missing = self.roster.missing();
                            let reason = format!(
                                "{} did not join the rendezvous within {} of the first hello",
                                ranks_phrase(&missing),
                                format_secs(self.timeout)
                            );
                            return self.fail(reason);
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            };
            match input {
                Input::Stop => return,
                Input::RankExited { rank, how } => {
                    if self.roster.has_joined(rank) {
                        continue;
                    }
                    if self.deadline.is_some() {
                        return self
                            .fail(format!("rank {rank} {how} before joining the rendezvous"));
                    }
                    self.exited_unjoined.push((rank, how));
                }
                Input::Hello {
                    mut stream,
                    peer,
                    hello,
                } => match self.roster.judge(&hello) {
                    Verdict::Stray(why) => {
                        (self.notify)(Notice::Note(format!(
                            "refused a hello from {peer} (claiming rank {}, pid {}): {why}",
                            hello.rank, hello.pid
                        )));
                        reply(
                            &mut stream,
                            &RendezvousReply::Failed {
                                reason: format!("refused by the rendezvous: {why}"),
                            },
                        );
                    }
                    Verdict::Fatal(why) => {
                        self.streams.push(Some(stream));
                        return self.fail(why);
                    }
                    Verdict::Accept { .. } => {
                        self.roster.admit(&hello);
                        self.streams[hello.rank as usize] = Some(stream);
                        if self.deadline.is_none() {
                            self.deadline = Some(Instant::now() + self.timeout);
                            if let Some((rank, how)) = self.exited_unjoined.first() {
                                let why =
                                    format!("rank {rank} {how} before joining the rendezvous");
                                return self.fail(why);
                            }
                        }
                        if self.roster.complete() {
                            return self.complete();
                        }
                    }
                },
            }
        }
    }

    /// Everyone is here: send the table to every rank.
    fn complete(mut self) {
        if let Some(table) = self.roster.table() {
            for s in self.streams.iter_mut().flatten() {
                reply(s, &table);
            }
            (self.notify)(Notice::Complete);
        }
    }

    /// Fail the job: tell the owner first (so its report names the cause
    /// rather than the ranks' reaction to it), then every connected rank.
    fn fail(mut self, reason: String) {
        (self.notify)(Notice::Failed(reason.clone()));
        let msg = RendezvousReply::Failed { reason };
        for s in self.streams.iter_mut().flatten() {
            reply(s, &msg);
        }
    }
}

#[cfg(test)]
mod tests;
