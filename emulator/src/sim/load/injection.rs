//! The injection process of a load run: every host generates packets by a
//! Bernoulli process (geometric gaps) at `rate` flits per cycle, that is
//! `rate / L` packets per cycle.

use mcast_algorithms::irregular::SplitMix64;

use crate::switch::Time;

/// The Bernoulli process of one run (the same for every host).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bernoulli {
    /// Packets per cycle.
    p: f64,
}

impl Bernoulli {
    /// `rate` flits per cycle in packets of `flits` flits.
    pub(super) fn new(rate: f64, flits: u64) -> Bernoulli {
        Bernoulli {
            p: rate / flits as f64,
        }
    }

    /// A host's first generation (from cycle 0).
    pub(super) fn first(&self, rng: &mut SplitMix64) -> Time {
        gap(rng, self.p) - 1
    }

    /// The generation after one at `at`.
    pub(super) fn next(&self, rng: &mut SplitMix64, at: Time) -> Time {
        at + gap(rng, self.p)
    }
}

/// A geometric gap ≥ 1 with success probability `p` per cycle.
fn gap(rng: &mut SplitMix64, p: f64) -> Time {
    if p >= 1.0 {
        return 1;
    }
    // u in (0, 1].
    let u = ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    ((u.ln() / (1.0 - p).ln()).ceil() as Time).max(1)
}
