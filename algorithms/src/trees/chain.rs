//! Dimension-ordered chains, R-chains and the chain splits of U-torus, U-mesh
//! and k-binomial trees.

use super::{Cover, Kids};
use crate::shape::{split, Shape};
use crate::topo::{Resolution, TopoKind, Topology};

/// The sort key of `<_d` (Definition 4.2): the node id, bit-reversed on a
/// hypercube that resolves low to high [Robinson 1994, §3.1].
pub(crate) fn dim_key(topo: &Topology, id: usize) -> usize {
    match topo.kind() {
        TopoKind::Hypercube(Resolution::LowToHigh) => {
            let n = topo.dims();
            id.reverse_bits() >> (usize::BITS as usize - n)
        }
        _ => id,
    }
}

/// Source and destinations sorted in dimension order (Definition 4.3).
/// `dests` must be sorted by id (as [`super::plan`] leaves them).
pub(crate) fn dimension_ordered(topo: &Topology, source: usize, dests: &[usize]) -> Vec<usize> {
    let mut chain = Vec::with_capacity(dests.len() + 1);
    if matches!(topo.kind(), TopoKind::Hypercube(Resolution::LowToHigh)) {
        chain.push(source);
        chain.extend_from_slice(dests);
        chain.sort_unstable_by_key(|&v| dim_key(topo, v));
    } else {
        // The key is the id: insert the source into the sorted destinations.
        let at = dests.partition_point(|&d| d < source);
        chain.extend_from_slice(&dests[..at]);
        chain.push(source);
        chain.extend_from_slice(&dests[at..]);
    }
    chain
}

/// The R-chain with respect to the source (Definition 4.4): the dimension-
/// ordered chain rotated end-around so that the source comes first.
pub(crate) fn r_chain(topo: &Topology, source: usize, dests: &[usize]) -> Vec<usize> {
    let mut chain = dimension_ordered(topo, source, dests);
    let s = chain.iter().position(|&v| v == source).unwrap_or_default();
    chain.rotate_left(s);
    chain
}

/// U-torus (Fig 4.9): `center = left + ⌈(right − left + 1)/2⌉`, send to
/// `d_center` with D = {d_center..d_right}, keep the lower part.
pub(crate) fn utorus_split(chain: &[usize], out: &mut Kids) {
    let mut right = chain.len();
    while right > 1 {
        let center = right.div_ceil(2);
        out.push((chain[center], Cover::Range(center, right)));
        right = center;
    }
}

/// U-mesh recursive doubling on an unrotated dimension-ordered chain [R]:
/// halve the chain (the lower half has ⌈L/2⌉ nodes); a holder in the lower
/// half sends to the first node of the upper half, a holder in the upper half
/// to the last node of the lower half, which becomes responsible for it; the
/// holder keeps its own half. D keeps chain order, so the receiver is its
/// first or its last element.
pub(crate) fn umesh_split(holder: usize, chain: &[usize], out: &mut Kids) {
    let Some(i) = chain.iter().position(|&v| v == holder) else {
        return;
    };
    let (mut left, mut right) = (0, chain.len());
    while right - left > 1 {
        let mid = left + (right - left).div_ceil(2);
        if i < mid {
            out.push((chain[mid], Cover::Range(mid, right)));
            right = mid;
        } else {
            out.push((chain[mid - 1], Cover::Range(left, mid)));
            left = mid;
        }
    }
}

/// The k-binomial split of [`crate::shape::split`] over a chain whose first
/// element is the holder.
pub(crate) fn kbinomial_split(chain: &[usize], k: usize, out: &mut Kids) {
    if chain.len() < 2 {
        return;
    }
    if let Ok(kids) = split(Shape::KBinomial { k }, 0, chain.len() - 1) {
        out.extend(
            kids.into_iter()
                .map(|(lo, hi)| (chain[lo], Cover::Range(lo, hi + 1))),
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::topo::Links;

    /// Run a split and materialise its address fields.
    pub(crate) fn kids(
        chain: &[usize],
        f: impl FnOnce(&[usize], &mut Kids),
    ) -> Vec<(usize, Vec<usize>)> {
        let mut out = Vec::new();
        f(chain, &mut out);
        out.into_iter()
            .map(|(t, c)| match c {
                Cover::Range(lo, hi) => (t, chain[lo..hi].to_vec()),
                Cover::List(v) => (t, v),
            })
            .collect()
    }

    #[test]
    fn chains() {
        let t = Topology::torus(&[5, 5], Links::Unidirectional).unwrap();
        let n = |a, b| t.node(&[a, b]).unwrap();
        let mut dests = [n(0, 0), n(1, 1), n(2, 1), n(0, 3), n(1, 3), n(4, 4)];
        dests.sort_unstable();
        assert_eq!(
            r_chain(&t, n(4, 3), &dests),
            vec![
                n(4, 3),
                n(4, 4),
                n(0, 0),
                n(0, 3),
                n(1, 1),
                n(1, 3),
                n(2, 1)
            ]
        );
        let h = Topology::hypercube(5, Resolution::LowToHigh).unwrap();
        // [Robinson 1994, §3.2.1, §3.3]: low-to-high order {10100, 00010, 10010}.
        assert_eq!(
            dimension_ordered(&h, 0b10010, &[0b00010, 0b10100]),
            vec![0b10100, 0b00010, 0b10010]
        );
        let h = Topology::hypercube(5, Resolution::HighToLow).unwrap();
        assert_eq!(
            dimension_ordered(&h, 0b10010, &[0b00010, 0b10100]),
            vec![0b00010, 0b10010, 0b10100]
        );
        assert_eq!(
            dimension_ordered(&h, 0b10110, &[0b00010, 0b10100]),
            vec![0b00010, 0b10100, 0b10110]
        );
    }

    #[test]
    fn splits() {
        assert_eq!(
            kids(&[0, 1, 2, 3, 4, 5, 6], utorus_split),
            vec![(4, vec![4, 5, 6]), (2, vec![2, 3]), (1, vec![1])]
        );
        assert!(kids(&[9], utorus_split).is_empty());
        assert_eq!(
            kids(&[0, 1, 2, 3, 4, 5, 6], |c, o| umesh_split(5, c, o)),
            vec![(3, vec![0, 1, 2, 3]), (6, vec![6]), (4, vec![4])]
        );
        assert_eq!(
            kids(&[0, 1, 2, 3], |c, o| umesh_split(3, c, o)),
            vec![(1, vec![0, 1]), (2, vec![2])]
        );
        assert!(kids(&[0, 1], |c, o| umesh_split(7, c, o)).is_empty());
        assert_eq!(
            kids(&[10, 11, 12, 13, 14, 15, 16, 17], |c, o| kbinomial_split(
                c, 3, o
            )),
            vec![
                (14, vec![14, 15, 16, 17]),
                (12, vec![12, 13]),
                (11, vec![11])
            ]
        );
    }
}
