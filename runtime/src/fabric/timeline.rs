//! Model time on a fabric: resources reserved in virtual time, and the
//! latencies the API reports. A leaf below `fabric`'s frame codec.

use std::collections::VecDeque;

/// A resource used for intervals of virtual time (a link, an NI processor,
/// a DMA engine) by events that arrive in wall-clock order: each use takes
/// the earliest gap at or after its ready time, so a use that is earlier in
/// virtual time but arrives later in wall time is not pushed behind later
/// ones. With uses in virtual-time order it is a plain "busy until".
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// Reservations (start, end), by start; the oldest are forgotten.
    resv: VecDeque<(u64, u64)>,
}

impl Timeline {
    /// Reservations kept (older ones are forgotten: a use that far back in
    /// virtual time is placed as if they had never been).
    pub const KEEP: usize = 1024;

    /// The earliest `t >= ready` with `[t, t + dur)` free.
    pub fn fit(&self, ready: u64, dur: u64) -> u64 {
        let mut t = ready;
        // Reservations do not overlap, so their ends are sorted too: skip
        // every one that ends by `ready`.
        let first = self.resv.partition_point(|r| r.1 <= t);
        for &(s, e) in self.resv.range(first..) {
            if e <= t {
                continue;
            }
            if s >= t.saturating_add(dur) {
                break;
            }
            t = e;
        }
        t
    }

    /// Reserve `[s, e)`.
    pub fn reserve(&mut self, s: u64, e: u64) {
        let mut i = self.resv.partition_point(|r| r.0 <= s);
        // Coalesce with touching neighbours: a busy link is one interval.
        let mut start = s;
        if i > 0 && self.resv[i - 1].1 == s {
            start = self.resv[i - 1].0;
            self.resv.remove(i - 1);
            i -= 1;
        }
        let mut end = e;
        if i < self.resv.len() && self.resv[i].0 == e {
            end = self.resv[i].1;
            self.resv.remove(i);
        }
        self.resv.insert(i, (start, end));
        if self.resv.len() > Self::KEEP {
            self.resv.pop_front();
        }
    }

    /// Use the resource for `dur` from the earliest fit at or after
    /// `ready`; returns when the use ends.
    pub fn take(&mut self, ready: u64, dur: u64) -> u64 {
        let s = self.fit(ready, dur);
        let e = s.saturating_add(dur);
        self.reserve(s, e);
        e
    }
}

/// A latency in the cost model of an emulated fabric: independent of how
/// loaded the machine running the emulation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelLatency {
    /// Cycles of the cost model.
    pub cycles: u64,
    /// Length of a cycle in picoseconds.
    pub cycle_ps: u64,
}

impl ModelLatency {
    /// The latency in microseconds.
    pub fn as_micros_f64(&self) -> f64 {
        self.cycles as f64 * self.cycle_ps as f64 / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_fills_gaps_before_later_reservations() {
        let mut t = Timeline::default();
        assert_eq!(t.take(100, 10), 110);
        // In order: busy until 110.
        assert_eq!(t.take(105, 10), 120);
        // A use far later, then one earlier that fits before it.
        assert_eq!(t.take(1000, 10), 1010);
        assert_eq!(t.take(130, 10), 140);
        // One that does not fit in the gap [140, 1000) is not split.
        assert_eq!(t.fit(995, 10), 1010);
        assert_eq!(t.fit(985, 10), 985);
        // Back-to-back uses coalesce.
        let mut u = Timeline::default();
        for k in 0..10_000 {
            u.take(k, 1);
        }
        assert_eq!(u.resv.len(), 1);
        assert_eq!(u.fit(0, 1), 10_000);
    }
}
