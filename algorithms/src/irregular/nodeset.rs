//! A fixed-size bit set over node ids: the N-bit strings of the tree-based
//! worm [Sivaram 1998, §5.3] and the reachability strings of Fig 18.

use std::fmt;

/// A set of node ids `0..len` stored as a bit string (bit i = node i).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct NodeSet {
    len: usize,
    words: Vec<u64>,
}

impl NodeSet {
    /// The empty set over nodes `0..len`.
    pub fn new(len: usize) -> Self {
        NodeSet {
            len,
            words: vec![0; len.div_ceil(64)],
        }
    }

    /// The set over `0..len` holding `nodes`; ids `>= len` are ignored.
    pub fn from_nodes(len: usize, nodes: impl IntoIterator<Item = usize>) -> Self {
        let mut s = NodeSet::new(len);
        for n in nodes {
            s.insert(n);
        }
        s
    }

    /// The universe size N (number of bits).
    pub fn universe(&self) -> usize {
        self.len
    }

    /// Add `node`; returns false (and does nothing) if `node >= universe()`.
    pub fn insert(&mut self, node: usize) -> bool {
        if node >= self.len {
            return false;
        }
        self.words[node / 64] |= 1 << (node % 64);
        true
    }

    /// Whether `node` is in the set.
    pub fn contains(&self, node: usize) -> bool {
        node < self.len && self.words[node / 64] & (1 << (node % 64)) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The number of nodes in the set.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// `self ∪= other` (bits of `other` beyond this universe are ignored).
    pub fn union_with(&mut self, other: &NodeSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
        self.trim();
    }

    /// `self ∩= other`.
    pub fn intersect_with(&mut self, other: &NodeSet) {
        for (i, a) in self.words.iter_mut().enumerate() {
            *a &= other.words.get(i).copied().unwrap_or(0);
        }
    }

    /// `self \= other`.
    pub fn subtract(&mut self, other: &NodeSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
    }

    /// `self ∩ other` as a new set over this universe.
    pub fn and(&self, other: &NodeSet) -> NodeSet {
        let mut s = self.clone();
        s.intersect_with(other);
        s
    }

    /// Whether every node of `self` is in `other`.
    pub fn is_subset(&self, other: &NodeSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, &a)| a & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// The nodes in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len).filter(move |&n| self.contains(n))
    }

    /// The raw 64-bit words, bit i of word w = node 64·w + i.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    fn trim(&mut self) {
        let r = self.len % 64;
        if r != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << r) - 1;
            }
        }
    }
}

impl fmt::Debug for NodeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_ops() {
        let mut a = NodeSet::from_nodes(70, [1, 5, 65, 69, 70]);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, 5, 65, 69]);
        assert!(!a.insert(70));
        let b = NodeSet::from_nodes(70, [5, 65]);
        assert!(b.is_subset(&a));
        assert!(!a.is_subset(&b));
        assert_eq!(a.and(&b), b);
        a.subtract(&b);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, 69]);
        assert_eq!(a.count(), 2);
        a.union_with(&b);
        assert_eq!(a.count(), 4);
        assert!(NodeSet::new(0).is_empty());
    }
}
