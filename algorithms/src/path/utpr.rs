//! The Hamiltonian circuit H of a unidirectional k-ary n-cube, its
//! boundaries, and the path routing function R_UTPR with its two VC sets
//! ([Robinson 1994, §5.2, Eq 5.2; §5.3]; thesis Eq 5.2, Definition 5.1, Lemma 5.7, Eq 5.3,
//! Fig 5.11).

use super::PathError;
use crate::topo::{Channel, Dir, Links, TopoKind, Topology, Vc};

/// A regular unidirectional torus seen through H: labels, boundaries and
/// R_UTPR. Built once per topology ([`Utpr::new`] checks it), then cheap.
///
/// Channels are [`Channel`]s with `dir = Plus` and `vc` = [`Vc::P`] (the
/// pre-boundary set) or [`Vc::H`] (after the boundary). Under UTPR a
/// p-channel exists on every non-boundary link and an h-channel on every
/// link ([`Utpr::channel_exists`]); these are **not** the UTR existence rules
/// of [`Topology::channel_exists`].
#[derive(Debug, Clone, Copy)]
pub struct Utpr<'a> {
    topo: &'a Topology,
    k: usize,
}

impl<'a> Utpr<'a> {
    /// UTPR on `topo`.
    ///
    /// # Errors
    /// [`PathError::NotUnidirectionalTorus`] unless `topo` is a
    /// unidirectional torus with the same radix in every dimension (the
    /// thesis's system model, [Robinson 1994, §5.1]).
    pub fn new(topo: &'a Topology) -> Result<Utpr<'a>, PathError> {
        match (topo.kind(), topo.regular_radix()) {
            (TopoKind::Torus(Links::Unidirectional), Some(k)) => Ok(Utpr { topo, k }),
            _ => Err(PathError::NotUnidirectionalTorus(topo.to_string())),
        }
    }

    /// The topology.
    pub fn topology(&self) -> &'a Topology {
        self.topo
    }

    /// The radix k.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Check that `node` is a node of the torus.
    ///
    /// # Errors
    /// [`PathError::Topo`].
    pub fn check(&self, node: usize) -> Result<(), PathError> {
        Ok(self.topo.check_node(node)?)
    }

    /// l_i(u) = (Σ_{j≥i} σ_j(u)) mod k (Eq 5.4). Unchecked.
    fn l_i(&self, u: usize, i: usize) -> usize {
        (i..self.topo.dims())
            .map(|j| self.topo.sigma(u, j))
            .sum::<usize>()
            % self.k
    }

    /// The H label l(u) of Eq 5.2 (the position of u on H). Unchecked; see
    /// [`Topology::h_label`] for the checked form (the same formula).
    pub(crate) fn label(&self, u: usize) -> usize {
        let mut label = 0;
        let mut suffix = 0;
        let mut weight = self.topo.nodes();
        for i in (0..self.topo.dims()).rev() {
            weight /= self.k;
            suffix += self.topo.sigma(u, i);
            label += weight * (suffix % self.k);
        }
        label
    }

    /// The H label of `node`.
    ///
    /// # Errors
    /// [`PathError::Topo`] for a node outside the torus.
    pub fn h_label(&self, node: usize) -> Result<usize, PathError> {
        self.check(node)?;
        Ok(self.label(node))
    }

    /// The node with H label `label` (the inverse of Eq 5.2).
    ///
    /// # Errors
    /// [`PathError::Topo`] when `label` ≥ the number of nodes.
    pub fn node_at(&self, label: usize) -> Result<usize, PathError> {
        self.check(label)?;
        // l_i = digit i of the label; σ_{n−1} = l_{n−1}, σ_i = l_i − l_{i+1}.
        let n = self.topo.dims();
        let k = self.k;
        let digit = |i: usize| (label / k.pow(i as u32)) % k;
        let mut coords = Vec::with_capacity(n);
        for i in (0..n).rev() {
            let above = if i + 1 < n { digit(i + 1) } else { 0 };
            coords.push((digit(i) + k - above) % k);
        }
        Ok(self.topo.node(&coords)?)
    }

    /// u^d: the neighbour of u along dimension d (Eq 5.1). Unchecked.
    pub(crate) fn up(&self, u: usize, d: usize) -> usize {
        self.topo.step(u, d, Dir::Plus)
    }

    /// Whether the channel (u, u^d) is a boundary, by Lemma 5.7:
    /// (Σ_{j≥d} σ_j(u)) mod k = k − 1. Unchecked.
    pub(crate) fn boundary(&self, u: usize, d: usize) -> bool {
        self.l_i(u, d) == self.k - 1
    }

    /// Whether the channel leaving `node` along `dim` is a boundary
    /// (Lemma 5.7; equal to Definition 5.1, l(u) > l(u^d), which
    /// [`Utpr::is_boundary_by_labels`] evaluates literally).
    ///
    /// # Errors
    /// [`PathError::Topo`]; [`PathError::BadDimension`].
    pub fn is_boundary(&self, node: usize, dim: usize) -> Result<bool, PathError> {
        self.check_dim(node, dim)?;
        Ok(self.boundary(node, dim))
    }

    /// Definition 5.1 literally: l(u) > l(u^d).
    ///
    /// # Errors
    /// As [`Utpr::is_boundary`].
    pub fn is_boundary_by_labels(&self, node: usize, dim: usize) -> Result<bool, PathError> {
        self.check_dim(node, dim)?;
        Ok(self.label(node) > self.label(self.up(node, dim)))
    }

    fn check_dim(&self, node: usize, dim: usize) -> Result<(), PathError> {
        self.check(node)?;
        if dim >= self.topo.dims() {
            return Err(PathError::BadDimension {
                dim,
                dims: self.topo.dims(),
            });
        }
        Ok(())
    }

    /// Whether UTPR has channel `c`: `dir = Plus`, a p-channel on a
    /// non-boundary link, an h-channel on any link [Robinson 1994, §5.3].
    pub fn channel_exists(&self, c: &Channel) -> bool {
        c.node < self.topo.nodes()
            && c.dim < self.topo.dims()
            && c.dir == Dir::Plus
            && match c.vc {
                Vc::H => true,
                Vc::P => !self.boundary(c.node, c.dim),
                _ => false,
            }
    }

    /// R_UTPR's choice of dimension at u towards v (Eq 5.3, Fig 5.11): the
    /// lowest useful dimension whose channel is not a boundary, else the
    /// highest useful dimension. `None` when u = v. Unchecked.
    pub(crate) fn dimension(&self, u: usize, v: usize) -> Option<usize> {
        let mut highest_boundary = None;
        for i in 0..self.topo.dims() {
            if self.topo.sigma(u, i) != self.topo.sigma(v, i) {
                if !self.boundary(u, i) {
                    return Some(i);
                }
                highest_boundary = Some(i);
            }
        }
        highest_boundary
    }

    /// R_UTPR(u, α, v) (Eq 5.3): the next channel of a worm at u, arrived on
    /// VC set α (`Vc::P` for a worm injected at u), heading for v. `None`
    /// when u = v. Unchecked.
    pub(crate) fn next_unchecked(&self, u: usize, alpha: Vc, v: usize) -> Option<Channel> {
        let d = self.dimension(u, v)?;
        let vc = if alpha == Vc::P && !self.boundary(u, d) {
            Vc::P
        } else {
            Vc::H
        };
        Some(Channel {
            node: u,
            dim: d,
            dir: Dir::Plus,
            vc,
        })
    }

    /// R_UTPR(u, α, v): the next channel, `None` when u = v.
    ///
    /// # Errors
    /// [`PathError::Topo`] for nodes outside the torus;
    /// [`PathError::BadVcSet`] unless α is [`Vc::P`] or [`Vc::H`].
    pub fn next(&self, u: usize, alpha: Vc, v: usize) -> Result<Option<Channel>, PathError> {
        self.check(u)?;
        self.check(v)?;
        if !matches!(alpha, Vc::P | Vc::H) {
            return Err(PathError::BadVcSet(alpha));
        }
        Ok(self.next_unchecked(u, alpha, v))
    }

    /// Append the R_UTPR path from u to v, entered with VC set α, to `out`;
    /// return the VC set of the last channel (α when u = v). Unchecked.
    pub(crate) fn segment_into(&self, u: usize, alpha: Vc, v: usize, out: &mut Vec<Channel>) -> Vc {
        let mut x = u;
        let mut a = alpha;
        while let Some(c) = self.next_unchecked(x, a, v) {
            out.push(c);
            a = c.vc;
            x = self.up(x, c.dim);
        }
        a
    }

    /// The R_UTPR path from u to v entered with VC set α, as channels.
    ///
    /// # Errors
    /// As [`Utpr::next`].
    pub fn segment(&self, u: usize, alpha: Vc, v: usize) -> Result<Vec<Channel>, PathError> {
        self.next(u, alpha, v)?;
        let mut out = Vec::new();
        self.segment_into(u, alpha, v, &mut out);
        Ok(out)
    }

    /// The minimal number of hops from u to v in the unidirectional torus:
    /// Σ_d (σ_d(v) − σ_d(u)) mod k. Unchecked.
    pub(crate) fn min_distance(&self, u: usize, v: usize) -> usize {
        (0..self.topo.dims())
            .map(|d| (self.topo.sigma(v, d) + self.k - self.topo.sigma(u, d)) % self.k)
            .sum()
    }

    /// The minimal hop count from `u` to `v` (what every R_UTPR segment
    /// achieves, Theorem 5.1 assertion 1).
    ///
    /// # Errors
    /// [`PathError::Topo`].
    pub fn distance(&self, u: usize, v: usize) -> Result<usize, PathError> {
        self.check(u)?;
        self.check(v)?;
        Ok(self.min_distance(u, v))
    }

    /// The message preparation of Fig 5.8: source and destinations sorted by
    /// H label and rotated so that the source is first (an H-cycle with
    /// respect to the source, Definition 5.3). Reuses the H-cycle helper of
    /// the store-and-forward M-torus planners ([`crate::trees`]).
    ///
    /// # Errors
    /// [`PathError::Topo`]; [`PathError::SourceIsDestination`];
    /// [`PathError::DuplicateDestination`].
    pub fn h_cycle(&self, source: usize, dests: &[usize]) -> Result<Vec<usize>, PathError> {
        super::check_set(self, source, dests)?;
        Ok(crate::trees::h_cycle(self.topo, source, dests)?)
    }

    /// λ of a channel on a worm (the thesis's deadlock ordering, Theorem 5.1,
    /// with our fix to [Robinson 1994, §5.5, Theorem 5.1]): (class, l(u), d) with class 0 for a
    /// p-channel, 2 for a non-boundary h-channel and 1 for a boundary
    /// h-channel (the "0.5" middle rank). Every worm of an H-cycle acquires
    /// channels in strictly increasing λ.
    pub fn lambda(&self, c: &Channel) -> (u8, usize, usize) {
        let class = match c.vc {
            Vc::P => 0,
            _ if self.boundary(c.node, c.dim) => 1,
            _ => 2,
        };
        (class, self.label(c.node), c.dim)
    }
}
