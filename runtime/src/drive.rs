//! Who runs the NI: the host thread while it waits, a background thread
//! while the host is away.
//!
//! The NI (engine, socket readers and writers, heartbeats) lives in one
//! current-thread tokio runtime. Tokio lets any thread drive such a runtime
//! with `block_on`, one at a time, and hands it over when the holder returns.
//! mcast uses that to put the NI on the thread that is waiting for it:
//!
//! * A host blocked in a collective drives the runtime itself: a packet that
//!   arrives wakes the thread that wants it, and that thread forwards it on
//!   (FPFS) and takes it, with no hand-off between threads. For
//!   `MCAST_SPIN_US` it polls the sockets (yielding the CPU between polls)
//!   before it sleeps in epoll.
//! * When the host has been out of mcast for `GRACE` (computing, or about to
//!   call again), the background thread takes the runtime and forwards,
//!   acknowledges and heartbeats for it. When the host comes back it asks for
//!   the runtime; the background thread gives it up at once. While it keeps
//!   finding the host inside mcast it looks less often, down to once per
//!   `WATCH_MAX`.
//!
//! A host call from inside some other tokio runtime cannot `block_on` on its
//! own thread; it drives from a scoped helper thread instead (slower, but
//! correct).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio::sync::Notify;

/// How long the host may stay out of mcast before the background thread
/// takes over the NI. A packet that arrives meanwhile waits at most this
/// long to be forwarded, or up to `WATCH_MAX` when the host leaves after
/// a stretch of calls that never kept it away this long (the background
/// thread then looks less often: `State::next_look`).
pub(crate) const GRACE: Duration = Duration::from_millis(1);

/// How long a thread that drives the NI sleeps on a ring doorbell at most
/// before it lets the runtime look at its sockets and timers (heartbeats,
/// a peer's closed connection): the bound on noticing a death while asleep.
pub(crate) const NAP: Duration = Duration::from_millis(50);

/// How long the background thread sleeps while the host sleeps in a wait
/// (the host's exit wakes it sooner).
const LONG_NAP: Duration = Duration::from_secs(1);

/// The longest the background thread sleeps between looks while it keeps
/// finding the host in mcast. It starts at `GRACE` and doubles at each look
/// that finds the host inside, up to this; a takeover starts it again at
/// `GRACE`. Looking every `GRACE` through a tight loop of calls, which
/// never needs the thread, cost each rank a wake-up per millisecond, and
/// with ranks sharing cores the wake-up lands on somebody's critical path:
/// looking less often, the bcast + barrier loop took 0.79–0.91 of the time
/// on one host (4 ranks), 0.63–1.02 across 3 hosts × 2 (README
/// "Performance").
const WATCH_MAX: Duration = Duration::from_millis(8);

/// With a poller, the longest the runtime goes without looking at its
/// sockets and timers while it is driven.
pub(crate) const TURN: Duration = Duration::from_millis(1);

/// Packets that arrive outside the runtime's sockets (the shared-memory
/// rings): whoever drives the NI polls them, and sleeps on their doorbell
/// rather than in epoll.
pub(crate) trait Poller: Send + Sync {
    /// Take what arrived and append what waited for room; whether anything
    /// moved.
    fn poll(&self) -> bool;
    /// Sleep until something arrives (since the last `poll` looked) or
    /// `max` passes.
    fn park(&self, max: Duration);
    /// Wake whoever parks.
    fn wake(&self);
    /// More ranks than cores share this host: yield the CPU between polls.
    fn crowded(&self) -> bool;
    /// Sleep in the runtime (epoll) rather than in `park`: some packets
    /// come through the runtime's sockets (peers on other hosts), and the
    /// poller's senders poke a sleeper through them.
    fn in_runtime(&self) -> bool {
        false
    }
    /// About to sleep in the runtime: `false` if something arrived since
    /// the last `poll` (do not sleep).
    fn sleep_begin(&self) -> bool {
        true
    }
    /// Awake again after `sleep_begin`.
    fn sleep_end(&self) {}
    /// Every peer's packets come through `poll` (`net::tcprx`): a host
    /// may poll outside the runtime ([`Drive::poll_host`]).
    fn polls_all(&self) -> bool {
        !self.in_runtime()
    }
    /// Only the runtime can do what waits (a writer's queued bytes).
    fn needs_runtime(&self) -> bool {
        false
    }
}

/// Sleep until the poller's packets, `wake` or `max` (at most a `NAP` on
/// the futex: the runtime must get its turn; in the runtime, its sockets
/// and timers run meanwhile).
pub(crate) async fn doze(p: &dyn Poller, max: Duration, wake: impl Future<Output = ()>) {
    if !p.in_runtime() {
        p.park(max.min(NAP));
        return;
    }
    if p.sleep_begin() {
        tokio::select! {
            _ = wake => {}
            _ = tokio::time::sleep(max) => {}
        }
    }
    p.sleep_end();
}

#[derive(Debug)]
struct State {
    /// The host is driving (or waiting to drive) the runtime.
    host: bool,
    /// The background thread is inside `block_on`.
    bg_in: bool,
    /// When the host last stopped driving.
    last_exit: Instant,
    shutdown: bool,
    /// The host sleeps in a wait (its poll budget spent): the background
    /// thread, not needed, sleeps too instead of checking every `GRACE`.
    host_asleep: bool,
    /// The background thread sleeps for long: the host's next exit wakes it.
    bg_long: bool,
    /// How long the background thread sleeps before it looks again while
    /// the host drives (`GRACE` up to `WATCH_MAX`, see `State::next_look`).
    watch: Duration,
}

impl State {
    /// Nobody drives yet; the host last left now.
    fn new() -> State {
        State {
            host: false,
            bg_in: false,
            last_exit: Instant::now(),
            shutdown: false,
            host_asleep: false,
            bg_long: false,
            watch: GRACE,
        }
    }

    /// The background thread's decision when it looks, the host having
    /// left mcast `idle` ago (if it is out): `None` to take the runtime
    /// (the host has been away for `GRACE`), else how long to sleep before
    /// looking again. While the host sleeps in a wait only its exit (or
    /// shutdown) can need the thread, which sleeps until woken. While the
    /// host drives, each look that finds it inside doubles the next sleep,
    /// up to `WATCH_MAX`; a takeover resets it to `GRACE`. So a host that
    /// leaves is relieved within `GRACE`, or `WATCH_MAX` after a stretch
    /// of calls that never left it out for `GRACE`.
    fn next_look(&mut self, idle: Duration) -> Option<Duration> {
        if !self.host && idle >= GRACE {
            self.watch = GRACE;
            return None;
        }
        self.bg_long = self.host && self.host_asleep;
        Some(match (self.bg_long, self.host) {
            (true, _) => LONG_NAP,
            (false, true) => {
                let w = self.watch;
                self.watch = (w * 2).min(WATCH_MAX);
                w
            }
            (false, false) => GRACE - idle,
        })
    }
}

/// The NI runtime and the hand-over between host and background thread.
pub(crate) struct Drive {
    rt: Option<Runtime>,
    spin: Duration,
    st: Mutex<State>,
    cv: Condvar,
    /// Tells the background thread to leave `block_on`.
    host_wants: Notify,
    /// The same, for a background thread parked on the poller.
    host_asks: AtomicBool,
    poller: Option<Arc<dyn Poller>>,
    /// When the runtime last looked at its sockets and timers (µs since
    /// `born`): with a poller, a wait can end before the runtime ever
    /// parks, so heartbeats would starve without a turn now and then.
    turned: AtomicU64,
    born: Instant,
}

impl std::fmt::Debug for Drive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drive").field("spin", &self.spin).finish()
    }
}

impl Drive {
    pub(crate) fn new(rt: Runtime, spin: Duration) -> Drive {
        Drive {
            rt: Some(rt),
            spin,
            st: Mutex::new(State::new()),
            cv: Condvar::new(),
            host_wants: Notify::new(),
            host_asks: AtomicBool::new(false),
            poller: None,
            turned: AtomicU64::new(0),
            // The first drive takes a turn.
            born: Instant::now()
                .checked_sub(TURN)
                .unwrap_or_else(Instant::now),
        }
    }

    /// Poll `p` (and sleep on its doorbell) wherever the NI is driven.
    pub(crate) fn with_poller(mut self, p: Option<Arc<dyn Poller>>) -> Drive {
        self.poller = p;
        self
    }

    /// The packets to poll besides the runtime's sockets, if any.
    pub(crate) fn poller(&self) -> Option<&Arc<dyn Poller>> {
        self.poller.as_ref()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.st)
    }

    /// How long a waiting host polls before it sleeps.
    pub(crate) fn spin(&self) -> Duration {
        self.spin
    }

    /// Run `fut` to completion with the NI runtime on this thread (or on a
    /// helper thread when this one is already inside a tokio runtime).
    pub(crate) fn run<F>(&self, fut: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            return std::thread::scope(|s| match s.spawn(|| self.run_here(fut)).join() {
                Ok(v) => v,
                Err(p) => std::panic::resume_unwind(p),
            });
        }
        self.run_here(fut)
    }

    /// The host takes the NI: a driving background thread is asked to leave.
    fn host_enters(&self) {
        let mut st = self.lock();
        st.host = true;
        if st.bg_in {
            self.host_asks.store(true, Ordering::SeqCst);
            self.host_wants.notify_one();
            if let Some(p) = &self.poller {
                p.wake();
            }
        }
    }

    /// The host leaves the NI (the background thread takes it after
    /// `GRACE`), at `now` if the caller read the clock a moment ago.
    fn host_leaves(&self, now: Option<Instant>) {
        let now = now.unwrap_or_else(Instant::now);
        let mut st = self.lock();
        st.host = false;
        st.last_exit = now;
        if st.bg_long {
            st.bg_long = false;
            self.cv.notify_all();
        }
    }

    /// Poll the rings on the host's thread, outside the runtime, until
    /// `moved` holds (`true`), or `budget` is spent (`false`: the caller
    /// then drives the runtime, which polls on and sleeps). When the
    /// runtime is due a turn, it takes just that turn on this thread
    /// ([`Drive::turn_here`]) and the polling goes on: waiting in the
    /// runtime instead until the next packet cost a runtime turn per
    /// poll, about 40 µs a millisecond in the 3 × 2 namespace cluster's
    /// bcast + barrier loop. Entering and leaving tokio's `block_on` costs
    /// more than a poll (README "Performance"), and a wait on one host's
    /// rings needs the runtime only for its turns. Only where the poller
    /// reaches every peer ([`Poller::polls_all`]: rings, TCP links) and no
    /// writer waits for the runtime; yields between polls when ranks
    /// outnumber cores or peers are on other hosts. Receive sides are
    /// taken with `try_lock`: a background thread still in the runtime
    /// does no harm before it leaves.
    ///
    /// `start` is the caller's clock reading, a moment ago: a reading costs
    /// about 20 ns here, a tenth of a small bcast's receive, so the budget,
    /// the turn and the exit time (for the background thread's `GRACE`)
    /// reuse the last one, unless more than `FRESH_POLLS` polls ran since.
    pub(crate) fn poll_host(
        &self,
        moved: &dyn Fn() -> bool,
        budget: Duration,
        start: Instant,
    ) -> bool {
        /// Polls after which the last clock reading is too old to stamp
        /// the host's exit (a poll that takes packets does bounded work:
        /// at most a ring's bytes per peer).
        const FRESH_POLLS: u32 = 4;
        let Some(p) = self.poller.as_ref().filter(|p| p.polls_all()) else {
            return false;
        };
        // Inside a runtime (an async caller), a turn needs a helper thread
        // (`Drive::run`): leave it to the caller.
        let nested = tokio::runtime::Handle::try_current().is_ok();
        if budget.is_zero() || (nested && self.turn_due_at(start)) || p.needs_runtime() {
            return false;
        }
        self.host_enters();
        if self.turn_due_at(start) {
            self.turn_here();
        }
        let crowded = p.crowded() || p.in_runtime();
        let (mut idle, mut polls, mut last) = (0u32, 0u32, start);
        let out = loop {
            if moved() {
                break true;
            }
            polls = polls.saturating_add(1);
            if p.poll() {
                if p.needs_runtime() {
                    break moved();
                }
                continue;
            }
            idle = idle.wrapping_add(1);
            if crowded {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
                if !idle.is_multiple_of(32) {
                    continue;
                }
            }
            last = Instant::now();
            polls = 0;
            if last.saturating_duration_since(start) >= budget {
                break moved();
            }
            if self.turn_due_at(last) {
                if nested {
                    break moved();
                }
                self.turn_here();
                if p.needs_runtime() {
                    break moved();
                }
            }
        };
        self.host_leaves((polls <= FRESH_POLLS).then_some(last));
        out
    }

    /// One turn of the runtime on this thread, the host's, which has
    /// entered and is not inside a runtime (see [`Drive::poll_host`]).
    fn turn_here(&self) {
        if let Some(rt) = self.rt.as_ref() {
            rt.block_on(self.turn());
        }
    }

    fn run_here<F: Future>(&self, fut: F) -> F::Output {
        self.host_enters();
        let rt = self
            .rt
            .as_ref()
            .expect("the runtime lives as long as Drive");
        let out = match &self.poller {
            Some(_) if self.turn_due() => rt.block_on(async {
                self.turn().await;
                fut.await
            }),
            _ => rt.block_on(fut),
        };
        self.host_leaves(None);
        out
    }

    /// The host is about to sleep in a wait (`true`), or woke (`false`).
    pub(crate) fn host_sleeps(&self, asleep: bool) {
        self.lock().host_asleep = asleep;
    }

    fn now_us(&self) -> u64 {
        self.born.elapsed().as_micros() as u64
    }

    /// Whether the runtime has not looked at its sockets and timers for
    /// `TURN`.
    pub(crate) fn turn_due(&self) -> bool {
        self.turn_due_at(Instant::now())
    }

    /// [`Drive::turn_due`] with the clock already read (`now`).
    pub(crate) fn turn_due_at(&self, now: Instant) -> bool {
        let now_us = now.saturating_duration_since(self.born).as_micros() as u64;
        now_us.saturating_sub(self.turned.load(Ordering::Relaxed)) >= TURN.as_micros() as u64
    }

    /// Give the runtime's other tasks, sockets and timers a turn (inside
    /// `run`).
    pub(crate) async fn turn(&self) {
        self.turned.store(self.now_us(), Ordering::Relaxed);
        tokio::task::yield_now().await;
    }

    /// After the host queued packets: let the writers put them on the wire
    /// now, unless the background thread is driving (then it does).
    pub(crate) fn tick(&self) {
        if self.lock().bg_in {
            return;
        }
        self.run(async {
            if let Some(p) = &self.poller {
                p.poll();
            }
            tokio::task::yield_now().await
        });
    }

    /// The background thread's loop: drive the runtime whenever the host has
    /// been away for `GRACE` (looking as `State::next_look` says), until
    /// `stop`.
    pub(crate) fn background(&self) {
        let rt = self
            .rt
            .as_ref()
            .expect("the runtime lives as long as Drive");
        loop {
            {
                let mut st = self.lock();
                loop {
                    if st.shutdown {
                        return;
                    }
                    let idle = st.last_exit.elapsed();
                    let Some(nap) = st.next_look(idle) else {
                        break;
                    };
                    st = self
                        .cv
                        .wait_timeout(st, nap)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                st.bg_in = true;
            }
            match &self.poller {
                None => rt.block_on(self.host_wants.notified()),
                Some(p) => rt.block_on(self.background_poll(p)),
            }
            self.lock().bg_in = false;
        }
    }

    /// The background thread's turn with a poller: take packets as they
    /// come, sleeping on the doorbell (a nap at a time, so that sockets and
    /// timers get their turn), until the host asks for the runtime back.
    async fn background_poll(&self, p: &Arc<dyn Poller>) {
        while !self.host_asks.swap(false, Ordering::SeqCst) {
            if self.lock().shutdown {
                return;
            }
            if !p.poll() {
                doze(&**p, NAP, self.host_wants.notified()).await;
            }
            self.turn().await;
        }
    }

    /// Stop the background thread (it returns from `background`).
    pub(crate) fn stop(&self) {
        let mut st = self.lock();
        st.shutdown = true;
        if st.bg_in {
            self.host_wants.notify_one();
            if let Some(p) = &self.poller {
                p.wake();
            }
        }
        self.cv.notify_all();
    }
}

impl Drop for Drive {
    fn drop(&mut self) {
        // Never blocks, so it is safe even inside another runtime; the
        // remaining tasks (readers, the gatekeeper) are dropped with it.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
#[path = "drive_tests.rs"]
mod tests;
