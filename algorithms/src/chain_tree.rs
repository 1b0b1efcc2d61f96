//! A whole multicast tree over chain positions, built by recursing [`split`].
//!
//! Positions are `0..n`, position 0 is the source. The tree is exactly what the
//! construction of [Sivaram 1998, §4.3.4, Fig 10] produces (for k-binomial shapes) because it is made of
//! nothing but [`split`] calls from `(0, n-1)` downwards, the same calls a smart
//! NI makes on each received packet.

use crate::shape::{split, Shape, ShapeError};

/// A tree that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainTreeError {
    /// A tree needs at least one position (the source).
    #[error("a multicast tree needs at least one position (the source), got n = 0")]
    Empty,
    /// The shape's parameters are invalid (e.g. k = 0).
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

/// A multicast tree over chain positions `0..n` (0 = source).
///
/// For every position it records its children in send order, its inclusive
/// responsibility range (itself and everything it must forward to), its parent
/// and its depth. Every child has a larger position than its parent, and every
/// responsibility range `[lo, hi]` starts at the position itself (`lo == pos`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainTree {
    shape: Shape,
    children: Vec<Vec<usize>>,
    range: Vec<(usize, usize)>,
    parent: Vec<Option<usize>>,
    depth: Vec<usize>,
    preorder: Vec<usize>,
}

impl ChainTree {
    /// Build the tree of `shape` over `n` positions by recursing [`split`] from
    /// `(0, n-1)`. Iterative, so a linear chain of any length does not overflow
    /// the stack.
    ///
    /// # Errors
    /// [`ChainTreeError::Empty`] for `n == 0`; [`ChainTreeError::Shape`] for an invalid
    /// shape such as `KBinomial { k: 0 }`.
    pub fn new(shape: Shape, n: usize) -> Result<ChainTree, ChainTreeError> {
        if n == 0 {
            return Err(ChainTreeError::Empty);
        }
        shape.validate()?;
        let mut children = vec![Vec::new(); n];
        let mut range = vec![(0, 0); n];
        let mut parent = vec![None; n];
        let mut depth = vec![0; n];
        let mut preorder = Vec::with_capacity(n);
        range[0] = (0, n - 1);
        // Depth-first, children in send order (push them reversed).
        let mut stack = vec![0usize];
        while let Some(pos) = stack.pop() {
            preorder.push(pos);
            let (lo, hi) = range[pos];
            let kids = split(shape, lo, hi)?;
            for &(clo, chi) in &kids {
                range[clo] = (clo, chi);
                parent[clo] = Some(pos);
                depth[clo] = depth[pos] + 1;
            }
            children[pos] = kids.iter().map(|&(c, _)| c).collect();
            stack.extend(kids.iter().rev().map(|&(c, _)| c));
        }
        debug_assert_eq!(preorder.len(), n, "split must cover every position");
        Ok(ChainTree {
            shape,
            children,
            range,
            parent,
            depth,
            preorder,
        })
    }

    /// The shape the tree was built from.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The number of positions n (source included); always ≥ 1.
    pub fn n(&self) -> usize {
        self.children.len()
    }

    /// The children of `pos`, in the order it sends to them.
    ///
    /// # Panics
    /// If `pos >= self.n()`.
    pub fn children(&self, pos: usize) -> &[usize] {
        &self.children[pos]
    }

    /// The inclusive range of positions `pos` is responsible for (itself
    /// included): `(pos, hi)`. The source's range is `(0, n-1)`.
    ///
    /// # Panics
    /// If `pos >= self.n()`.
    pub fn range(&self, pos: usize) -> (usize, usize) {
        self.range[pos]
    }

    /// The parent of `pos`, `None` for the source (position 0).
    ///
    /// # Panics
    /// If `pos >= self.n()`.
    pub fn parent(&self, pos: usize) -> Option<usize> {
        self.parent[pos]
    }

    /// The depth of `pos` (number of edges from the source; the source has 0).
    ///
    /// # Panics
    /// If `pos >= self.n()`.
    pub fn depth(&self, pos: usize) -> usize {
        self.depth[pos]
    }

    /// The height of the tree: the largest depth of any position.
    pub fn height(&self) -> usize {
        self.depth.iter().copied().max().unwrap_or(0)
    }

    /// The largest number of children of any position.
    pub fn max_children(&self) -> usize {
        self.children.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// Positions in depth-first pre-order, children in send order. Every parent
    /// comes before its children.
    pub fn preorder(&self) -> &[usize] {
        &self.preorder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors() {
        assert_eq!(ChainTree::new(Shape::Flat, 0), Err(ChainTreeError::Empty));
        assert_eq!(
            ChainTree::new(Shape::KBinomial { k: 0 }, 5),
            Err(ChainTreeError::Shape(ShapeError::ZeroK(0)))
        );
        assert_eq!(
            ChainTree::new(Shape::KBinomial { k: 0 }, 0),
            Err(ChainTreeError::Empty)
        );
    }

    #[test]
    fn single_node() {
        let t = ChainTree::new(Shape::KBinomial { k: 3 }, 1).unwrap();
        assert_eq!(t.n(), 1);
        assert!(t.children(0).is_empty());
        assert_eq!(t.range(0), (0, 0));
        assert_eq!(t.parent(0), None);
        assert_eq!(t.height(), 0);
        assert_eq!(t.preorder(), &[0]);
    }

    #[test]
    fn binomial_8() {
        let t = ChainTree::new(Shape::KBinomial { k: 3 }, 8).unwrap();
        assert_eq!(t.children(0), &[4, 2, 1]);
        assert_eq!(t.children(4), &[6, 5]);
        assert_eq!(t.children(2), &[3]);
        assert_eq!(t.children(6), &[7]);
        assert_eq!(t.range(4), (4, 7));
        assert_eq!(t.range(2), (2, 3));
        assert_eq!(t.parent(7), Some(6));
        assert_eq!(t.depth(7), 3);
        assert_eq!(t.height(), 3);
        assert_eq!(t.max_children(), 3);
        assert_eq!(t.preorder(), &[0, 4, 6, 7, 5, 2, 3, 1]);
    }

    #[test]
    fn flat_and_linear() {
        let t = ChainTree::new(Shape::Flat, 5).unwrap();
        assert_eq!(t.children(0), &[1, 2, 3, 4]);
        assert_eq!(t.height(), 1);
        let t = ChainTree::new(Shape::KBinomial { k: 1 }, 5).unwrap();
        for p in 0..4 {
            assert_eq!(t.children(p), &[p + 1]);
            assert_eq!(t.range(p), (p, 4));
        }
        assert_eq!(t.height(), 4);
    }

    #[test]
    fn long_chain_does_not_overflow_stack() {
        let t = ChainTree::new(Shape::KBinomial { k: 1 }, 100_000).unwrap();
        assert_eq!(t.height(), 99_999);
    }

    #[test]
    fn structure_invariants() {
        for n in 1..80 {
            for shape in [
                Shape::Flat,
                Shape::KBinomial { k: 1 },
                Shape::KBinomial { k: 2 },
                Shape::KBinomial { k: 3 },
                Shape::KBinomial { k: 9 },
            ] {
                let t = ChainTree::new(shape, n).unwrap();
                let mut seen = vec![false; n];
                for &p in t.preorder() {
                    assert!(!seen[p]);
                    seen[p] = true;
                    if let Some(q) = t.parent(p) {
                        assert!(seen[q], "parent before child");
                        assert!(q < p);
                        assert_eq!(t.depth(p), t.depth(q) + 1);
                    }
                    // Children ranges partition (p, hi].
                    let (lo, hi) = t.range(p);
                    assert_eq!(lo, p);
                    let mut ranges: Vec<_> = t.children(p).iter().map(|&c| t.range(c)).collect();
                    ranges.sort_unstable();
                    let mut next = lo + 1;
                    for (clo, chi) in ranges {
                        assert_eq!(clo, next);
                        next = chi + 1;
                    }
                    assert_eq!(next, hi + 1);
                    if let Shape::KBinomial { k } = shape {
                        // Largest (rightmost) subtree first, at most k children.
                        assert!(t.children(p).windows(2).all(|w| w[0] > w[1]));
                        assert!(t.children(p).len() <= k);
                    }
                }
                assert!(seen.iter().all(|&s| s));
            }
        }
    }
}
