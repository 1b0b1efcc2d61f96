//! `drive`'s tests: the host's polling, its budget and turns, the
//! background thread's looks.

use super::*;
use std::sync::atomic::AtomicUsize;

fn state(host: bool, host_asleep: bool) -> State {
    State {
        host,
        host_asleep,
        ..State::new()
    }
}

/// The background thread looks every `GRACE` at first, less often
/// while it keeps finding the host inside (doubling, up to
/// `WATCH_MAX`), right on time for a host that just left, and again
/// every `GRACE` once it has taken over.
#[test]
fn the_background_watch_backs_off_while_the_host_drives() {
    let mut st = state(true, false);
    let mut naps = Vec::new();
    for _ in 0..8 {
        naps.push(st.next_look(Duration::ZERO).expect("the host drives"));
    }
    let ms = Duration::from_millis;
    assert_eq!(naps[..5], [GRACE, ms(2), ms(4), ms(8), ms(8)]);
    assert!(naps.iter().all(|&n| n <= WATCH_MAX));
    // The host left 300 µs ago: look again when it has been away GRACE.
    st.host = false;
    let left = Duration::from_micros(300);
    assert_eq!(st.next_look(left), Some(GRACE - left));
    // Away for GRACE: take over, and watch from GRACE again.
    assert_eq!(st.next_look(GRACE), None);
    st.host = true;
    assert_eq!(st.next_look(Duration::ZERO), Some(GRACE));
    // A host asleep in a wait needs nothing until it leaves.
    let mut asleep = state(true, true);
    assert_eq!(asleep.next_look(Duration::ZERO), Some(LONG_NAP));
    assert!(asleep.bg_long);
    assert_eq!(asleep.watch, GRACE);
}

/// A poller whose packets "arrive" on its `after`-th poll.
struct Counted {
    polls: AtomicUsize,
    after: usize,
    in_runtime: bool,
}

impl Poller for Counted {
    fn poll(&self) -> bool {
        self.polls.fetch_add(1, Ordering::SeqCst) + 1 == self.after
    }
    fn park(&self, max: Duration) {
        std::thread::sleep(max.min(Duration::from_millis(1)));
    }
    fn wake(&self) {}
    fn crowded(&self) -> bool {
        false
    }
    fn in_runtime(&self) -> bool {
        self.in_runtime
    }
}

fn drive(after: usize, in_runtime: bool) -> (Drive, Arc<Counted>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let p = Arc::new(Counted {
        polls: AtomicUsize::new(0),
        after,
        in_runtime,
    });
    let d =
        Drive::new(rt, Duration::from_millis(1)).with_poller(Some(p.clone() as Arc<dyn Poller>));
    // The runtime's last turn an hour ahead: never due during a test,
    // however slowly it runs.
    d.turned
        .store(d.now_us() + 3_600_000_000, Ordering::Relaxed);
    (d, p)
}

/// The host polls the rings itself until what it waits for moved, and
/// leaves the NI to the background thread after.
#[test]
fn the_host_polls_outside_the_runtime_until_it_moves() {
    let (d, p) = drive(50, false);
    let moved = || p.polls.load(Ordering::SeqCst) >= 50;
    let before = Instant::now();
    assert!(d.poll_host(&moved, Duration::from_secs(5), before));
    assert_eq!(p.polls.load(Ordering::SeqCst), 50);
    let st = d.lock();
    assert!(!st.host);
    // The exit is stamped after the polls began, whichever reading
    // stamped it.
    assert!(st.last_exit >= before);
}

/// Nothing moves: it gives up within the budget, or at once with no
/// budget; with peers on other hosts (their packets come through the
/// runtime) it does not poll at all. With the runtime due its turn, it
/// takes that turn on this thread and goes on.
#[test]
fn the_host_gives_up_within_the_budget_and_never_with_remote_peers() {
    let (d, p) = drive(usize::MAX, false);
    let t0 = Instant::now();
    assert!(!d.poll_host(&|| false, Duration::from_micros(300), Instant::now()));
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(p.polls.load(Ordering::SeqCst) > 0);
    let polled = p.polls.load(Ordering::SeqCst);
    assert!(!d.poll_host(&|| false, Duration::ZERO, Instant::now()));
    assert_eq!(p.polls.load(Ordering::SeqCst), polled);
    d.turned.store(0, Ordering::Relaxed);
    assert!(d.turn_due());
    assert!(d.poll_host(&|| true, Duration::from_secs(1), Instant::now()));
    assert!(!d.turn_due(), "the due turn was taken");
    assert_eq!(p.polls.load(Ordering::SeqCst), polled);
    let (d, p) = drive(1, true);
    assert!(!d.poll_host(&|| true, Duration::from_secs(1), Instant::now()));
    assert_eq!(p.polls.load(Ordering::SeqCst), 0);
}
