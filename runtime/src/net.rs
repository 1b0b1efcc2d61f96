//! The tokio driver of the NI engine over TCP (direct mode).
//!
//! One thread per process runs a current-thread tokio runtime: it sleeps in
//! epoll when nothing happens (no busy spinning, so ranks may outnumber cores).
//! Inside it: the engine, one reader and one writer task per peer, and the loop
//! that takes the host's commands. Every connection has TCP_NODELAY set, and a
//! writer sends header, route and payload of a batch of packets with vectored
//! writes, the payload straight from the shared `Bytes` (no copy).
//!
//! Startup: bind a listener, tell mclaunch's rendezvous (blocking, from the
//! host thread), get every rank's address, then build a full mesh: rank i
//! connects to every j < i and accepts every j > i; both ends exchange a
//! [`PeerHello`] carrying the job token, and a connection with the wrong token
//! is closed and logged.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::IoSlice;
use std::net::{TcpListener as StdListener, TcpStream as StdStream, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::algorithm::TreeKind;
use bytes::{Bytes, BytesMut};
use serde::{de::DeserializeOwned, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::bootstrap::{self, Hello, PeerHello, RendezvousReply, PROTOCOL_VERSION};
use crate::config::{Config, JobEnv};
use crate::engine::{Action, NiEngine};
use crate::error::Error;
use crate::inbox::Inbox;
use crate::wire::{Header, Kind, Member, Packet, Route, HEADER_LEN};

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
    Shutdown,
}

/// Handle to the NI thread.
pub(crate) struct Net {
    cmd: mpsc::UnboundedSender<Cmd>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How long an orderly shutdown may take to flush.
const SHUTDOWN_FLUSH: Duration = Duration::from_secs(10);
/// Largest handshake frame.
const MAX_HELLO: usize = 4096;
/// Packets a writer batches into one vectored write.
const WRITE_BATCH: usize = 64;

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{what}: {e}")))
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
        let listener = StdListener::bind((cfg.bind.as_str(), 0))
            .map_err(|e| io_err(&format!("binding {}", cfg.bind), e))?;
        let data_addr = listener.local_addr()?.to_string();
        let (job_id, addrs) = rendezvous(job, &data_addr, cfg.timeout)?;
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let cfg2 = cfg.clone();
        let job2 = job.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mcast-ni-{}", job.rank))
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(io_err("starting the NI runtime", e)));
                        return;
                    }
                };
                let local = tokio::task::LocalSet::new();
                local.block_on(
                    &rt,
                    ni_main(cfg2, job2, job_id, listener, addrs, inbox, cmd_rx, ready_tx),
                );
            })
            .map_err(|e| io_err("spawning the NI thread", e))?;
        let mut net = Net {
            cmd: cmd_tx,
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok((net, job_id)),
            Ok(Err(e)) => {
                net.join();
                Err(e)
            }
            Err(_) => {
                net.join();
                Err(Error::Stopped("the NI thread exited during startup".into()))
            }
        }
    }

    /// Hand a command to the NI.
    pub(crate) fn send(&self, cmd: Cmd) -> Result<(), Error> {
        self.cmd
            .send(cmd)
            .map_err(|_| Error::Stopped("the NI task has stopped".into()))
    }

    fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Flush every connection, say goodbye to every peer, and stop the NI thread.
    pub(crate) fn shutdown(&mut self) {
        let _ = self.cmd.send(Cmd::Shutdown);
        self.join();
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn write_hello<T: Serialize>(s: &mut TcpStream, msg: &T) -> Result<(), Error> {
    let body = postcard::to_stdvec(msg).map_err(|e| Error::Protocol(e.to_string()))?;
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
    buf.extend_from_slice(&body);
    s.write_all(&buf).await?;
    Ok(())
}

async fn read_hello<T: DeserializeOwned>(s: &mut TcpStream) -> Result<T, Error> {
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

/// Build the full mesh: connect down, accept up.
async fn mesh(
    job: &JobEnv,
    listener: TcpListener,
    addrs: &[String],
) -> Result<Vec<Option<TcpStream>>, Error> {
    let me = PeerHello {
        version: PROTOCOL_VERSION,
        token: job.token.clone(),
        rank: job.rank as u32,
    };
    let mut conns: Vec<Option<TcpStream>> = (0..job.size).map(|_| None).collect();
    let connect_down = async {
        let mut out = Vec::new();
        for (j, addr) in addrs.iter().enumerate().take(job.rank) {
            let mut s = TcpStream::connect(addr.as_str())
                .await
                .map_err(|e| io_err(&format!("connecting to rank {j} at {addr}"), e))?;
            s.set_nodelay(true)?;
            write_hello(&mut s, &me).await?;
            let theirs: PeerHello = read_hello(&mut s).await.map_err(|e| Error::PeerLost {
                rank: j,
                reason: format!("handshake failed: {e}"),
            })?;
            check_peer(&theirs, job, Some(j))
                .map_err(|why| Error::Protocol(format!("rank {j} at {addr}: {why}")))?;
            out.push((j, s));
        }
        Ok::<_, Error>(out)
    };
    let accept_up = async {
        let mut out = Vec::new();
        let mut seen = vec![false; job.size];
        while out.len() < job.size - 1 - job.rank {
            let (mut s, from) = listener.accept().await?;
            s.set_nodelay(true)?;
            let hello =
                tokio::time::timeout(Duration::from_secs(5), read_hello::<PeerHello>(&mut s)).await;
            let r = match hello {
                Ok(Ok(h)) => match check_peer(&h, job, None) {
                    Ok(r) if r > job.rank && !seen[r] => r,
                    Ok(r) => {
                        tracing::warn!(%from, rank = r, "refusing duplicate or misdirected peer");
                        continue;
                    }
                    Err(why) => {
                        tracing::warn!(%from, %why, "refusing peer connection");
                        continue;
                    }
                },
                Ok(Err(e)) => {
                    tracing::warn!(%from, %e, "refusing peer connection");
                    continue;
                }
                Err(_) => {
                    tracing::warn!(%from, "peer connection sent no handshake; closed");
                    continue;
                }
            };
            write_hello(&mut s, &me).await?;
            seen[r] = true;
            out.push((r, s));
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
    engine: RefCell<NiEngine>,
    writers: RefCell<Vec<Option<mpsc::UnboundedSender<Packet>>>>,
    inbox: Arc<Inbox>,
}

/// Carry out the engine's actions: queue sends on the writers, then deliver to
/// the host in one batch.
fn pump(sh: &Shared) {
    let mut deliveries = Vec::new();
    {
        let mut eng = sh.engine.borrow_mut();
        let writers = sh.writers.borrow();
        while let Some(a) = eng.poll_action() {
            match a {
                Action::Send { to, packet } => {
                    if let Some(Some(tx)) = writers.get(to) {
                        // A closed writer has already reported why.
                        let _ = tx.send(packet);
                    }
                }
                Action::Deliver(p) => deliveries.push(p),
            }
        }
    }
    if !deliveries.is_empty() {
        sh.inbox.deliver(deliveries);
    }
}

#[allow(clippy::too_many_arguments)]
async fn ni_main(
    cfg: Config,
    job: JobEnv,
    job_id: u32,
    listener: StdListener,
    addrs: Vec<String>,
    inbox: Arc<Inbox>,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    ready: std::sync::mpsc::Sender<Result<(), Error>>,
) {
    let setup = async {
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        tokio::time::timeout(cfg.timeout, mesh(&job, listener, &addrs))
            .await
            .map_err(|_| Error::Timeout {
                op: "connecting to peers".into(),
                after: cfg.timeout,
                detail: format!("rank {} of {}", job.rank, job.size),
            })?
    };
    let conns = match setup.await {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let sh = Rc::new(Shared {
        engine: RefCell::new(
            NiEngine::new(job.rank, job.size, job_id, cfg.forwarding, cfg.packet_bytes)
                .with_topology(cfg.topology.clone().map(Arc::new)),
        ),
        writers: RefCell::new((0..job.size).map(|_| None).collect()),
        inbox: inbox.clone(),
    });
    let mut writer_tasks = Vec::new();
    for (peer, conn) in conns.into_iter().enumerate() {
        let Some(conn) = conn else { continue };
        let (rd, wr) = conn.into_split();
        let (tx, rx) = mpsc::unbounded_channel();
        sh.writers.borrow_mut()[peer] = Some(tx);
        writer_tasks.push(tokio::task::spawn_local(writer(
            peer,
            wr,
            rx,
            inbox.clone(),
        )));
        tokio::task::spawn_local(reader(peer, rd, sh.clone()));
    }
    let _ = ready.send(Ok(()));

    while let Some(cmd) = cmds.recv().await {
        let res = {
            let mut eng = sh.engine.borrow_mut();
            match cmd {
                Cmd::Bcast { seq, data, tree } => eng.post_bcast(seq, data, tree),
                Cmd::Multicast {
                    seq,
                    dests,
                    data,
                    tree,
                } => eng.post_multicast(seq, &dests, data, tree),
                Cmd::P2p { to, seq, data } => eng.post_p2p(to, seq, data),
                Cmd::Shutdown => break,
            }
        };
        if let Err(e) = res {
            inbox.fail(Error::Protocol(format!("NI refused a host request: {e}")));
        }
        pump(&sh);
    }

    // Orderly close: every writer flushes what it has, sends Bye, and shuts its
    // half of the connection down.
    let bye = Packet {
        header: Header::new(Kind::Bye, job_id, 0, job.rank as u32, job.rank as u32, 0),
        route: Route::None,
        payload: Bytes::new(),
    };
    for tx in sh.writers.borrow_mut().iter_mut() {
        if let Some(tx) = tx.take() {
            let _ = tx.send(bye.clone());
        }
    }
    let _ = tokio::time::timeout(SHUTDOWN_FLUSH, async {
        for t in writer_tasks {
            let _ = t.await;
        }
    })
    .await;
}

async fn write_chunks(w: &mut OwnedWriteHalf, chunks: &mut VecDeque<Bytes>) -> std::io::Result<()> {
    while !chunks.is_empty() {
        let slices: Vec<IoSlice<'_>> = chunks.iter().take(64).map(|c| IoSlice::new(c)).collect();
        let mut n = w.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 {
            let front = chunks.front_mut().expect("wrote more than queued");
            if n >= front.len() {
                n -= front.len();
                chunks.pop_front();
            } else {
                let _ = front.split_to(n);
                n = 0;
            }
        }
    }
    Ok(())
}

async fn writer(
    peer: usize,
    mut w: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<Packet>,
    inbox: Arc<Inbox>,
) {
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    let mut head = BytesMut::with_capacity(16 * 1024);
    let mut chunks = VecDeque::new();
    loop {
        if rx.recv_many(&mut batch, WRITE_BATCH).await == 0 {
            break;
        }
        let mut bye = false;
        for p in batch.drain(..) {
            p.encode_head(&mut head);
            chunks.push_back(head.split().freeze());
            if !p.payload.is_empty() {
                chunks.push_back(p.payload);
            }
            bye |= p.header.kind == Kind::Bye;
        }
        if let Err(e) = write_chunks(&mut w, &mut chunks).await {
            if !inbox.said_bye(peer) {
                inbox.fail(Error::PeerLost {
                    rank: peer,
                    reason: format!("sending to it failed: {e}"),
                });
            }
            return;
        }
        if bye {
            let _ = w.shutdown().await;
            return;
        }
    }
}

async fn reader(peer: usize, rd: OwnedReadHalf, sh: Rc<Shared>) {
    let mut r = BufReader::with_capacity(256 * 1024, rd);
    let inbox = sh.inbox.clone();
    let lost = |e: std::io::Error| {
        if !inbox.said_bye(peer) {
            let reason = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                "connection closed without goodbye (process died?)".to_string()
            } else {
                format!("connection failed: {e}")
            };
            inbox.fail(Error::PeerLost { rank: peer, reason });
        }
    };
    loop {
        let mut hb = [0u8; HEADER_LEN];
        if let Err(e) = r.read_exact(&mut hb).await {
            lost(e);
            return;
        }
        let h = match Header::decode(&hb) {
            Ok(h) => h,
            Err(e) => {
                inbox.fail(Error::Protocol(format!(
                    "rank {peer} sent a malformed header: {e}"
                )));
                return;
            }
        };
        let mut rb = vec![0u8; h.route_len as usize];
        if let Err(e) = r.read_exact(&mut rb).await {
            lost(e);
            return;
        }
        let route = match Route::decode(h.route_kind, &rb) {
            Ok(rt) => rt,
            Err(e) => {
                inbox.fail(Error::Protocol(format!(
                    "rank {peer} sent a malformed route header: {e}"
                )));
                return;
            }
        };
        let mut payload = BytesMut::zeroed(h.payload_len as usize);
        if let Err(e) = r.read_exact(&mut payload).await {
            lost(e);
            return;
        }
        if h.kind == Kind::Bye {
            inbox.mark_bye(peer);
            continue;
        }
        let packet = Packet {
            header: h,
            route,
            payload: payload.freeze(),
        };
        let res = sh.engine.borrow_mut().packet_in(peer, packet);
        if let Err(e) = res {
            inbox.fail(Error::Protocol(format!("bad packet from rank {peer}: {e}")));
            return;
        }
        pump(&sh);
    }
}
