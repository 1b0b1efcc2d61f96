//! The Qualified Groups grouping [Al-Dubai 2009, §3, phases 1–4, Fig 5].
//!
//! 1. Multicast area: per dimension l = min, u = max over D ∪ {p},
//!    mid = ⌊(l+u)/2⌋ (Definition 2).
//! 2. Divisor dimension: N_j = |#{d : d_j > mid_j} − #{d : d_j ≤ mid_j}|,
//!    Div = argmin N_j, ties to the lower dimension (Definition 3). Primary
//!    groups: the non-empty orthants of the area cut at every mid, numbered
//!    by their half bits with Div's bit first ([Al-Dubai 2009, §3, Eq. 1]).
//! 3. Weights: p_n / p_f = the group's destination nearest / farthest from
//!    p; Int = Dist(p_f, p_n) + |G| (Eq. 2); Ext = Dist(p_n, p) (Eq. 3);
//!    W_m = Ext + Int (Eq. 4); W_av = mean over the primary groups (Eq. 5);
//!    QP = (W_m − W_av)/W_av (Eq. 6); qualified iff QP ≤ TD (Definition 7).
//! 4. An unqualified group is split in two at its own mid along its own
//!    divisor dimension (computed on the group's own area, skipping
//!    dimensions of extent 0); the heaviest unqualified piece of the same
//!    primary group is split again until every piece qualifies or the primary
//!    group has 2^n pieces. A piece that cannot be split is accepted.
//! 5. Representatives: each group's p_n.
//!
//! Tie-breaks (ours; [Al-Dubai 2009, §3, Phase 4] leaves them open): p_n = argmin (Dist(d, p), node id); p_f = argmax
//! Dist(d, p), then Dist(d, p_n), then the smallest node id.

use serde::Serialize;

use super::grid::Mesh;

/// One group with its weights.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The destinations, ascending node id.
    pub members: Vec<usize>,
    /// The representative p_n (nearest to the source).
    pub nearest: usize,
    /// p_f (farthest from the source).
    pub farthest: usize,
    /// Int(G) = Dist(p_f, p_n) + |G|.
    pub int: usize,
    /// Ext(G) = Dist(p_n, p).
    pub ext: usize,
    /// W_m = Ext + Int.
    pub weight: usize,
    /// QP = (W_m − W_av)/W_av.
    pub qp: f64,
    /// QP ≤ TD.
    pub qualified: bool,
    /// The index of the primary group it comes from.
    pub primary: usize,
}

/// The whole grouping of one multicast.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grouping {
    /// The threshold TD.
    pub td: f64,
    /// Lower corner of the multicast area (dimension 0 first).
    pub lower: Vec<usize>,
    /// Upper corner.
    pub upper: Vec<usize>,
    /// mid per dimension.
    pub mid: Vec<usize>,
    /// N_j per dimension.
    pub imbalance: Vec<usize>,
    /// The divisor dimension (0 = x).
    pub divisor: usize,
    /// The primary groups, by key.
    pub primary: Vec<Group>,
    /// W_av over the primary groups.
    pub w_av: f64,
    /// The final groups: each primary group's pieces in place of it.
    pub groups: Vec<Group>,
}

impl Grouping {
    /// The representatives, in group order.
    pub fn representatives(&self) -> Vec<usize> {
        self.groups.iter().map(|g| g.nearest).collect()
    }
}

/// (lower, upper, mid) over `pts`.
fn area(
    mesh: &Mesh,
    pts: impl Iterator<Item = usize> + Clone,
) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let n = mesh.dims();
    let mut lo = vec![usize::MAX; n];
    let mut hi = vec![0; n];
    for p in pts {
        for d in 0..n {
            let c = mesh.coord(p, d);
            lo[d] = lo[d].min(c);
            hi[d] = hi[d].max(c);
        }
    }
    let mid = lo.iter().zip(&hi).map(|(l, h)| (l + h) / 2).collect();
    (lo, hi, mid)
}

fn imbalance(mesh: &Mesh, g: &[usize], mid: &[usize], d: usize) -> usize {
    let up = g.iter().filter(|&&x| mesh.coord(x, d) > mid[d]).count();
    up.abs_diff(g.len() - up)
}

/// p_n, p_f and the weight of a non-empty group.
fn weigh(mesh: &Mesh, p: usize, g: &[usize]) -> (usize, usize, usize, usize) {
    let nearest = g
        .iter()
        .copied()
        .min_by_key(|&d| (mesh.dist(d, p), d))
        .unwrap_or(p);
    let farthest = g
        .iter()
        .copied()
        .max_by_key(|&d| (mesh.dist(d, p), mesh.dist(d, nearest), std::cmp::Reverse(d)))
        .unwrap_or(p);
    let int = mesh.dist(farthest, nearest) + g.len();
    let ext = mesh.dist(nearest, p);
    (nearest, farthest, int, ext)
}

fn group(
    mesh: &Mesh,
    p: usize,
    mut members: Vec<usize>,
    w_av: f64,
    td: f64,
    primary: usize,
) -> Group {
    members.sort_unstable();
    let (nearest, farthest, int, ext) = weigh(mesh, p, &members);
    let weight = int + ext;
    let qp = (weight as f64 - w_av) / w_av;
    Group {
        members,
        nearest,
        farthest,
        int,
        ext,
        weight,
        qp,
        qualified: qp <= td,
        primary,
    }
}

/// Split a group in two along its own divisor dimension, or `None` if every
/// dimension has extent 0 (a single node).
fn split2(mesh: &Mesh, g: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    let (lo, hi, mid) = area(mesh, g.iter().copied());
    let j = (0..mesh.dims())
        .filter(|&d| lo[d] < hi[d])
        .min_by_key(|&d| (imbalance(mesh, g, &mid, d), d))?;
    let (a, b): (Vec<usize>, Vec<usize>) = g.iter().partition(|&&x| mesh.coord(x, j) <= mid[j]);
    Some((a, b))
}

/// Group the destinations `dests` (distinct, non-empty, without `p`) of a
/// multicast from `p` with threshold `td`.
///
/// The caller (the planner) has checked the nodes.
pub fn grouping(mesh: &Mesh, p: usize, dests: &[usize], td: f64) -> Grouping {
    let n = mesh.dims();
    let (lower, upper, mid) = area(mesh, dests.iter().copied().chain(std::iter::once(p)));
    let imb: Vec<usize> = (0..n).map(|d| imbalance(mesh, dests, &mid, d)).collect();
    let divisor = (0..n).min_by_key(|&d| (imb[d], d)).unwrap_or(0);
    let order: Vec<usize> = std::iter::once(divisor)
        .chain((0..n).filter(|&d| d != divisor))
        .collect();
    let mut buckets: std::collections::BTreeMap<Vec<bool>, Vec<usize>> = Default::default();
    for &d in dests {
        let key: Vec<bool> = order.iter().map(|&j| mesh.coord(d, j) > mid[j]).collect();
        buckets.entry(key).or_default().push(d);
    }
    // W_av needs every primary weight first.
    let weights: Vec<usize> = buckets
        .values()
        .map(|g| {
            let (_, _, int, ext) = weigh(mesh, p, g);
            int + ext
        })
        .collect();
    let w_av = weights.iter().sum::<usize>() as f64 / weights.len().max(1) as f64;
    let primary: Vec<Group> = buckets
        .values()
        .enumerate()
        .map(|(i, g)| group(mesh, p, g.clone(), w_av, td, i))
        .collect();
    let cap = 1usize.checked_shl(n as u32).unwrap_or(usize::MAX);
    let mut groups = Vec::new();
    for (i, g) in primary.iter().enumerate() {
        let mut pieces = vec![g.clone()];
        while pieces.len() < cap {
            // The heaviest unqualified piece (the first on a tie).
            let Some(worst) = pieces
                .iter()
                .enumerate()
                .filter(|(_, q)| !q.qualified)
                .fold(None::<(usize, usize)>, |best, (k, q)| match best {
                    Some((_, w)) if w >= q.weight => best,
                    _ => Some((k, q.weight)),
                })
                .map(|(k, _)| k)
            else {
                break;
            };
            let Some((a, b)) = split2(mesh, &pieces[worst].members) else {
                break;
            };
            pieces.remove(worst);
            pieces.push(group(mesh, p, a, w_av, td, i));
            pieces.push(group(mesh, p, b, w_av, td, i));
        }
        groups.extend(pieces);
    }
    Grouping {
        td,
        lower,
        upper,
        mid,
        imbalance: imb,
        divisor,
        primary,
        w_av,
        groups,
    }
}
