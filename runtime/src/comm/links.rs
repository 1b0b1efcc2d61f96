//! What carries this rank's packets, and what that means for the choice of
//! tree.

use super::{Comm, Link};
use crate::Algorithm;

impl Comm {
    /// What `algo` means for a message of `len` bytes among `n` ranks (the
    /// source included): `algo` itself, except `Auto` on shared-memory
    /// rings. On shared-memory rings a send costs its sender a ring
    /// write (a fraction of a microsecond) while each hop costs the receiver
    /// a turn on a core (1.4 µs one way on two idle cores, several with more
    /// ranks than cores): the cost model of the FPFS paper, where a send and
    /// a hop cost one step each, no longer holds, and the fewest hops win.
    /// So `Auto` takes the flat tree for a message that travels inline in
    /// the rings (below `SHM_MIN_PAYLOAD`) among at most `FLAT_RANKS`
    /// ranks: one hop instead of ⌈log2 n⌉ (5 interleaved rounds, 1 B to
    /// 4 KiB: 7–10 µs against 8–12 at 4 ranks, 22–25 against 28–42 at 8;
    /// from 16 KiB the binomial tree is level or better). Every rank
    /// computes the same (the length and the links are the same for all).
    pub fn algorithm_for(&self, algo: Algorithm, n: usize, len: usize) -> Algorithm {
        if algo == Algorithm::Auto
            && self.few_on_rings(n)
            && len < crate::shm::SHM_MIN_PAYLOAD
            && self.cfg.topology.is_none()
        {
            Algorithm::Flat
        } else {
            algo
        }
    }

    /// Whether the job is on one host's shared-memory rings and `n` ranks
    /// are few enough (at most `FLAT_RANKS`) for one hop from one rank to
    /// all the others to beat ⌈log2 n⌉ hops (see [`Comm::algorithm_for`]).
    /// Every rank computes the same.
    pub(crate) fn few_on_rings(&self, n: usize) -> bool {
        const FLAT_RANKS: usize = 16;
        n <= FLAT_RANKS
            && self.medium() == crate::algorithm::Medium::SharedMemory
            && self.link_to((self.rank + 1) % self.size) == Some(Link::Ring)
    }

    /// The kinds of link this rank has to its peers, each once, in a fixed
    /// order (`ring`, `unix`, `tcp`, `fabric` as [`Link`] displays them).
    pub fn link_kinds(&self) -> Vec<Link> {
        let mut kinds: Vec<Link> = Vec::new();
        for k in (0..self.size).filter_map(|p| self.link_to(p)) {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        kinds.sort_by_key(|k| k.to_string());
        kinds
    }
}
