//! The SCI paper's unicast (store-and-forward) versions of Md-torus and
//! Mu-torus(r) [Oral 2003, §3, Fig 1d; §3, Fig 1e; §3, Fig 1, derived], over the H-cycle of Robinson's
//! chapter 5 [Robinson 1994, §5.2, Eq 5.2; §5.4, Fig 5.8].
//!
//! The SCI testbed had no multi-destination worms: a holder sends separate
//! unicasts to the heads of the other partitions (in H-cycle order) and every
//! worm that would run along a ring becomes a relay chain. Choices recorded
//! here, as the choices require:
//! * Md-torus merges the two pieces into which rotating the H-chain to the
//!   source splits the source's own sub-torus: the source serves its whole
//!   sub-torus ([Oral 2003, §3, Fig 1d], the choice the 4×4 vectors of tests/path_examples.rs use; the
//!   thesis's path-based version would split off the tail instead,
//!   [Robinson 1994, §6.3]).
//! * Mu-torus's r is configurable in both readings ([`MuPartition`]).

use super::{Cover, Kids, MuPartition};
use crate::topo::{TopoError, Topology};

/// The H-cycle with respect to the source (Fig 5.8): source and destinations
/// sorted by H label, rotated so that the source is first.
pub(crate) fn h_cycle(
    topo: &Topology,
    source: usize,
    dests: &[usize],
) -> Result<Vec<usize>, TopoError> {
    let mut keyed = Vec::with_capacity(dests.len() + 1);
    keyed.push((topo.h_label(source)?, source));
    for &d in dests {
        keyed.push((topo.h_label(d)?, d));
    }
    keyed.sort_unstable();
    let s = keyed
        .iter()
        .position(|&(_, v)| v == source)
        .unwrap_or_default();
    keyed.rotate_left(s);
    Ok(keyed.into_iter().map(|(_, v)| v).collect())
}

/// The relay chain of a worm run store-and-forward: the holder sends to the
/// next node, which becomes responsible for the rest.
fn relay(chain: &[usize], offset: usize, out: &mut Kids) {
    if chain.len() >= 2 {
        out.push((chain[1], Cover::Range(offset + 1, offset + chain.len())));
    }
}

/// Md-torus, store-and-forward: while the holder's part spans more than one
/// ring, partition it into the sub-tori of order D (D = the highest
/// dimension in which its members differ), send to the first node of every
/// other sub-torus (covering that sub-torus), and keep its own; a part
/// inside one ring is a relay chain. n phases in the worm version.
pub(crate) fn md_split(topo: &Topology, chain: &[usize], out: &mut Kids) {
    let mut current = chain.to_vec();
    while current.len() > 1 {
        let first = current[0];
        let top = (0..topo.dims()).rev().find(|&d| {
            current
                .iter()
                .any(|&v| topo.sigma(v, d) != topo.sigma(first, d))
        });
        match top {
            None => break,
            Some(0) => {
                if current.len() >= 2 {
                    out.push((current[1], Cover::List(current[1..].to_vec())));
                }
                break;
            }
            Some(d) => {
                let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
                for &v in &current {
                    let key = topo.high_key(v, d);
                    match groups.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, g)) => g.push(v),
                        None => groups.push((key, vec![v])),
                    }
                }
                let mut groups = groups.into_iter();
                let own = groups.next().map(|(_, g)| g).unwrap_or_default();
                out.extend(groups.map(|(_, g)| (g[0], Cover::List(g))));
                current = own;
            }
        }
    }
}

/// Mu-torus(r), store-and-forward, in either reading of r.
pub(crate) fn mu_split(chain: &[usize], r: usize, partition: MuPartition, out: &mut Kids) {
    match partition {
        MuPartition::Length => {
            if chain.len() <= r {
                return relay(chain, 0, out);
            }
            let mut start = r;
            while start < chain.len() {
                let end = (start + r).min(chain.len());
                out.push((chain[start], Cover::Range(start, end)));
                start = end;
            }
            relay(&chain[..r], 0, out);
        }
        MuPartition::Count => {
            // The holder's own part is always a prefix of its chain, so
            // ranges into `current` are ranges into `chain`.
            let mut current = chain;
            while current.len() > 1 {
                let m = current.len();
                let (q, rem) = if m <= r { (1, 0) } else { (m / r, m % r) };
                let parts = if m <= r { m } else { r };
                let mut start = 0;
                let mut own = current;
                for i in 0..parts {
                    let size = q + usize::from(i < rem);
                    if i == 0 {
                        own = &current[..size];
                    } else {
                        out.push((current[start], Cover::Range(start, start + size)));
                    }
                    start += size;
                }
                current = own;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::Links;
    use crate::trees::chain::tests::kids;

    #[test]
    fn h_cycle_6x6() {
        // [Robinson 1994, §5.1, §5.4, Figs 5.1, 5.7].
        let t = Topology::torus(&[6, 6], Links::Unidirectional).unwrap();
        let n = |a, b| t.node(&[a, b]).unwrap();
        let dests = [
            n(0, 5),
            n(4, 5),
            n(3, 4),
            n(5, 4),
            n(4, 3),
            n(1, 2),
            n(2, 1),
            n(5, 1),
            n(1, 0),
        ];
        let want = [
            n(3, 2),
            n(4, 3),
            n(4, 5),
            n(5, 1),
            n(5, 4),
            n(0, 5),
            n(1, 0),
            n(1, 2),
            n(2, 1),
            n(3, 4),
        ];
        assert_eq!(h_cycle(&t, n(3, 2), &dests).unwrap(), want);
    }

    #[test]
    fn uniform_parts() {
        let c: Vec<usize> = (0..10).collect();
        // 3,3,2,2 (first m mod r parts larger).
        assert_eq!(
            kids(&c, |ch, o| mu_split(ch, 4, MuPartition::Count, o)),
            vec![
                (3, vec![3, 4, 5]),
                (6, vec![6, 7]),
                (8, vec![8, 9]),
                (1, vec![1]),
                (2, vec![2]),
            ]
        );
        assert_eq!(
            kids(&c, |ch, o| mu_split(ch, 4, MuPartition::Length, o)),
            vec![(4, vec![4, 5, 6, 7]), (8, vec![8, 9]), (1, vec![1, 2, 3])]
        );
        assert_eq!(
            kids(&c[..3], |ch, o| mu_split(ch, 4, MuPartition::Length, o)),
            vec![(1, vec![1, 2])]
        );
        assert!(kids(&c[..1], |ch, o| mu_split(ch, 4, MuPartition::Count, o)).is_empty());
    }
}
