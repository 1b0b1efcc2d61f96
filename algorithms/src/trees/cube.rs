//! Hypercube planners [Robinson 1994, ch. 3]: the generalized multicast
//! algorithm of Fig 3.5 (U-cube, Maxport, Combine), WeightedSort with
//! CubeCenter (Fig 3.8) and so W-sort.
//!
//! Chains carry absolute addresses. δ is XOR-invariant [Robinson 1994, §3.3, Fig 3.5], so
//! a receiver splits its address field without knowing the source; only the
//! source's initial sort uses the source-relative key. With low-to-high
//! resolution every "bit j" below is bit n−1−j of the address (the thesis's
//! bit reversal).

use super::{Cover, Kids};
use crate::topo::{Resolution, TopoKind, Topology};

/// Which node of the remaining chain a holder sends to next (Fig 3.5 line 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// U-cube: `center`.
    Center,
    /// Maxport: `highdim`.
    HighDim,
    /// Combine: `max(highdim, center)`.
    Combine,
}

/// Bit order helpers for one hypercube.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cube {
    n: usize,
    low_first: bool,
}

impl Cube {
    pub(crate) fn new(topo: &Topology) -> Cube {
        Cube {
            n: topo.dims(),
            low_first: matches!(topo.kind(), TopoKind::Hypercube(Resolution::LowToHigh)),
        }
    }

    /// The address bit that is resolution-order bit `j` (j = n−1 resolved first).
    fn real_bit(&self, j: usize) -> usize {
        if self.low_first {
            self.n - 1 - j
        } else {
            j
        }
    }

    /// δ(a, b) in resolution order: the resolution-order index of the first
    /// channel of the route (Definition 3.2). `a != b`.
    fn delta(&self, a: usize, b: usize) -> usize {
        let x = a ^ b;
        if self.low_first {
            self.n - 1 - x.trailing_zeros() as usize
        } else {
            (usize::BITS - 1 - x.leading_zeros()) as usize
        }
    }

    fn bit(&self, a: usize, j: usize) -> bool {
        (a >> self.real_bit(j)) & 1 == 1
    }

    /// The source-relative dimension-ordered chain [Robinson 1994, §3.3, Fig 3.4]: sort by
    /// the resolution-order key of `addr XOR source`; the source is first.
    pub(crate) fn relative_chain(&self, source: usize, dests: &[usize]) -> Vec<usize> {
        let mut chain = Vec::with_capacity(dests.len() + 1);
        chain.push(source);
        chain.extend_from_slice(dests);
        let n = self.n;
        let low_first = self.low_first;
        chain.sort_unstable_by_key(|&v| {
            let r = v ^ source;
            if low_first {
                r.reverse_bits() >> (usize::BITS as usize - n)
            } else {
                r
            }
        });
        chain
    }

    /// GeneralizedMulticast (Fig 3.5) run by the holder `chain[0]` on a
    /// cube-ordered chain.
    pub(crate) fn generalized(&self, chain: &[usize], rule: Next, out: &mut Kids) {
        let Some(&local) = chain.first() else {
            return;
        };
        let mut right = chain.len() - 1;
        while right > 0 {
            let k = self.delta(local, chain[right]);
            // The nodes with δ(local, ·) = k are contiguous at the end of a
            // cube-ordered chain whose first node is the holder.
            let highdim = 1 + chain[1..=right].partition_point(|&v| self.delta(local, v) < k);
            let center = right.div_ceil(2);
            let next = match rule {
                Next::Center => center,
                Next::HighDim => highdim,
                Next::Combine => highdim.max(center),
            };
            out.push((chain[next], Cover::Range(next, right + 1)));
            right = next - 1;
        }
    }

    /// WeightedSort(D, 0, m, n) of Fig 3.8 on the whole chain (source first).
    pub(crate) fn weighted_sort(&self, chain: &mut [usize]) {
        if chain.len() > 2 {
            let last = chain.len() - 1;
            self.ws(chain, 0, last, self.n);
        }
    }

    fn center(&self, d: &[usize], first: usize, last: usize, ns: usize) -> usize {
        let b = ns - 1;
        let fb = self.bit(d[first], b);
        first + 1 + d[first + 1..=last].partition_point(|&v| self.bit(v, b) == fb)
    }

    fn ws(&self, d: &mut [usize], first: usize, last: usize, ns: usize) {
        if last < first + 2 || ns == 0 {
            return;
        }
        let center = self.center(d, first, last, ns);
        self.ws(d, first, center - 1, ns - 1);
        if center <= last {
            self.ws(d, center, last, ns - 1);
        }
        if first != 0 && center - first < last + 1 - center {
            d[first..=last].rotate_left(center - first);
        }
    }
}

/// CubeCenter(D, first, last, nS) of Fig 3.8 on source-relative addresses
/// (high-to-low resolution): the first index in `first+1..=last` whose bit
/// nS−1 differs from `D[first]`'s, `last + 1` if none (one half is empty).
/// Binary search, so `D[first..=last]` must be cube-ordered.
///
/// Returns `None` for an invalid range (`first > last`, `last` out of bounds)
/// or `ns` not in `1..=usize::BITS`.
pub fn cube_center(d: &[usize], first: usize, last: usize, ns: usize) -> Option<usize> {
    if first > last || last >= d.len() || ns == 0 || ns > usize::BITS as usize {
        return None;
    }
    let cube = Cube {
        n: usize::BITS as usize,
        low_first: false,
    };
    Some(cube.center(d, first, last, ns))
}

/// WeightedSort (Fig 3.8) of a source-relative, cube-ordered chain of an
/// `n`-cube in place (high-to-low resolution; `d[0]` is the source, 0): the
/// more populated half of every S-cube comes first, the source stays first.
/// A chain that is not cube-ordered is permuted without error but without
/// meaning. `n` above `usize::BITS` is treated as `usize::BITS`.
pub fn weighted_sort(d: &mut [usize], n: usize) {
    let cube = Cube {
        n: n.min(usize::BITS as usize),
        low_first: false,
    };
    cube.weighted_sort(d);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trees::chain::tests::kids;

    #[test]
    fn weighted_sort_fig_3_7() {
        // [Robinson 1994, §3.1, §3.4, Figs 3.1, 3.2, 3.9]: {0,1,3,5,7,11,12,14,15} -> {0,1,3,5,7,14,15,12,11}.
        let mut d = vec![0, 1, 3, 5, 7, 11, 12, 14, 15];
        weighted_sort(&mut d, 4);
        assert_eq!(d, vec![0, 1, 3, 5, 7, 14, 15, 12, 11]);
        let d = [0, 1, 3, 5, 7, 11, 12, 14, 15];
        assert_eq!(cube_center(&d, 0, 8, 4), Some(5));
        assert_eq!(cube_center(&d, 5, 8, 3), Some(6));
        assert_eq!(cube_center(&d, 0, 4, 4), Some(5));
        assert_eq!(cube_center(&d, 4, 2, 4), None);
        assert_eq!(cube_center(&d, 0, 9, 4), None);
        assert_eq!(cube_center(&d, 0, 8, 0), None);
        let mut tiny = vec![0];
        weighted_sort(&mut tiny, 99);
        assert_eq!(tiny, vec![0]);
    }

    #[test]
    fn generalized_fig_3_6() {
        let t = Topology::hypercube(4, Resolution::HighToLow).unwrap();
        let c = Cube::new(&t);
        let chain = c.relative_chain(0, &[0b1001, 0b1010, 0b1011]);
        assert_eq!(chain, vec![0, 9, 10, 11]);
        assert_eq!(
            kids(&chain, |ch, o| c.generalized(ch, Next::HighDim, o)),
            vec![(9, vec![9, 10, 11])]
        );
        assert_eq!(
            kids(&chain, |ch, o| c.generalized(ch, Next::Center, o)),
            vec![(10, vec![10, 11]), (9, vec![9])]
        );
        assert_eq!(
            kids(&chain, |ch, o| c.generalized(ch, Next::Combine, o)),
            vec![(10, vec![10, 11]), (9, vec![9])]
        );
    }
}
