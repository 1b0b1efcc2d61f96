//! Tree kinds and their codes: what a source resolves an algorithm to, and
//! the `(code, k)` pair route headers and fingerprints carry for it.
//!
//! A leaf: it imports nothing from this crate, so that `wire` (which encodes
//! these codes) sits below `algorithm`, `worms` and `fabric`.

use mcast_algorithms::trees;
use mcast_algorithms::Shape;

/// The largest k a route header carries.
pub const MAX_K: usize = u16::MAX as usize;

/// The tree code a worm bcast's fingerprint carries (its k is the scheme's
/// `Worm::code`). Never on a route header: worm packets carry a marker.
pub const WORM_TREE_CODE: u8 = 0xFF;

/// A topology-aware tree an NI computes from the address field D alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopoTree {
    UTorus,
    UCube,
    Maxport,
    Combine,
    WSort,
}

impl TopoTree {
    /// The planner in `mcast-algorithms`.
    pub fn planner(self) -> trees::TreeAlgorithm {
        match self {
            TopoTree::UTorus => trees::TreeAlgorithm::UTorus,
            TopoTree::UCube => trees::TreeAlgorithm::UCube,
            TopoTree::Maxport => trees::TreeAlgorithm::Maxport,
            TopoTree::Combine => trees::TreeAlgorithm::Combine,
            TopoTree::WSort => trees::TreeAlgorithm::WSort,
        }
    }

    /// Whether it runs on hypercubes only.
    pub(crate) fn hypercube_only(self) -> bool {
        !matches!(self, TopoTree::UTorus)
    }

    /// Its tree code (2 to 6).
    fn code(self) -> u8 {
        match self {
            TopoTree::UTorus => 2,
            TopoTree::UCube => 3,
            TopoTree::Maxport => 4,
            TopoTree::Combine => 5,
            TopoTree::WSort => 6,
        }
    }
}

/// What a source resolves an `Algorithm` to for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TreeKind {
    /// A tree over a chain (flat or k-binomial): `mcast_algorithms::split`.
    Chain(Shape),
    /// A topology-aware planner run on the header's member list.
    Topo(TopoTree),
    /// The host-aware two-level tree (`mcast_algorithms::hosts`): a
    /// k-binomial tree among one leader per host (k = 0: the flat tree),
    /// the binomial tree inside each host; run on the header's member list
    /// and the job's host table.
    Hosts { k: usize },
}

/// The (code, k) pair of a chain shape: 0 flat, 1 k-binomial.
pub(crate) fn shape_code(shape: Shape) -> (u8, u16) {
    match shape {
        Shape::Flat => (0, 0),
        Shape::KBinomial { k } => (1, k.min(MAX_K) as u16),
    }
}

/// The (code, k) pair a route header carries for a tree.
pub fn tree_code(tree: TreeKind) -> (u8, u16) {
    match tree {
        TreeKind::Chain(shape) => shape_code(shape),
        TreeKind::Topo(t) => (t.code(), 0),
        TreeKind::Hosts { k } => (HOSTS_CODE, k.min(MAX_K) as u16),
    }
}

/// The tree code of the host-aware tree (its k is the leaders' k).
const HOSTS_CODE: u8 = 7;

/// Why a (code, k) pair names no tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BadTree {
    /// An unknown code.
    Code(u8),
    /// A k that does not fit the code.
    K(String),
}

/// The chain shape of a (code, k) pair (codes 0 and 1).
pub(crate) fn shape_of_code(code: u8, k: u16) -> Result<Shape, BadTree> {
    match code {
        0 if k == 0 => Ok(Shape::Flat),
        0 => Err(BadTree::K(format!("flat tree with k = {k}"))),
        1 if k >= 1 => Ok(Shape::KBinomial { k: k as usize }),
        1 => Err(BadTree::K("k-binomial with k = 0".into())),
        other => Err(BadTree::Code(other)),
    }
}

/// The tree of a (code, k) pair: the inverse of [`tree_code`].
pub(crate) fn tree_of_code(code: u8, k: u16) -> Result<TreeKind, BadTree> {
    if code == HOSTS_CODE {
        return Ok(TreeKind::Hosts { k: k as usize });
    }
    if code > 1 && k != 0 {
        return Err(BadTree::K(format!("k = {k} with tree code {code}")));
    }
    Ok(match code {
        0 | 1 => TreeKind::Chain(shape_of_code(code, k)?),
        2 => TreeKind::Topo(TopoTree::UTorus),
        3 => TreeKind::Topo(TopoTree::UCube),
        4 => TreeKind::Topo(TopoTree::Maxport),
        5 => TreeKind::Topo(TopoTree::Combine),
        6 => TreeKind::Topo(TopoTree::WSort),
        other => return Err(BadTree::Code(other)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        let trees = [
            TreeKind::Chain(Shape::Flat),
            TreeKind::Chain(Shape::KBinomial { k: 1 }),
            TreeKind::Chain(Shape::KBinomial { k: 7 }),
            TreeKind::Topo(TopoTree::UTorus),
            TreeKind::Topo(TopoTree::UCube),
            TreeKind::Topo(TopoTree::Maxport),
            TreeKind::Topo(TopoTree::Combine),
            TreeKind::Topo(TopoTree::WSort),
            TreeKind::Hosts { k: 0 },
            TreeKind::Hosts { k: 1 },
            TreeKind::Hosts { k: 3 },
        ];
        for t in trees {
            let (c, k) = tree_code(t);
            assert_eq!(tree_of_code(c, k), Ok(t));
        }
        assert_eq!(tree_of_code(8, 0), Err(BadTree::Code(8)));
        assert!(matches!(tree_of_code(2, 1), Err(BadTree::K(_))));
        assert!(matches!(tree_of_code(1, 0), Err(BadTree::K(_))));
        assert_eq!(tree_of_code(WORM_TREE_CODE, 0), Err(BadTree::Code(0xFF)));
    }
}
