//! Direct-network topologies of Robinson's thesis [Robinson 1994, §2.2.1; §4.1; §4.2.1, Fig 4.2; §4.2.2, Fig 4.3]
//! and the SCI-torus paper [Oral 2003, §3–4]: node ids, coordinates, unicast
//! routes written as channel lists, and the physical links the channels use.
//!
//! * k-ary n-cube **tori** (a different k per dimension allowed),
//!   unidirectional with UTR routing (VC classes p, h) or bidirectional with
//!   BTR routing (classes p, l, h and the "no wrap" tie rule);
//! * **meshes** with dimension-order routing;
//! * binary **hypercubes** with e-cube routing, high-to-low resolution by
//!   default, low-to-high configurable.
//!
//! # Conventions [Robinson 1994, §3.1]
//! Coordinates are written highest dimension first: the 2-D node `(a, b)` has
//! σ1 = a and σ0 = b, and a spec `torus:4x8` has k1 = 4, k0 = 8. The node id is
//! the mixed-radix number with σ_{n−1} most significant, so numeric order of ids
//! **is** the dimension order `<_d` (Definition 4.2). Tori and meshes route the
//! highest dimension first. A hypercube node id is its address; bit i is σ_i.
//!
//! Nothing here allocates per node of the fabric, so large fabrics are cheap.

mod route;
mod spec;

use serde::{Deserialize, Serialize};

pub use spec::TopoSpecError;

/// The largest number of nodes a [`Topology`] may have (2^32).
pub const MAX_NODES: usize = 1 << 32;

/// How the links of a torus are directed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Links {
    /// One link per dimension out of every node, towards σ_d + 1 (mod k):
    /// UTR routing with VC classes p and h [Robinson 1994, §4.2.1, Fig 4.2].
    Unidirectional,
    /// Links towards σ_d ± 1 (mod k): BTR routing with VC classes p, l and h
    /// [Robinson 1994, §4.2.2, Fig 4.3].
    Bidirectional,
}

/// The order in which e-cube routing resolves the differing address bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Resolution {
    /// Highest bit first (the thesis's examples; the default).
    #[default]
    HighToLow,
    /// Lowest bit first (the nCUBE-2). Every dimension-order statement then
    /// applies to bit-reversed addresses [Robinson 1994, §3.1].
    LowToHigh,
}

/// The kind of a [`Topology`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TopoKind {
    /// A k-ary n-cube torus.
    Torus(Links),
    /// A mesh (no wraparound links), bidirectional links, dimension-order
    /// routing.
    Mesh,
    /// A binary n-cube with e-cube routing.
    Hypercube(Resolution),
}

/// A direction of travel along one dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Dir {
    /// Towards σ_d + 1 (mod k); on a hypercube, a 0 → 1 bit flip.
    Plus,
    /// Towards σ_d − 1 (mod k); on a hypercube, a 1 → 0 bit flip.
    Minus,
}

/// A virtual-channel class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Vc {
    /// Pre-wraparound: used before the wrap by a message that will wrap in
    /// this dimension (UTR and BTR).
    P,
    /// Towards lower coordinates after a wrap or without one (BTR only).
    L,
    /// Towards higher coordinates after a wrap or without one (UTR and BTR).
    H,
    /// The only channel of a link in a network without virtual channels
    /// (meshes and hypercubes).
    Single,
}

/// One virtual channel leaving `node` along dimension `dim` in direction
/// `dir`, of class `vc`. A route is the list of the channels it uses, in
/// order; two unicasts contend when they use the same `Channel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Channel {
    /// The node the channel leaves.
    pub node: usize,
    /// The dimension it travels in.
    pub dim: usize,
    /// The direction it travels in.
    pub dir: Dir,
    /// Its virtual-channel class.
    pub vc: Vc,
}

/// A one-directional physical link: the channels of every class leaving
/// `node` along (`dim`, `dir`) are multiplexed on it (same-direction
/// multiplexing, [Robinson 1994, §4.5, Figs 4.16–4.17]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DirectedLink {
    /// The node the link leaves.
    pub node: usize,
    /// Its dimension.
    pub dim: usize,
    /// Its direction.
    pub dir: Dir,
}

/// A physical link with both of its directions (3-way multiplexing of a
/// bidirectional torus, [Robinson 1994, §4.5, Figs 4.16–4.17]): the link between `low` and its
/// `Plus` neighbour in dimension `dim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UndirectedLink {
    /// The endpoint from which the link goes in the `Plus` direction.
    pub low: usize,
    /// Its dimension.
    pub dim: usize,
}

/// A topology that cannot be built or a node that is not in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopoError {
    /// A topology needs at least one dimension.
    #[error("a topology needs at least one dimension")]
    NoDimensions,
    /// A radix below 2.
    #[error("dimension {dim} has radix {k}; every radix must be at least 2")]
    RadixTooSmall {
        /// The dimension (0 = lowest).
        dim: usize,
        /// Its radix.
        k: usize,
    },
    /// More than [`MAX_NODES`] nodes.
    #[error("the topology has more than {max} nodes")]
    TooLarge {
        /// The limit.
        max: usize,
    },
    /// A node id outside `0..nodes`.
    #[error("node {node} is outside the topology (it has {nodes} nodes)")]
    NodeOutOfRange {
        /// The node id.
        node: usize,
        /// The number of nodes.
        nodes: usize,
    },
    /// Coordinates with the wrong number of dimensions.
    #[error("expected {expected} coordinates, got {got}")]
    WrongArity {
        /// The number of dimensions.
        expected: usize,
        /// The number given.
        got: usize,
    },
    /// A coordinate outside `0..k`.
    #[error("coordinate {value} of dimension {dim} is outside 0..{k}")]
    CoordinateOutOfRange {
        /// The dimension (0 = lowest).
        dim: usize,
        /// The coordinate.
        value: usize,
        /// The radix of that dimension.
        k: usize,
    },
    /// H-cycle labels [Robinson 1994, §5.2, Eq 5.2] need the same radix in every
    /// dimension of a torus.
    #[error("this needs a torus with the same radix in every dimension")]
    NotRegularTorus,
}

/// A direct network: its kind and the radix of every dimension.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Topology {
    kind: TopoKind,
    /// `radix[d]` = k_d, indexed by dimension (0 = lowest).
    radix: Vec<usize>,
    /// `stride[d]` = Π_{j<d} k_j.
    stride: Vec<usize>,
    nodes: usize,
}

impl Topology {
    fn build(kind: TopoKind, radices_high_first: &[usize]) -> Result<Topology, TopoError> {
        if radices_high_first.is_empty() {
            return Err(TopoError::NoDimensions);
        }
        let radix: Vec<usize> = radices_high_first.iter().rev().copied().collect();
        let mut stride = Vec::with_capacity(radix.len());
        let mut nodes: usize = 1;
        for (dim, &k) in radix.iter().enumerate() {
            if k < 2 {
                return Err(TopoError::RadixTooSmall { dim, k });
            }
            stride.push(nodes);
            nodes = nodes
                .checked_mul(k)
                .filter(|&n| n <= MAX_NODES)
                .ok_or(TopoError::TooLarge { max: MAX_NODES })?;
        }
        Ok(Topology {
            kind,
            radix,
            stride,
            nodes,
        })
    }

    /// A torus with radices written highest dimension first (`[5, 5]` is
    /// `torus:5x5`).
    ///
    /// # Errors
    /// [`TopoError::NoDimensions`], [`TopoError::RadixTooSmall`],
    /// [`TopoError::TooLarge`].
    pub fn torus(radices: &[usize], links: Links) -> Result<Topology, TopoError> {
        Self::build(TopoKind::Torus(links), radices)
    }

    /// A mesh with radices written highest dimension first.
    ///
    /// # Errors
    /// As [`Topology::torus`].
    pub fn mesh(radices: &[usize]) -> Result<Topology, TopoError> {
        Self::build(TopoKind::Mesh, radices)
    }

    /// A binary `n`-cube.
    ///
    /// # Errors
    /// [`TopoError::NoDimensions`] for n = 0, [`TopoError::TooLarge`] for
    /// n > 32.
    pub fn hypercube(n: usize, resolution: Resolution) -> Result<Topology, TopoError> {
        if n > 32 {
            return Err(TopoError::TooLarge { max: MAX_NODES });
        }
        Self::build(TopoKind::Hypercube(resolution), &vec![2; n])
    }

    /// The kind of topology.
    pub fn kind(&self) -> TopoKind {
        self.kind
    }

    /// The number of dimensions n.
    pub fn dims(&self) -> usize {
        self.radix.len()
    }

    /// The radix k_d of dimension `dim` (0 = lowest), `None` if out of range.
    pub fn radix(&self, dim: usize) -> Option<usize> {
        self.radix.get(dim).copied()
    }

    /// The radices written highest dimension first (as in a spec).
    pub fn radices(&self) -> Vec<usize> {
        self.radix.iter().rev().copied().collect()
    }

    /// The number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Whether this is a torus (of either link kind).
    pub fn is_torus(&self) -> bool {
        matches!(self.kind, TopoKind::Torus(_))
    }

    /// Whether this is a hypercube.
    pub fn is_hypercube(&self) -> bool {
        matches!(self.kind, TopoKind::Hypercube(_))
    }

    /// The common radix if every dimension has the same one.
    pub fn regular_radix(&self) -> Option<usize> {
        let k = self.radix[0];
        self.radix.iter().all(|&r| r == k).then_some(k)
    }

    /// Check that `node` is a node of this topology.
    ///
    /// # Errors
    /// [`TopoError::NodeOutOfRange`].
    pub fn check_node(&self, node: usize) -> Result<(), TopoError> {
        if node < self.nodes {
            Ok(())
        } else {
            Err(TopoError::NodeOutOfRange {
                node,
                nodes: self.nodes,
            })
        }
    }

    /// σ_dim(node), unchecked (callers check the node and dimension).
    pub(crate) fn sigma(&self, node: usize, dim: usize) -> usize {
        (node / self.stride[dim]) % self.radix[dim]
    }

    /// The combined coordinates σ_{n−1}..σ_dim of `node` as one number: two
    /// nodes have equal keys iff they lie in the same order-`dim` sub-torus.
    pub(crate) fn high_key(&self, node: usize, dim: usize) -> usize {
        node / self.stride[dim]
    }

    /// The coordinates of `node`, highest dimension first.
    ///
    /// # Errors
    /// [`TopoError::NodeOutOfRange`].
    pub fn coords(&self, node: usize) -> Result<Vec<usize>, TopoError> {
        self.check_node(node)?;
        Ok((0..self.dims())
            .rev()
            .map(|d| self.sigma(node, d))
            .collect())
    }

    /// The node with the given coordinates, highest dimension first.
    ///
    /// # Errors
    /// [`TopoError::WrongArity`], [`TopoError::CoordinateOutOfRange`].
    pub fn node(&self, coords_high_first: &[usize]) -> Result<usize, TopoError> {
        if coords_high_first.len() != self.dims() {
            return Err(TopoError::WrongArity {
                expected: self.dims(),
                got: coords_high_first.len(),
            });
        }
        let mut id = 0;
        for (i, &value) in coords_high_first.iter().enumerate() {
            let dim = self.dims() - 1 - i;
            let k = self.radix[dim];
            if value >= k {
                return Err(TopoError::CoordinateOutOfRange { dim, value, k });
            }
            id += value * self.stride[dim];
        }
        Ok(id)
    }

    /// The neighbour of `node` one hop along (`dim`, `dir`), unchecked. On a
    /// mesh the caller must not step off the edge.
    pub(crate) fn step(&self, node: usize, dim: usize, dir: Dir) -> usize {
        let k = self.radix[dim];
        let s = self.sigma(node, dim);
        let base = node - s * self.stride[dim];
        let t = match dir {
            Dir::Plus => (s + 1) % k,
            Dir::Minus => (s + k - 1) % k,
        };
        base + t * self.stride[dim]
    }

    /// The neighbour of `node` one hop along (`dim`, `dir`), if that link
    /// exists (always on a torus; not past the edge of a mesh; on a hypercube
    /// only in the direction that flips the bit the right way).
    ///
    /// # Errors
    /// [`TopoError::NodeOutOfRange`].
    pub fn neighbour(&self, node: usize, dim: usize, dir: Dir) -> Result<Option<usize>, TopoError> {
        self.check_node(node)?;
        if dim >= self.dims() {
            return Ok(None);
        }
        let s = self.sigma(node, dim);
        let k = self.radix[dim];
        let exists = match (self.kind, dir) {
            (TopoKind::Torus(Links::Unidirectional), Dir::Minus) => false,
            (TopoKind::Torus(_), _) => true,
            (TopoKind::Mesh, Dir::Plus) => s + 1 < k,
            (TopoKind::Mesh, Dir::Minus) => s > 0,
            (TopoKind::Hypercube(_), Dir::Plus) => s == 0,
            (TopoKind::Hypercube(_), Dir::Minus) => s == 1,
        };
        Ok(exists.then(|| self.step(node, dim, dir)))
    }

    /// The physical link a channel is multiplexed on, one direction only.
    pub fn directed_link(&self, c: &Channel) -> DirectedLink {
        DirectedLink {
            node: c.node,
            dim: c.dim,
            dir: c.dir,
        }
    }

    /// The physical link a channel uses, both directions together.
    ///
    /// On a unidirectional torus the link from σ to σ+1 has one direction
    /// only, so this is the same link as [`Topology::directed_link`].
    pub fn undirected_link(&self, c: &Channel) -> UndirectedLink {
        let low = match c.dir {
            Dir::Plus => c.node,
            Dir::Minus => self.step(c.node, c.dim, Dir::Minus),
        };
        UndirectedLink { low, dim: c.dim }
    }

    /// Whether the thesis's VC existence rules allow channel `c`
    /// ([Robinson 1994, §4.2.1] for UTR, §4.2.2 for BTR; meshes and hypercubes have one channel
    /// class, [`Vc::Single`], on every link).
    pub fn channel_exists(&self, c: &Channel) -> bool {
        if c.node >= self.nodes || c.dim >= self.dims() {
            return false;
        }
        let k = self.radix[c.dim];
        let s = self.sigma(c.node, c.dim);
        match self.kind {
            TopoKind::Mesh | TopoKind::Hypercube(_) => {
                c.vc == Vc::Single && matches!(self.neighbour(c.node, c.dim, c.dir), Ok(Some(_)))
            }
            TopoKind::Torus(Links::Unidirectional) => match (c.dir, c.vc) {
                (Dir::Plus, Vc::H) => s + 2 <= k,
                (Dir::Plus, Vc::P) => s >= 1,
                _ => false,
            },
            TopoKind::Torus(Links::Bidirectional) => match (c.dir, c.vc) {
                (Dir::Minus, Vc::L) => s >= 1,
                (Dir::Plus, Vc::H) => s + 2 <= k,
                // ⌈(k−1)/2⌉ + 1 ≤ σ ≤ k−1
                (Dir::Plus, Vc::P) => s > (k - 1).div_ceil(2),
                // 0 ≤ σ ≤ ⌊(k−1)/2⌋ − 1
                (Dir::Minus, Vc::P) => s < (k - 1) / 2,
                _ => false,
            },
        }
    }

    /// The H-cycle label l(u) of Robinson's Eq 5.2 [Robinson 1994, §5.2, Eq 5.2]:
    /// Σ_i k^i · ((Σ_{j≥i} σ_j(u)) mod k). Sorting by it gives the
    /// Hamiltonian-circuit order used by the M-torus family.
    ///
    /// # Errors
    /// [`TopoError::NotRegularTorus`] unless this is a torus with one radix;
    /// [`TopoError::NodeOutOfRange`].
    pub fn h_label(&self, node: usize) -> Result<usize, TopoError> {
        let k = match (self.kind, self.regular_radix()) {
            (TopoKind::Torus(_), Some(k)) => k,
            _ => return Err(TopoError::NotRegularTorus),
        };
        self.check_node(node)?;
        let mut label = 0;
        let mut suffix = 0;
        for i in (0..self.dims()).rev() {
            suffix += self.sigma(node, i);
            label += self.stride[i] * (suffix % k);
        }
        Ok(label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_coords() {
        let t = Topology::torus(&[4, 8], Links::Unidirectional).unwrap();
        assert_eq!(t.nodes(), 32);
        assert_eq!(t.dims(), 2);
        assert_eq!(t.radix(1), Some(4));
        assert_eq!(t.radix(0), Some(8));
        assert_eq!(t.radices(), vec![4, 8]);
        let id = t.node(&[3, 5]).unwrap();
        assert_eq!(id, 3 * 8 + 5);
        assert_eq!(t.coords(id).unwrap(), vec![3, 5]);
        assert_eq!(
            t.node(&[4, 0]),
            Err(TopoError::CoordinateOutOfRange {
                dim: 1,
                value: 4,
                k: 4
            })
        );
        assert_eq!(
            t.node(&[1]),
            Err(TopoError::WrongArity {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            t.coords(32),
            Err(TopoError::NodeOutOfRange {
                node: 32,
                nodes: 32
            })
        );
        // Numeric order is dimension order (Def 4.2): (1,3,7) <_d (2,1,5) <_d (2,1,8).
        let t3 = Topology::torus(&[10, 10, 10], Links::Bidirectional).unwrap();
        let a = t3.node(&[1, 3, 7]).unwrap();
        let b = t3.node(&[2, 1, 5]).unwrap();
        let c = t3.node(&[2, 1, 8]).unwrap();
        assert!(a < b && b < c);
    }

    #[test]
    fn construction_errors() {
        assert_eq!(
            Topology::torus(&[], Links::Unidirectional),
            Err(TopoError::NoDimensions)
        );
        assert_eq!(
            Topology::mesh(&[4, 1]),
            Err(TopoError::RadixTooSmall { dim: 0, k: 1 })
        );
        assert!(matches!(
            Topology::mesh(&[1 << 20, 1 << 20]),
            Err(TopoError::TooLarge { .. })
        ));
        assert!(matches!(
            Topology::hypercube(40, Resolution::HighToLow),
            Err(TopoError::TooLarge { .. })
        ));
        assert_eq!(
            Topology::hypercube(0, Resolution::HighToLow),
            Err(TopoError::NoDimensions)
        );
    }

    #[test]
    fn h_labels_6x6_and_4x4x4() {
        // [Robinson 1994, §5.2, Fig 5.4, Eq 5.2].
        let t = Topology::torus(&[6, 6], Links::Unidirectional).unwrap();
        let rows = [
            [0, 1, 2, 3, 4, 5],
            [7, 8, 9, 10, 11, 6],
            [14, 15, 16, 17, 12, 13],
            [21, 22, 23, 18, 19, 20],
            [28, 29, 24, 25, 26, 27],
            [35, 30, 31, 32, 33, 34],
        ];
        for (s1, row) in rows.iter().enumerate() {
            for (s0, &l) in row.iter().enumerate() {
                assert_eq!(t.h_label(t.node(&[s1, s0]).unwrap()).unwrap(), l);
            }
        }
        let t = Topology::torus(&[4, 4, 4], Links::Unidirectional).unwrap();
        let plane3 = [
            [63, 60, 61, 62],
            [48, 49, 50, 51],
            [53, 54, 55, 52],
            [58, 59, 56, 57],
        ];
        for (s1, row) in plane3.iter().enumerate() {
            for (s0, &l) in row.iter().enumerate() {
                assert_eq!(t.h_label(t.node(&[3, s1, s0]).unwrap()).unwrap(), l);
            }
        }
        let irregular = Topology::torus(&[4, 6], Links::Unidirectional).unwrap();
        assert_eq!(irregular.h_label(0), Err(TopoError::NotRegularTorus));
        let mesh = Topology::mesh(&[4, 4]).unwrap();
        assert_eq!(mesh.h_label(0), Err(TopoError::NotRegularTorus));
    }

    #[test]
    fn neighbours_and_links() {
        let m = Topology::mesh(&[3, 3]).unwrap();
        assert_eq!(m.neighbour(0, 0, Dir::Minus), Ok(None));
        assert_eq!(m.neighbour(0, 0, Dir::Plus), Ok(Some(1)));
        let u = Topology::torus(&[3], Links::Unidirectional).unwrap();
        assert_eq!(u.neighbour(2, 0, Dir::Plus), Ok(Some(0)));
        assert_eq!(u.neighbour(2, 0, Dir::Minus), Ok(None));
        let h = Topology::hypercube(3, Resolution::HighToLow).unwrap();
        assert_eq!(h.neighbour(0b101, 1, Dir::Plus), Ok(Some(0b111)));
        assert_eq!(h.neighbour(0b101, 1, Dir::Minus), Ok(None));
        let b = Topology::torus(&[5], Links::Bidirectional).unwrap();
        let down = Channel {
            node: 0,
            dim: 0,
            dir: Dir::Minus,
            vc: Vc::P,
        };
        assert_eq!(b.undirected_link(&down), UndirectedLink { low: 4, dim: 0 });
        assert_eq!(
            b.directed_link(&down),
            DirectedLink {
                node: 0,
                dim: 0,
                dir: Dir::Minus
            }
        );
    }
}
