//! The simulator's event queue: a calendar of one-cycle buckets over a
//! window of `W` cycles, with a binary heap for events further ahead.
//!
//! Events come out in (time, scheduling order), exactly as a binary heap on
//! (time, sequence number) would give them: an event beyond the window
//! moves into its bucket as soon as its cycle enters the window, before any
//! event can be pushed into that bucket directly (pushes into the window
//! only happen once it covers the cycle).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// The window: most events fall a few cycles ahead (t_r + t_w, credits,
/// ser); a short window keeps the buckets in the L1/L2 caches.
const W: u64 = 64;

struct Far<E> {
    at: u64,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Far<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Far<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// A monotone event queue in integer time.
pub(crate) struct EventQueue<E> {
    buckets: Vec<VecDeque<E>>,
    cur: u64,
    in_buckets: usize,
    far: BinaryHeap<Far<E>>,
    seq: u64,
}

impl<E> EventQueue<E> {
    pub(crate) fn new() -> Self {
        EventQueue {
            buckets: (0..W).map(|_| VecDeque::new()).collect(),
            cur: 0,
            in_buckets: 0,
            far: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Schedule `ev` at `at` (clamped to the current time).
    pub(crate) fn push(&mut self, at: u64, ev: E) {
        let at = at.max(self.cur);
        if at < self.cur + W {
            self.buckets[(at % W) as usize].push_back(ev);
            self.in_buckets += 1;
        } else {
            self.seq += 1;
            self.far.push(Far {
                at,
                seq: self.seq,
                ev,
            });
        }
    }

    fn migrate(&mut self) {
        while self.far.peek().is_some_and(|f| f.at < self.cur + W) {
            let f = self.far.pop().expect("peeked");
            self.buckets[(f.at % W) as usize].push_back(f.ev);
            self.in_buckets += 1;
        }
    }

    /// The next event and its time.
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        loop {
            if let Some(e) = self.buckets[(self.cur % W) as usize].pop_front() {
                self.in_buckets -= 1;
                return Some((self.cur, e));
            }
            if self.in_buckets == 0 {
                self.cur = self.far.peek()?.at;
            } else {
                self.cur += 1;
            }
            self.migrate();
        }
    }

    /// No event pending.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.in_buckets == 0 && self.far.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcast_algorithms::irregular::SplitMix64;

    /// Same order as a binary heap on (time, sequence number), with pushes
    /// during the run, near and far.
    #[test]
    fn matches_a_heap() {
        let mut rng = SplitMix64::new(9);
        let mut q = EventQueue::new();
        let mut h = BinaryHeap::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        for _ in 0..200 {
            let at = rng.below(20_000) as u64;
            seq += 1;
            q.push(at, seq);
            h.push(std::cmp::Reverse((at, seq)));
        }
        let mut n = 0;
        while let Some((t, e)) = q.pop() {
            let std::cmp::Reverse((ht, hs)) = h.pop().unwrap();
            assert_eq!((t, e), (ht, hs));
            assert!(t >= now);
            now = t;
            n += 1;
            if n < 3000 {
                for _ in 0..rng.below(3) {
                    let d = match rng.below(4) {
                        0 => 0,
                        1 => rng.below(10) as u64,
                        2 => rng.below(5000) as u64,
                        _ => rng.below(100_000) as u64,
                    };
                    seq += 1;
                    q.push(now + d, seq);
                    h.push(std::cmp::Reverse((now + d, seq)));
                }
            }
        }
        assert!(h.is_empty() && q.is_empty());
    }
}
