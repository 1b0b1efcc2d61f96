//! Tree shapes over an ordered chain and the one-level split an NI evaluates.

use serde::{Deserialize, Serialize};

use crate::kbinomial::{l1, n_nodes};

/// The shape of a multicast tree over an ordered chain of participants.
///
/// `Chain` is `KBinomial { k: 1 }` and the binomial tree on `n` nodes is
/// `KBinomial { k: ⌈log2 n⌉ }` ([Sivaram 1998, §4.3.3, Fig 9]: "the 4-binomial tree on 16 nodes is
/// the full binomial tree"). `Flat` is separate addressing: the source sends to
/// every destination itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Shape {
    /// Separate addressing: the source is the parent of every other position.
    Flat,
    /// A k-binomial tree (Definition 2): every vertex has at most k children.
    KBinomial {
        /// The maximum number of children of any vertex (k ≥ 1).
        k: usize,
    },
}

/// A shape that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// A k-binomial tree with k = 0 (no vertex could have a child).
    #[error("k-binomial tree needs k >= 1, got k = {0}")]
    ZeroK(usize),
    /// An inclusive range `[lo, hi]` with `lo > hi`.
    #[error("empty range: lo = {lo} > hi = {hi}")]
    EmptyRange {
        /// The range's first position.
        lo: usize,
        /// The range's last position.
        hi: usize,
    },
}

impl Shape {
    /// Check the shape's parameters.
    ///
    /// # Errors
    /// [`ShapeError::ZeroK`] for `KBinomial { k: 0 }`.
    pub fn validate(self) -> Result<(), ShapeError> {
        match self {
            Shape::KBinomial { k: 0 } => Err(ShapeError::ZeroK(0)),
            _ => Ok(()),
        }
    }
}

/// The children of the node at chain position `lo`, which is responsible for the
/// inclusive range `[lo, hi]`, in the order it serves them, each with the
/// inclusive range that child becomes responsible for.
///
/// For k-binomial trees this is one level of the construction of [Sivaram 1998, §4.3.4, Fig 10]:
/// with s = L1(hi−lo+1, k), the i-th child (i = 1..min(s,k)) starts
/// N(s−i, k) places left of the previous child's start (the first from the right
/// end), truncated at lo+1. Recursing on every child range yields exactly the
/// tree `build` produces, so a node that knows only (lo, hi, k) reconstructs its
/// part of the tree.
pub fn split(shape: Shape, lo: usize, hi: usize) -> Result<Vec<(usize, usize)>, ShapeError> {
    if lo > hi {
        return Err(ShapeError::EmptyRange { lo, hi });
    }
    shape.validate()?;
    let sz = hi - lo + 1;
    if sz <= 1 {
        return Ok(Vec::new());
    }
    match shape {
        Shape::Flat => Ok(((lo + 1)..=hi).map(|p| (p, p)).collect()),
        Shape::KBinomial { k } => {
            let s = l1(sz, k);
            let mut out = Vec::with_capacity(s.min(k));
            let mut right = hi + 1;
            for i in 1..=s.min(k) {
                if right - 1 <= lo {
                    break;
                }
                let cover = n_nodes(s - i, k);
                let start = if cover >= (right - lo - 1) as u64 {
                    lo + 1
                } else {
                    (right - cover as usize).max(lo + 1)
                };
                out.push((start, right - 1));
                right = start;
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn children(shape: Shape, lo: usize, hi: usize) -> Vec<usize> {
        split(shape, lo, hi)
            .unwrap()
            .into_iter()
            .map(|(s, _)| s)
            .collect()
    }

    #[test]
    fn binomial_8_root_level() {
        assert_eq!(children(Shape::KBinomial { k: 3 }, 0, 7), vec![4, 2, 1]);
        assert_eq!(children(Shape::KBinomial { k: 3 }, 4, 7), vec![6, 5]);
    }

    #[test]
    fn flat_and_errors() {
        assert_eq!(children(Shape::Flat, 0, 3), vec![1, 2, 3]);
        assert!(split(Shape::KBinomial { k: 0 }, 0, 3).is_err());
        assert!(split(Shape::Flat, 3, 2).is_err());
        assert!(split(Shape::Flat, 2, 2).unwrap().is_empty());
    }
}
