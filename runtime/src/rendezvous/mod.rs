//! The rendezvous server: ranks say [`Hello`], and once all of them have, each
//! gets the address table ([`RendezvousReply::Table`]). mclaunch runs one per
//! job; under plain `srun` (no PMI) task 0 runs one on the step's first node
//! (`net::connect::exchange`). The server tells its owner what happens
//! through a callback ([`Notice`]); the owner tells it which ranks exited
//! ([`Server::rank_exited`]).
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

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::bootstrap::{
    job_id_from_token, read_frame, tokens_equal, write_frame, Hello, RendezvousReply,
    PROTOCOL_VERSION,
};

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
        stream: TcpStream,
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

/// One rank that has joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub pid: u32,
    pub data_addr: String,
}

/// What to do with a hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Take it; `replaces` is true when the same process re-sent its hello
    /// (a retry on a new connection).
    Accept { replaces: bool },
    /// Refuse this connection only (not from this job); keep waiting.
    Stray(String),
    /// Refuse it and fail the job: a rank of this job cannot take part.
    Fatal(String),
}

/// Who has joined: the rendezvous's state, without any I/O.
#[derive(Debug)]
pub struct Roster {
    size: u32,
    token: String,
    members: Vec<Option<Member>>,
    joined: usize,
}

impl Roster {
    pub fn new(size: u32, token: String) -> Roster {
        Roster {
            size,
            token,
            members: vec![None; size as usize],
            joined: 0,
        }
    }

    /// Judge a hello without admitting it.
    pub fn judge(&self, h: &Hello) -> Verdict {
        if !tokens_equal(&h.token, &self.token) {
            return Verdict::Stray("wrong job token".into());
        }
        if h.version != PROTOCOL_VERSION {
            return Verdict::Fatal(format!(
                "rank {} speaks control protocol version {}, the rendezvous {} \
                 (build both against the same mcast)",
                h.rank, h.version, PROTOCOL_VERSION
            ));
        }
        if h.size != self.size {
            return Verdict::Fatal(format!(
                "rank {} believes the job has {} ranks, but the job has {}",
                h.rank, h.size, self.size
            ));
        }
        if h.rank >= self.size {
            return Verdict::Fatal(format!(
                "a process claims rank {} in a job of {} ranks",
                h.rank, self.size
            ));
        }
        if h.data_addr.is_empty() {
            return Verdict::Fatal(format!("rank {} sent an empty data address", h.rank));
        }
        match &self.members[h.rank as usize] {
            None => Verdict::Accept { replaces: false },
            Some(m) if m.pid == h.pid => Verdict::Accept { replaces: true },
            Some(m) => Verdict::Fatal(format!(
                "rank {} joined twice (pids {} and {})",
                h.rank, m.pid, h.pid
            )),
        }
    }

    /// Record an accepted hello.
    pub fn admit(&mut self, h: &Hello) {
        let slot = &mut self.members[h.rank as usize];
        if slot.is_none() {
            self.joined += 1;
        }
        *slot = Some(Member {
            pid: h.pid,
            data_addr: h.data_addr.clone(),
        });
    }

    pub fn has_joined(&self, rank: u32) -> bool {
        self.members.get(rank as usize).is_some_and(|m| m.is_some())
    }

    pub fn complete(&self) -> bool {
        self.joined == self.members.len()
    }

    /// Ranks that have not joined yet.
    pub fn missing(&self) -> Vec<u32> {
        (0..self.size)
            .filter(|&r| self.members[r as usize].is_none())
            .collect()
    }

    /// The address table, once complete.
    pub fn table(&self) -> Option<RendezvousReply> {
        let addrs = self
            .members
            .iter()
            .map(|m| m.as_ref().map(|m| m.data_addr.clone()))
            .collect::<Option<Vec<_>>>()?;
        Some(RendezvousReply::Table {
            job: job_id_from_token(&self.token),
            addrs,
        })
    }
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
            .spawn(move || accept_loop(listener, accept_input, accept_stop, notify))?;

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

fn accept_loop(listener: TcpListener, input: Sender<Input>, stop: Arc<AtomicBool>, notify: Notify) {
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, peer)) => {
                let (input, note) = (input.clone(), notify.clone());
                let spawned = thread::Builder::new()
                    .name("rendezvous-conn".into())
                    .spawn(move || read_hello(stream, peer, input, note));
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

fn read_hello(mut stream: TcpStream, peer: SocketAddr, input: Sender<Input>, notify: Notify) {
    let _ = stream.set_read_timeout(Some(HELLO_READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(REPLY_WRITE_TIMEOUT));
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

fn reply(stream: &mut TcpStream, msg: &RendezvousReply) {
    // A rank that has gone away will be reported by its exit status.
    let _ = write_frame(stream, msg);
    let _ = stream.shutdown(Shutdown::Write);
}

struct Coordinator {
    roster: Roster,
    streams: Vec<Option<TcpStream>>,
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

/// Format a list of ranks compactly: `"0, 2, 5-9"`. The input need not be sorted.
pub fn format_ranks(ranks: &[u32]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(match end - start {
            0 => format!("{start}"),
            1 => format!("{start}, {end}"),
            _ => format!("{start}-{end}"),
        });
        i += 1;
    }
    parts.join(", ")
}

/// `"rank 3"` or `"ranks 0, 2"`: a noun phrase for a rank set.
pub fn ranks_phrase(ranks: &[u32]) -> String {
    if ranks.len() == 1 {
        format!("rank {}", ranks[0])
    } else {
        format!("ranks {}", format_ranks(ranks))
    }
}

/// A duration for messages: `"30 s"`, `"1.5 s"`.
pub fn format_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(rank: u32, size: u32, token: &str, pid: u32) -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            token: token.into(),
            rank,
            size,
            data_addr: format!("127.0.0.1:{}", 1000 + rank),
            pid,
        }
    }

    #[test]
    fn roster_collects_a_table() {
        let mut r = Roster::new(3, "tok".into());
        assert_eq!(r.missing(), [0, 1, 2]);
        for rank in [2, 0, 1] {
            let h = hello(rank, 3, "tok", 10 + rank);
            assert_eq!(r.judge(&h), Verdict::Accept { replaces: false });
            r.admit(&h);
            assert!(r.has_joined(rank));
        }
        assert!(r.complete());
        assert_eq!(
            r.table(),
            Some(RendezvousReply::Table {
                job: job_id_from_token("tok"),
                addrs: vec![
                    "127.0.0.1:1000".into(),
                    "127.0.0.1:1001".into(),
                    "127.0.0.1:1002".into()
                ],
            })
        );
    }

    #[test]
    fn roster_judges_hellos() {
        let mut r = Roster::new(2, "tok".into());
        assert!(matches!(r.judge(&hello(0, 2, "bad", 1)), Verdict::Stray(_)));
        assert!(matches!(r.judge(&hello(0, 2, "to", 1)), Verdict::Stray(_)));
        assert!(matches!(r.judge(&hello(0, 3, "tok", 1)), Verdict::Fatal(_)));
        assert!(matches!(r.judge(&hello(2, 2, "tok", 1)), Verdict::Fatal(_)));
        let mut old = hello(0, 2, "tok", 1);
        old.version = PROTOCOL_VERSION + 1;
        assert!(matches!(r.judge(&old), Verdict::Fatal(_)));
        let mut empty = hello(0, 2, "tok", 1);
        empty.data_addr.clear();
        assert!(matches!(r.judge(&empty), Verdict::Fatal(_)));

        r.admit(&hello(0, 2, "tok", 1));
        assert_eq!(
            r.judge(&hello(0, 2, "tok", 1)),
            Verdict::Accept { replaces: true }
        );
        assert!(matches!(r.judge(&hello(0, 2, "tok", 2)), Verdict::Fatal(_)));
        assert_eq!(r.missing(), [1]);
        assert!(r.table().is_none());
        // A retry does not count twice.
        r.admit(&hello(0, 2, "tok", 1));
        assert!(!r.complete());
    }

    #[test]
    fn rank_lists() {
        assert_eq!(format_ranks(&[]), "");
        assert_eq!(format_ranks(&[3]), "3");
        assert_eq!(
            format_ranks(&[5, 0, 1, 2, 3, 7, 8, 9, 11]),
            "0-3, 5, 7-9, 11"
        );
        assert_eq!(format_ranks(&[1, 2]), "1, 2");
        assert_eq!(ranks_phrase(&[2]), "rank 2");
        assert_eq!(ranks_phrase(&[0, 1]), "ranks 0, 1");
    }

    #[test]
    fn seconds() {
        assert_eq!(format_secs(Duration::from_secs(30)), "30 s");
        assert_eq!(format_secs(Duration::from_millis(1500)), "1.5 s");
    }
}
