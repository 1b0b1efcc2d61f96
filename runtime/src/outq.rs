//! The send side of one peer connection.
//!
//! Whoever has a packet for a peer (the host posting, a reader forwarding)
//! calls [`Out::send`]. If nothing is queued for that peer, the packet is
//! written on the spot with one non-blocking vectored write, on the caller's
//! thread: no task to wake, no scheduler tick. Whatever does not fit in the
//! socket buffer is queued, in order, and the connection's writer task
//! flushes the queue when the socket is writable again. The writer task also
//! sends a heartbeat when the connection has been idle for a beat, and the
//! goodbye at shutdown. A mesh's writers share one count of those with
//! bytes waiting ([`Out::sharing`]), so the driver's check after every send
//! (has everything left?) is one load, not a lock per peer.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::net::{tcp, unix};
use tokio::sync::Notify;

use crate::inbox::Inbox;
use crate::shm::Shm;
use crate::wire::Packet;

/// Chunks a write takes at most (the kernel's IOV_MAX is 1024).
const MAX_IOV: usize = 64;

/// The write half of a peer connection.
pub(crate) enum Half {
    Tcp(tcp::OwnedWriteHalf),
    Unix(unix::OwnedWriteHalf),
    /// A QUIC stream (`net/quicmesh.rs`): chunks are handed to quinn as
    /// they are (`Bytes`, no copy), and quinn encrypts and sends them.
    Quic(quinn::SendStream),
}

/// How long an orderly shutdown may take to flush (and a peer that said
/// goodbye, to close); a finished QUIC stream waits this long for its peer
/// to acknowledge everything, the goodbye included.
pub(crate) const SHUTDOWN_FLUSH: std::time::Duration = std::time::Duration::from_secs(10);

impl Half {
    fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            Half::Tcp(w) => w.try_write_vectored(bufs),
            Half::Unix(w) => w.try_write_vectored(bufs),
            // `drain` hands a QUIC stream its chunks (`drain_quic`).
            Half::Quic(_) => Err(std::io::ErrorKind::Unsupported.into()),
        }
    }

    async fn writable(&mut self) -> std::io::Result<()> {
        match self {
            Half::Tcp(w) => w.writable().await,
            Half::Unix(w) => w.writable().await,
            // Writing no chunk is refused exactly while the stream or the
            // connection is blocked by flow control, and then registers
            // this task to be woken when it is not.
            Half::Quic(s) => s
                .write_chunks(&mut [])
                .await
                .map(|_| ())
                .map_err(std::io::Error::other),
        }
    }

    async fn shutdown(&mut self) {
        use tokio::io::AsyncWriteExt;
        let _ = match self {
            Half::Tcp(w) => w.shutdown().await,
            Half::Unix(w) => w.shutdown().await,
            Half::Quic(s) => {
                let _ = s.finish();
                let _ = tokio::time::timeout(SHUTDOWN_FLUSH, s.stopped()).await;
                Ok(())
            }
        };
    }
}

/// [`drain`] for a QUIC stream: hand quinn the queued chunks, polled once
/// on this thread (no task wakes; a blocked stream says so at once).
fn drain_quic(s: &mut quinn::SendStream, queue: &mut VecDeque<Bytes>) -> std::io::Result<bool> {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    while !queue.is_empty() {
        let chunks = queue.make_contiguous();
        // quinn takes whole chunks and advances a partly taken one in place.
        let written = match std::pin::pin!(s.write_chunks(chunks)).poll(&mut cx) {
            Poll::Ready(Ok(w)) => w,
            Poll::Ready(Err(e)) => return Err(std::io::Error::other(e)),
            Poll::Pending => return Ok(false),
        };
        queue.drain(..written.chunks);
        if written.bytes == 0 && written.chunks == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

#[derive(Default)]
struct State {
    /// Bytes not yet written, in order.
    queue: VecDeque<Bytes>,
    /// Scratch for encoding headers.
    head: BytesMut,
    /// A goodbye is queued: after it, shut the connection down.
    closing: bool,
    /// The connection failed or was shut: drop whatever comes.
    dead: bool,
    /// When something was last queued (heartbeats go when it was a beat
    /// ago); `None` before the first.
    last: Option<std::time::Instant>,
    /// Counted in `Out::waiting`: bytes wait and the connection lives.
    counted: bool,
}

/// One peer's outgoing side, shared by every thread that sends to it.
pub(crate) struct Out {
    peer: usize,
    half: Mutex<Option<Half>>,
    st: Mutex<State>,
    wake: Notify,
    shm: Option<Arc<Shm>>,
    /// How many writers have bytes waiting (this one's own count, or one
    /// shared by a mesh's writers, see [`Out::sharing`]): whether
    /// everything has left is one load, not a lock per peer.
    waiting: Arc<AtomicUsize>,
}

/// Write as much of `queue` as the socket takes now; `Ok(true)` when it is
/// empty, `Ok(false)` when the socket is full.
fn drain(half: &mut Half, queue: &mut VecDeque<Bytes>) -> std::io::Result<bool> {
    if let Half::Quic(s) = half {
        return drain_quic(s, queue);
    }
    while !queue.is_empty() {
        // On the stack for the usual few chunks (a head and a payload): a
        // heap vector here cost an allocation per write.
        let written = {
            let slices: smallvec::SmallVec<[IoSlice<'_>; 4]> = queue
                .iter()
                .take(MAX_IOV)
                .map(|c| IoSlice::new(c))
                .collect();
            half.try_write_vectored(&slices)
        };
        let mut n = match written {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        };
        while n > 0 {
            let Some(front) = queue.front_mut() else {
                break;
            };
            if n >= front.len() {
                n -= front.len();
                queue.pop_front();
            } else {
                let _ = front.split_to(n);
                n = 0;
            }
        }
    }
    Ok(true)
}

impl Out {
    pub(crate) fn new(peer: usize, half: Half, shm: Option<Arc<Shm>>) -> Out {
        Out {
            peer,
            half: Mutex::new(Some(half)),
            st: Mutex::new(State::default()),
            wake: Notify::new(),
            shm,
            waiting: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Count this writer's waiting bytes in `waiting`, shared with other
    /// writers (before anything is sent).
    pub(crate) fn sharing(mut self, waiting: Arc<AtomicUsize>) -> Out {
        self.waiting = waiting;
        self
    }

    /// Keep `waiting` true to `st` after a change to its queue or its life.
    fn recount(&self, st: &mut State) {
        let waits = !st.dead && !st.queue.is_empty();
        if waits != st.counted {
            st.counted = waits;
            if waits {
                self.waiting.fetch_add(1, Ordering::AcqRel);
            } else {
                self.waiting.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Queue `p` (a payload already in a host arena goes as a descriptor)
    /// and, if nothing was queued before it, write it now.
    pub(crate) fn send(&self, p: Packet) {
        self.push(|st| {
            match self
                .shm
                .as_ref()
                .and_then(|s| s.describe(&p.payload, self.peer))
            {
                Some(d) => {
                    p.encode_head_shm(&mut st.head, &d);
                    let head = st.head.split().freeze();
                    st.queue.push_back(head);
                }
                None => {
                    p.encode_head(&mut st.head);
                    let head = st.head.split().freeze();
                    st.queue.push_back(head);
                    if !p.payload.is_empty() {
                        st.queue.push_back(p.payload);
                    }
                }
            }
        });
    }

    /// Queue `p` behind `prefix` (a fabric frame's prefix, which counts
    /// the packet's bytes), as [`Out::send`] does.
    pub(crate) fn send_framed(&self, prefix: &[u8], p: Packet) {
        self.push(|st| {
            st.head.extend_from_slice(prefix);
            p.encode_head(&mut st.head);
            let head = st.head.split().freeze();
            st.queue.push_back(head);
            if !p.payload.is_empty() {
                st.queue.push_back(p.payload);
            }
        });
    }

    /// Queue bytes that are already encoded.
    pub(crate) fn send_raw(&self, b: Bytes) {
        self.push(|st| st.queue.push_back(b));
    }

    fn push(&self, put: impl FnOnce(&mut State)) {
        let mut st = lock(&self.st);
        if st.dead || st.closing {
            return;
        }
        let was_empty = st.queue.is_empty();
        put(&mut st);
        st.last = Some(std::time::Instant::now());
        if was_empty {
            // Write here; the writer task takes over only if the socket is
            // full (or the write fails: the task reports that).
            let mut half = lock(&self.half);
            if let Some(Ok(true)) = half.as_mut().map(|h| drain(h, &mut st.queue)) {
                return;
            }
        }
        self.recount(&mut st);
        drop(st);
        self.wake.notify_one();
    }

    /// Queue the goodbye: the writer task flushes, sends it and shuts the
    /// connection down.
    pub(crate) fn close(&self, bye: Bytes) {
        self.send_raw(bye);
        let mut st = lock(&self.st);
        st.closing = true;
        drop(st);
        self.wake.notify_one();
    }

    /// The connection's writer task: flushes what `send` could not write,
    /// beats when idle, and shuts down after the goodbye.
    pub(crate) async fn run(self: Arc<Self>, inbox: Arc<Inbox>, heartbeat: Bytes, beat: Duration) {
        loop {
            let (idle, last) = {
                let st = lock(&self.st);
                if st.dead {
                    return;
                }
                (st.queue.is_empty() && !st.closing, st.last)
            };
            if idle {
                // An idle connection carries a heartbeat once nothing has
                // gone for a beat, so the peer can tell a quiet rank from a
                // hung one. The first goes at once: the peer holds us to the
                // bound only from our first packet on (with many ranks our
                // start-up may end seconds after the peer's).
                let due = last.map(|t| t + beat);
                let now = std::time::Instant::now();
                if due.is_none_or(|d| d <= now) {
                    self.send_raw(heartbeat.clone());
                    continue;
                }
                let until = tokio::time::Instant::from_std(due.unwrap_or(now));
                let _ = tokio::time::timeout_at(until, self.wake.notified()).await;
                continue;
            }
            // Flush, waiting for room as needed.
            loop {
                let res = {
                    let mut st = lock(&self.st);
                    let mut half = lock(&self.half);
                    let res = match half.as_mut() {
                        Some(h) => drain(h, &mut st.queue),
                        None => Ok(true),
                    };
                    self.recount(&mut st);
                    res
                };
                match res {
                    Ok(true) => break,
                    Ok(false) => {
                        let writable = {
                            // Wait without holding the locks: senders may
                            // queue meanwhile.
                            let mut half = lock(&self.half).take();
                            let r = match &mut half {
                                Some(h) => h.writable().await,
                                None => Ok(()),
                            };
                            *lock(&self.half) = half;
                            r
                        };
                        if let Err(e) = writable {
                            return self.fail(&inbox, e);
                        }
                    }
                    Err(e) => return self.fail(&inbox, e),
                }
            }
            let closing = lock(&self.st).closing;
            if closing {
                let half = lock(&self.half).take();
                if let Some(mut h) = half {
                    h.shutdown().await;
                }
                let mut st = lock(&self.st);
                st.dead = true;
                self.recount(&mut st);
                return;
            }
        }
    }

    fn fail(&self, inbox: &Inbox, e: std::io::Error) {
        {
            let mut st = lock(&self.st);
            st.dead = true;
            st.queue.clear();
            self.recount(&mut st);
        }
        // A closed peer (EPIPE / reset) is judged by the reader, which sees
        // either its goodbye or the end without one: on a Unix socket the
        // write fails the moment the peer closes, possibly before its
        // goodbye, still in our receive buffer, was read.
        let closed = matches!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
        );
        if !closed && !inbox.said_bye(self.peer) {
            inbox.lost(self.peer, format!("sending to it failed: {e}"));
        }
    }

    /// Replace every queued chunk that lies in the memory `lo..hi` (a
    /// caller's buffer lent for one call: `net::lend`) with a copy of its
    /// bytes, so that nothing here points into that memory any more.
    /// Returns the bytes copied (what the socket had not taken yet).
    pub(crate) fn reclaim(&self, lo: usize, hi: usize) -> usize {
        let mut st = lock(&self.st);
        let mut copied = 0;
        for chunk in st.queue.iter_mut() {
            let at = chunk.as_ptr() as usize;
            if at < hi && at + chunk.len() > lo {
                copied += chunk.len();
                *chunk = Bytes::copy_from_slice(chunk);
            }
        }
        copied
    }

    /// Whether everything sent so far has left (or the connection is gone).
    pub(crate) fn is_flushed(&self) -> bool {
        let st = lock(&self.st);
        st.queue.is_empty() || st.dead
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// What waits in a writer's queue from a lent range is copied out of
    /// it, and only that: the lender's memory is free to change at once,
    /// and the peer still gets the bytes as they were.
    #[test]
    fn reclaim_copies_only_what_waits_in_the_lent_range() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let inbox = Arc::new(Inbox::new(0, 1 << 20));
            let (a, mut peer) = tokio::net::UnixStream::pair().unwrap();
            let (_ra, wa) = a.into_split();
            let out = Arc::new(Out::new(1, Half::Unix(wa), None));
            // More than the socket takes, so most of it waits in the queue.
            let mut lent = vec![0u8; 8 << 20];
            for (i, b) in lent.iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
            let want = lent.clone();
            let range = (lent.as_ptr() as usize, lent.as_ptr() as usize + lent.len());
            let other = Bytes::from_static(b"owned");
            // SAFETY (test): `lent` outlives every use of this view; the
            // reclaim below replaces the queued ones before it changes.
            let view: &'static [u8] =
                unsafe { std::slice::from_raw_parts(lent.as_ptr(), lent.len()) };
            out.send_raw(Bytes::from_static(view));
            out.send_raw(other.clone());
            assert!(!out.is_flushed(), "the socket took everything");
            let copied = out.reclaim(range.0, range.1);
            assert!(copied > 0 && copied <= lent.len(), "{copied}");
            {
                let st = lock(&out.st);
                for c in &st.queue {
                    let at = c.as_ptr() as usize;
                    assert!(
                        at + c.len() <= range.0 || at >= range.1,
                        "a chunk still lent"
                    );
                }
                assert_eq!(st.queue.back().map(|c| c.as_ptr()), Some(other.as_ptr()));
            }
            assert_eq!(out.reclaim(range.0, range.1), 0, "nothing left to copy");
            // The lender reuses its buffer; the peer reads the old bytes.
            lent.fill(0xee);
            let task = tokio::spawn(out.clone().run(
                inbox.clone(),
                Bytes::from_static(b"beat"),
                Duration::from_secs(60),
            ));
            let mut got = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            while got.len() < want.len() + 5 {
                let n = tokio::time::timeout(Duration::from_secs(10), peer.read(&mut buf))
                    .await
                    .expect("the writer flushes")
                    .unwrap();
                assert!(n > 0);
                got.extend_from_slice(&buf[..n]);
            }
            assert!(got[..want.len()] == want[..], "the peer got changed bytes");
            assert_eq!(&got[want.len()..want.len() + 5], b"owned");
            task.abort();
        });
    }

    /// Writers that share a count say at once whether everything has left:
    /// a writer whose socket is full counts until its task has flushed, and
    /// a writer whose connection failed stops counting.
    #[test]
    fn shared_count_follows_queued_bytes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let waiting = Arc::new(AtomicUsize::new(0));
            let inbox = Arc::new(Inbox::new(0, 1 << 20));
            let (a, mut peer_a) = tokio::net::UnixStream::pair().unwrap();
            let (b, peer_b) = tokio::net::UnixStream::pair().unwrap();
            let (_ra, wa) = a.into_split();
            let (_rb, wb) = b.into_split();
            let out_a = Arc::new(Out::new(1, Half::Unix(wa), None).sharing(waiting.clone()));
            let out_b = Arc::new(Out::new(2, Half::Unix(wb), None).sharing(waiting.clone()));
            let count = || waiting.load(Ordering::Acquire);

            // Small sends leave at once.
            out_a.send_raw(Bytes::from_static(b"hello"));
            out_b.send_raw(Bytes::from_static(b"hello"));
            assert_eq!(count(), 0);

            // More than a Unix socket's buffer: a's bytes wait, and count.
            let big = Bytes::from(vec![7u8; 8 << 20]);
            out_a.send_raw(big.clone());
            assert!(!out_a.is_flushed());
            assert_eq!(count(), 1);
            out_a.send_raw(Bytes::from_static(b"more"));
            assert_eq!(count(), 1, "one writer counts once");

            // b's peer goes away: its next full write fails in its task.
            drop(peer_b);
            out_b.send_raw(big.clone());
            let task_b = tokio::spawn(out_b.clone().run(
                inbox.clone(),
                Bytes::from_static(b"beat"),
                Duration::from_secs(60),
            ));
            // a's task flushes while the peer reads everything.
            let task_a = tokio::spawn(out_a.clone().run(
                inbox.clone(),
                Bytes::from_static(b"beat"),
                Duration::from_secs(60),
            ));
            let want = 5 + big.len() + 4;
            let mut got = 0;
            let mut buf = vec![0u8; 1 << 16];
            while got < want {
                let n = tokio::time::timeout(Duration::from_secs(10), peer_a.read(&mut buf))
                    .await
                    .expect("a's writer flushes")
                    .unwrap();
                assert!(n > 0, "a's peer sees the end before everything came");
                got += n;
            }
            let settled = tokio::time::timeout(Duration::from_secs(10), async {
                while count() != 0 {
                    tokio::task::yield_now().await;
                }
            });
            settled.await.expect("the count falls back to 0");
            assert!(out_a.is_flushed() && out_b.is_flushed());
            task_a.abort();
            task_b.abort();
        });
    }
}
