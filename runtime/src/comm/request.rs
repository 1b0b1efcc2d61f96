//! Non-blocking collectives: [`Comm::ibcast`], [`Comm::iallreduce`],
//! [`Comm::ibarrier`], [`Comm::ireduce`], [`Comm::iallgather`],
//! [`Comm::ialltoall`], [`Comm::iscan`], and the [`Request`] they return.
//!
//! # How a request makes progress
//! Each communicator has, once it first starts a non-blocking call, a
//! *progress thread* of its own. The thread holds a hidden twin of the
//! communicator: the same members, the same links, NI and inbox, but its
//! own id (the communicator's with [`HIDDEN_BIT`] set) and so its own
//! numbering. The non-blocking calls of one communicator run on its thread
//! one after another, in the order the rank started them, each as the
//! blocking call it stands for (same algorithms, same bits). Every rank
//! starts them in the same order (as MPI requires of collectives), so the
//! twins' numbers agree across ranks; and since they are apart from the
//! communicator's own numbers, blocking calls made meanwhile on the
//! communicator (on the rank's own thread) never mix with them.
//!
//! So a request progresses whatever its rank does (computes, waits in
//! another call, or sleeps): the thread drives the NI like any waiting call.
//! The NI's forwarding (FPFS) needs no host at all; the thread is what the
//! host part of a call (an allreduce's combining, a bcast's copy out) needs.
//!
//! Arguments are checked when the call starts: a bad one is
//! [`Error::InvalidArgument`] at once, and nothing is queued. Failures of
//! the call itself (a lost rank, a mismatch, a timeout) come out of
//! [`Request::wait`], never a hang: every wait inside is bounded.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

use super::coll::filled;
use super::elem::{check_op, Element, Op};
use super::Comm;
use crate::sync::lock;
use crate::Error;

/// Set in the id of a communicator's hidden twin (the one its
/// non-blocking calls run on); sub-communicators' ids stay below it.
pub(super) const HIDDEN_BIT: u32 = 1 << 23;

/// A non-blocking call in progress; [`Request::wait`] gives its result.
/// Also a [`Future`], so async code can `.await` it. Dropping a request
/// does not cancel the call (every rank must still take part): it completes
/// in the background and its result is discarded.
#[must_use = "a request's result (and errors) come out of wait()"]
pub struct Request<T> {
    slot: Arc<Slot<T>>,
}

struct Slot<T> {
    state: Mutex<State<T>>,
    done: Condvar,
}

struct State<T> {
    result: Option<Result<T, Error>>,
    waker: Option<Waker>,
}

impl<T> Slot<T> {
    fn finish(&self, r: Result<T, Error>) {
        let mut st = lock(&self.state);
        if st.result.is_none() {
            st.result = Some(r);
        }
        let waker = st.waker.take();
        drop(st);
        self.done.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The progress thread's end of a request: finishes it with an error if
/// dropped before the call completed (the thread stopped, or the call
/// panicked), so no `wait` waits forever.
struct Completer<T> {
    slot: Option<Arc<Slot<T>>>,
}

impl<T> Completer<T> {
    fn complete(mut self, r: Result<T, Error>) {
        if let Some(s) = self.slot.take() {
            s.finish(r);
        }
    }
}

impl<T> Drop for Completer<T> {
    fn drop(&mut self) {
        if let Some(s) = self.slot.take() {
            s.finish(Err(Error::Stopped(
                "the progress thread stopped before the call completed".into(),
            )));
        }
    }
}

impl<T> Request<T> {
    /// Block until the call completes; its result (the buffer, filled).
    pub fn wait(self) -> Result<T, Error> {
        let mut st = lock(&self.slot.state);
        loop {
            if let Some(r) = st.result.take() {
                return r;
            }
            st = self
                .slot
                .done
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// `true` once the call has completed (successfully or not), so that
    /// [`Request::wait`] will not block. Never blocks.
    pub fn test(&mut self) -> Result<bool, Error> {
        Ok(lock(&self.slot.state).result.is_some())
    }
}

impl<T> Future for Request<T> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut st = lock(&self.slot.state);
        match st.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                st.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<T> std::fmt::Debug for Request<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let done = lock(&self.slot.state).result.is_some();
        f.debug_struct("Request").field("done", &done).finish()
    }
}

/// A queued call: runs on the hidden twin.
type Job = Box<dyn FnOnce(&Comm) + Send>;

/// A communicator's progress thread, and the queue to it.
pub(super) struct Progress {
    jobs: mpsc::Sender<Job>,
}

impl Comm {
    /// Queue `call` for this communicator's progress thread (started on
    /// first use); the request that gives its result.
    fn start<T: Send + 'static>(
        &self,
        call: impl FnOnce(&Comm) -> Result<T, Error> + Send + 'static,
    ) -> Result<Request<T>, Error> {
        let slot = Arc::new(Slot {
            state: Mutex::new(State {
                result: None,
                waker: None,
            }),
            done: Condvar::new(),
        });
        let done = Completer {
            slot: Some(slot.clone()),
        };
        let job: Job = Box::new(move |twin| done.complete(call(twin)));
        let mut progress = self.progress.borrow_mut();
        if progress.is_none() {
            *progress = Some(self.spawn_progress()?);
        }
        let sent = progress.as_ref().map(|p| p.jobs.send(job));
        match sent {
            Some(Ok(())) => Ok(Request { slot }),
            _ => Err(Error::Stopped("the progress thread has stopped".into())),
        }
    }

    /// Start this communicator's progress thread, with its hidden twin.
    fn spawn_progress(&self) -> Result<Progress, Error> {
        let twin = self.twin(self.id() | HIDDEN_BIT);
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(format!("mcast-progress-{}", self.id()))
            .spawn(move || {
                // Until the communicator (the sender) is gone.
                while let Ok(job) = queue.recv() {
                    job(&twin);
                }
            })
            .map_err(|e| Error::Stopped(format!("cannot start a progress thread: {e}")))?;
        Ok(Progress { jobs })
    }

    /// Non-blocking [`Comm::bcast`]: every rank passes a buffer of the same
    /// length; the request gives it back holding the root's bytes.
    pub fn ibcast(&self, root: usize, buf: Vec<u8>) -> Result<Request<Vec<u8>>, Error> {
        self.check_root("ibcast", root)?;
        self.start(move |c| {
            let mut buf = buf;
            c.bcast(root, &mut buf)?;
            Ok(buf)
        })
    }

    /// Non-blocking [`Comm::allreduce`]: the request gives `buf` back
    /// holding the reduction, bit-identical to what `allreduce` gives.
    pub fn iallreduce<T: Element>(&self, buf: Vec<T>, op: Op) -> Result<Request<Vec<T>>, Error> {
        check_op::<T>(op, "iallreduce")?;
        self.start(move |c| {
            let mut buf = buf;
            c.allreduce(&mut buf, op)?;
            Ok(buf)
        })
    }

    /// Non-blocking [`Comm::barrier`]: the request completes once every
    /// rank has entered it.
    pub fn ibarrier(&self) -> Result<Request<()>, Error> {
        self.start(|c| c.barrier())
    }

    /// Non-blocking [`Comm::reduce`]: the request gives `buf` back, holding
    /// the reduction at `root` (unchanged elsewhere).
    pub fn ireduce<T: Element>(
        &self,
        root: usize,
        buf: Vec<T>,
        op: Op,
    ) -> Result<Request<Vec<T>>, Error> {
        self.check_root("ireduce", root)?;
        check_op::<T>(op, "ireduce")?;
        self.start(move |c| {
            let mut buf = buf;
            c.reduce(root, &mut buf, op)?;
            Ok(buf)
        })
    }

    /// Non-blocking [`Comm::allgather`]: the request gives every rank's
    /// block, `size × send.len()` elements.
    pub fn iallgather<T: Element>(&self, send: Vec<T>) -> Result<Request<Vec<T>>, Error> {
        let n = self.size * send.len();
        self.start(move |c| {
            let mut recv = filled(n, send.first().copied());
            c.allgather(&send, &mut recv)?;
            Ok(recv)
        })
    }

    /// Non-blocking [`Comm::alltoall`]: `send` holds `size` blocks; the
    /// request gives the `size` blocks this rank receives.
    pub fn ialltoall<T: Element>(&self, send: Vec<T>) -> Result<Request<Vec<T>>, Error> {
        if !send.len().is_multiple_of(self.size) {
            return Err(Error::InvalidArgument(format!(
                "ialltoall: send holds {} elements, not {} equal blocks",
                send.len(),
                self.size
            )));
        }
        self.start(move |c| {
            let mut recv = filled(send.len(), send.first().copied());
            c.alltoall(&send, &mut recv)?;
            Ok(recv)
        })
    }

    /// Non-blocking [`Comm::scan`]: the request gives `buf` back holding
    /// the inclusive prefix.
    pub fn iscan<T: Element>(&self, buf: Vec<T>, op: Op) -> Result<Request<Vec<T>>, Error> {
        check_op::<T>(op, "iscan")?;
        self.start(move |c| {
            let mut buf = buf;
            c.scan(&mut buf, op)?;
            Ok(buf)
        })
    }
}
