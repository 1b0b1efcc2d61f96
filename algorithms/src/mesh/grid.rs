//! n-dimensional meshes as the path-based schemes see them: coordinates
//! lowest dimension first (x = dimension 0, y = dimension 1, …), Manhattan
//! distance, the snake Hamiltonian labelling and dimension-ordered (X, then
//! Y, then Z …) routes written as node lists.
//!
//! Node ids are those of [`Topology`]: the mixed-radix number with the
//! highest dimension most significant, i.e. row-major `y·W + x` in 2-D. The
//! `mcsim` notation `"a,b"` lists coordinates highest first, so a point (x, y)
//! of the tests = (5, 2) is `"2,5"`.

use crate::topo::{TopoKind, Topology};

use super::MeshError;

/// An n-D mesh (no wraparound links).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mesh {
    /// `radix[d]`, dimension 0 first.
    radix: Vec<usize>,
    /// `stride[d]` = Π_{j<d} k_j.
    stride: Vec<usize>,
    nodes: usize,
}

impl Mesh {
    /// The mesh of a [`Topology`] of kind mesh.
    ///
    /// # Errors
    /// [`MeshError::NotAMesh`] for tori and hypercubes.
    pub fn from_topology(topo: &Topology) -> Result<Mesh, MeshError> {
        if topo.kind() != TopoKind::Mesh {
            return Err(MeshError::NotAMesh(topo.to_string()));
        }
        let radix: Vec<usize> = (0..topo.dims()).filter_map(|d| topo.radix(d)).collect();
        Ok(Self::build(radix))
    }

    /// A mesh with the radices written highest dimension first (as in a spec:
    /// `[16, 16]` is `mesh:16x16`; `[6, 12]` has 12 columns and 6 rows).
    ///
    /// # Errors
    /// As [`Topology::mesh`], wrapped in [`MeshError::Topo`].
    pub fn new(radices_high_first: &[usize]) -> Result<Mesh, MeshError> {
        let t = Topology::mesh(radices_high_first)?;
        Self::from_topology(&t)
    }

    fn build(radix: Vec<usize>) -> Mesh {
        let mut stride = Vec::with_capacity(radix.len());
        let mut nodes = 1;
        for &k in &radix {
            stride.push(nodes);
            nodes *= k;
        }
        Mesh {
            radix,
            stride,
            nodes,
        }
    }

    /// The number of dimensions.
    pub fn dims(&self) -> usize {
        self.radix.len()
    }

    /// The radix of dimension `d` (0 = x).
    pub fn radix(&self, d: usize) -> usize {
        self.radix.get(d).copied().unwrap_or(0)
    }

    /// The number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Check a node id.
    ///
    /// # Errors
    /// [`MeshError::NodeOutOfRange`].
    pub fn check_node(&self, node: usize) -> Result<(), MeshError> {
        if node < self.nodes {
            Ok(())
        } else {
            Err(MeshError::NodeOutOfRange {
                node,
                nodes: self.nodes,
            })
        }
    }

    /// Coordinate `d` of `node` (unchecked node).
    pub fn coord(&self, node: usize, d: usize) -> usize {
        (node / self.stride[d]) % self.radix[d]
    }

    /// All coordinates of `node`, dimension 0 (x) first.
    pub fn coords(&self, node: usize) -> Vec<usize> {
        (0..self.dims()).map(|d| self.coord(node, d)).collect()
    }

    /// The node with these coordinates (dimension 0 first), if inside.
    pub fn node(&self, coords_low_first: &[usize]) -> Option<usize> {
        if coords_low_first.len() != self.dims() {
            return None;
        }
        let mut id = 0;
        for (d, &c) in coords_low_first.iter().enumerate() {
            if c >= self.radix[d] {
                return None;
            }
            id += c * self.stride[d];
        }
        Some(id)
    }

    /// The Manhattan distance.
    pub fn dist(&self, a: usize, b: usize) -> usize {
        (0..self.dims())
            .map(|d| self.coord(a, d).abs_diff(self.coord(b, d)))
            .sum()
    }

    /// Whether `a` and `b` are neighbours (one link apart).
    pub fn adjacent(&self, a: usize, b: usize) -> bool {
        a < self.nodes && b < self.nodes && self.dist(a, b) == 1
    }

    /// The snake (boustrophedon) Hamiltonian label ℓ: the highest dimension
    /// varies slowest and dimension d is traversed backwards when the sum of
    /// the higher coordinates is odd. In 2-D this is Lin, McKinley and Ni's
    /// ℓ(x, y) = y·W + x for even y and y·W + W − 1 − x for odd y; nodes with
    /// consecutive labels are neighbours in any number of dimensions.
    pub fn label(&self, node: usize) -> usize {
        let mut l = 0;
        let mut parity = 0;
        for d in (0..self.dims()).rev() {
            let c = self.coord(node, d);
            let k = self.radix[d];
            let digit = if parity % 2 == 1 { k - 1 - c } else { c };
            l = l * k + digit;
            parity += c;
        }
        l
    }

    /// The node with snake label `label` (< nodes).
    pub fn unlabel(&self, label: usize) -> Option<usize> {
        if label >= self.nodes {
            return None;
        }
        let mut parity = 0;
        let mut id = 0;
        for d in (0..self.dims()).rev() {
            let k = self.radix[d];
            let digit = (label / self.stride[d]) % k;
            let c = if parity % 2 == 1 {
                k - 1 - digit
            } else {
                digit
            };
            id += c * self.stride[d];
            parity += c;
        }
        Some(id)
    }

    /// Append the dimension-ordered route from `from` to `to` (dimension 0
    /// corrected first: XY routing), without `from` itself.
    pub fn route_into(&self, from: usize, to: usize, out: &mut Vec<usize>) {
        let mut x = from;
        for d in 0..self.dims() {
            let target = self.coord(to, d);
            while self.coord(x, d) != target {
                if self.coord(x, d) < target {
                    x += self.stride[d];
                } else {
                    x -= self.stride[d];
                }
                out.push(x);
            }
        }
    }

    /// Append the label-monotone route of Lin, McKinley and Ni's routing
    /// function R from `from` to `to`, without `from` itself: while the
    /// label of `to` is higher, step to the neighbour with the highest label
    /// not above it; while it is lower, to the neighbour with the lowest
    /// label not below it. Every channel taken raises (or every one lowers)
    /// the label, so a worm routed this way stays in one of the two acyclic
    /// subnetworks; in 2-D every route is a shortest one.
    pub fn label_route_into(&self, from: usize, to: usize, out: &mut Vec<usize>) {
        if from >= self.nodes || to >= self.nodes {
            return;
        }
        let target = self.label(to);
        let mut x = from;
        while x != to {
            let up = self.label(x) < target;
            let mut best: Option<(usize, usize)> = None;
            for d in 0..self.dims() {
                for plus in [false, true] {
                    let Some(w) = self.neighbour(x, d, plus) else {
                        continue;
                    };
                    let l = self.label(w);
                    let ok = if up { l <= target } else { l >= target };
                    let better = match best {
                        None => true,
                        Some((_, b)) => (up && l > b) || (!up && l < b),
                    };
                    if ok && better {
                        best = Some((w, l));
                    }
                }
            }
            // The neighbour with the next label always qualifies.
            let Some((w, _)) = best else { return };
            out.push(w);
            x = w;
        }
    }

    /// The dimension-ordered route from `from` to `to` as the nodes
    /// traversed, both ends included.
    ///
    /// # Errors
    /// [`MeshError::NodeOutOfRange`].
    pub fn route(&self, from: usize, to: usize) -> Result<Vec<usize>, MeshError> {
        self.check_node(from)?;
        self.check_node(to)?;
        let mut out = vec![from];
        self.route_into(from, to, &mut out);
        Ok(out)
    }

    /// The neighbour of `node` one step along dimension `d` (+1 or −1), if
    /// inside the mesh.
    pub fn neighbour(&self, node: usize, d: usize, plus: bool) -> Option<usize> {
        if d >= self.dims() || node >= self.nodes {
            return None;
        }
        let c = self.coord(node, d);
        if plus {
            (c + 1 < self.radix[d]).then(|| node + self.stride[d])
        } else {
            (c > 0).then(|| node - self.stride[d])
        }
    }
}
