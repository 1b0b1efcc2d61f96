//! Path-based multicast plans on meshes: Qualified Groups and the dual-path,
//! multipath and column-path baselines, as phases of worm sends.
//!
//! A worm send lists its route (every node traversed, the injector first)
//! and the destinations it delivers to on the way, in delivery order
//! (intermediate reception: a listed destination copies the flits while the
//! worm flows on). Every leg (current node → next listed destination) is
//! routed dimension-ordered, x first (the paper's simulations: "messages
//! select network paths according to dimension-ordered routing"); every leg
//! is therefore a shortest path.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::grid::Mesh;
use super::qg::{grouping, Grouping};
use super::MeshError;

/// The paper's threshold TD.
pub const DEFAULT_TD: f64 = 0.5;

/// The number of ports ψ of a 2-D all-port router (CP's batch size).
pub const PORTS_2D: usize = 4;

/// A path-based mesh multicast algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeshAlgorithm {
    /// Qualified Groups with threshold TD (0 < TD < 1).
    Qg {
        /// The threshold.
        td: f64,
    },
    /// Dual-path (Lin, McKinley, Ni).
    DualPath,
    /// Multipath (Lin, McKinley, Ni), 2-D.
    MultiPath,
    /// Column-path (Boppana et al.), 2-D.
    ColumnPath,
}

// TD is never NaN (parsing and planning reject TD outside (0, 1)), so
// equality is an equivalence.
impl Eq for MeshAlgorithm {}

impl MeshAlgorithm {
    /// QG with the paper's TD = 0.5.
    pub const QG: MeshAlgorithm = MeshAlgorithm::Qg { td: DEFAULT_TD };

    /// The four algorithms of the paper's comparison.
    pub const ALL: [MeshAlgorithm; 4] = [
        MeshAlgorithm::QG,
        MeshAlgorithm::DualPath,
        MeshAlgorithm::MultiPath,
        MeshAlgorithm::ColumnPath,
    ];

    /// The CLI name (`qg:0.5`, `dual-path`, `multipath`, `column-path`).
    pub fn name(&self) -> String {
        match self {
            MeshAlgorithm::Qg { td } => format!("qg:{td}"),
            MeshAlgorithm::DualPath => "dual-path".into(),
            MeshAlgorithm::MultiPath => "multipath".into(),
            MeshAlgorithm::ColumnPath => "column-path".into(),
        }
    }

    /// The short name used in tables (QG, DP, MP, CP).
    pub fn short(&self) -> &'static str {
        match self {
            MeshAlgorithm::Qg { .. } => "QG",
            MeshAlgorithm::DualPath => "DP",
            MeshAlgorithm::MultiPath => "MP",
            MeshAlgorithm::ColumnPath => "CP",
        }
    }
}

impl fmt::Display for MeshAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// An algorithm name that is not a mesh scheme or a bad TD.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeshAlgorithmParseError {
    /// Not one of the names.
    #[error("unknown mesh algorithm `{0}` (expected qg[:TD], dual-path, multipath, column-path)")]
    Unknown(String),
    /// `qg:TD` with TD not a number in (0, 1).
    #[error("bad threshold in `{0}`: TD must be a number with 0 < TD < 1")]
    BadThreshold(String),
}

impl FromStr for MeshAlgorithm {
    type Err = MeshAlgorithmParseError;
    fn from_str(s: &str) -> Result<MeshAlgorithm, MeshAlgorithmParseError> {
        let t = s.trim();
        match t {
            "qg" => return Ok(MeshAlgorithm::QG),
            "dual-path" | "dp" => return Ok(MeshAlgorithm::DualPath),
            "multipath" | "multi-path" | "mp" => return Ok(MeshAlgorithm::MultiPath),
            "column-path" | "cp" => return Ok(MeshAlgorithm::ColumnPath),
            _ => {}
        }
        if let Some(td) = t.strip_prefix("qg:") {
            return match td.parse::<f64>() {
                Ok(td) if td > 0.0 && td < 1.0 => Ok(MeshAlgorithm::Qg { td }),
                _ => Err(MeshAlgorithmParseError::BadThreshold(t.to_string())),
            };
        }
        Err(MeshAlgorithmParseError::Unknown(t.to_string()))
    }
}

/// One worm injected by one node in one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MeshSend {
    /// The phase (1-based): QG's step, CP's round of ψ worms.
    pub phase: usize,
    /// The injecting node.
    pub from: usize,
    /// Every node traversed, `from` first, the last destination last.
    pub route: Vec<usize>,
    /// The destinations, in delivery order.
    pub delivers: Vec<usize>,
    /// For each destination (same order), the hop count at which the worm's
    /// header reaches it (its index in `route`).
    pub delivery_hops: Vec<usize>,
}

impl MeshSend {
    /// The channels the worm traverses.
    pub fn hops(&self) -> usize {
        self.route.len().saturating_sub(1)
    }
}

/// A multicast plan on a mesh.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeshPlan {
    /// The algorithm.
    pub algorithm: MeshAlgorithm,
    /// The source.
    pub source: usize,
    /// The destinations, ascending.
    pub destinations: Vec<usize>,
    /// Every worm, by phase (ties in planning order).
    pub sends: Vec<MeshSend>,
    /// QG only: the grouping.
    pub grouping: Option<Grouping>,
}

impl MeshPlan {
    /// The number of phases (message-passing steps).
    pub fn phases(&self) -> usize {
        self.sends.iter().map(|s| s.phase).max().unwrap_or(0)
    }

    /// Channels traversed by every worm of the plan (a channel used by two
    /// worms counts twice).
    pub fn link_visits(&self) -> usize {
        self.sends.iter().map(MeshSend::hops).sum()
    }

    /// The paper's additional traffic: channels used minus destinations.
    pub fn additional_traffic(&self) -> usize {
        self.link_visits().saturating_sub(self.destinations.len())
    }
}

/// Build one worm: optional forced first hop, then dimension-ordered legs.
fn worm(
    mesh: &Mesh,
    phase: usize,
    from: usize,
    first: Option<usize>,
    dests: Vec<usize>,
) -> MeshSend {
    let mut route = vec![from];
    if let Some(f) = first {
        route.push(f);
    }
    let mut delivery_hops = Vec::with_capacity(dests.len());
    for &d in &dests {
        let cur = *route.last().unwrap_or(&from);
        mesh.route_into(cur, d, &mut route);
        delivery_hops.push(route.len() - 1);
    }
    MeshSend {
        phase,
        from,
        route,
        delivers: dests,
        delivery_hops,
    }
}

/// DP's split: (D_H ascending by label, D_L descending by label).
fn dual_sets(mesh: &Mesh, u: usize, set: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let lu = mesh.label(u);
    let mut high: Vec<usize> = set
        .iter()
        .copied()
        .filter(|&d| mesh.label(d) > lu)
        .collect();
    let mut low: Vec<usize> = set
        .iter()
        .copied()
        .filter(|&d| mesh.label(d) < lu)
        .collect();
    high.sort_by_key(|&d| mesh.label(d));
    low.sort_by_key(|&d| std::cmp::Reverse(mesh.label(d)));
    (high, low)
}

/// Dual-path from `u` over `set` (≤ 2 worms: high channels, then low).
fn dual_path(mesh: &Mesh, phase: usize, u: usize, set: &[usize]) -> Vec<MeshSend> {
    let (high, low) = dual_sets(mesh, u, set);
    [high, low]
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(|s| worm(mesh, phase, u, None, s))
        .collect()
}

/// Multipath (2-D): D_H and D_L each split by the source's x so the (≤ 4)
/// worms leave by distinct first channels [Al-Dubai 2009, §2, §4.1.2].
fn multi_path(mesh: &Mesh, p: usize, set: &[usize]) -> Vec<MeshSend> {
    let (x0, y0) = (mesh.coord(p, 0), mesh.coord(p, 1));
    let even = y0 % 2 == 0;
    let fwd = |x: usize| if even { x > x0 } else { x < x0 };
    let back = |x: usize| if even { x < x0 } else { x > x0 };
    let (high, low) = dual_sets(mesh, p, set);
    let (h1, h2): (Vec<usize>, Vec<usize>) = high.into_iter().partition(|&d| fwd(mesh.coord(d, 0)));
    let (l1, l2): (Vec<usize>, Vec<usize>) = low.into_iter().partition(|&d| back(mesh.coord(d, 0)));
    // Forced first hops: along the row in the label-increasing direction,
    // up, along the row label-decreasing, down.
    let first = [
        mesh.neighbour(p, 0, even),
        mesh.neighbour(p, 1, true),
        mesh.neighbour(p, 0, !even),
        mesh.neighbour(p, 1, false),
    ];
    [h1, h2, l1, l2]
        .into_iter()
        .zip(first)
        .filter(|(s, _)| !s.is_empty())
        .map(|(s, f)| worm(mesh, 1, p, f, s))
        .collect()
}

/// Column-path (2-D): per column at most two worms (rows ≥ the source's,
/// ascending; rows below, descending), in ascending column order, injected in
/// rounds of `ports` worms (one start-up per round).
fn column_path(mesh: &Mesh, p: usize, set: &[usize], ports: usize) -> Vec<MeshSend> {
    let y0 = mesh.coord(p, 1);
    let mut cols: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for &d in set {
        cols.entry(mesh.coord(d, 0)).or_default().push(d);
    }
    let mut lists = Vec::new();
    for (_, col) in cols {
        let mut up: Vec<usize> = col
            .iter()
            .copied()
            .filter(|&d| mesh.coord(d, 1) >= y0)
            .collect();
        let mut down: Vec<usize> = col
            .iter()
            .copied()
            .filter(|&d| mesh.coord(d, 1) < y0)
            .collect();
        up.sort_by_key(|&d| mesh.coord(d, 1));
        down.sort_by_key(|&d| std::cmp::Reverse(mesh.coord(d, 1)));
        lists.extend([up, down].into_iter().filter(|s| !s.is_empty()));
    }
    let ports = ports.max(1);
    lists
        .into_iter()
        .enumerate()
        .map(|(i, s)| worm(mesh, i / ports + 1, p, None, s))
        .collect()
}

/// Check the multicast set: nodes inside, at least one destination, no
/// duplicates, source not a destination.
fn check_set(mesh: &Mesh, p: usize, dests: &[usize]) -> Result<Vec<usize>, MeshError> {
    mesh.check_node(p)?;
    if dests.is_empty() {
        return Err(MeshError::NoDestinations);
    }
    let mut d = dests.to_vec();
    for &x in &d {
        mesh.check_node(x)?;
        if x == p {
            return Err(MeshError::SourceIsDestination(p));
        }
    }
    d.sort_unstable();
    if let Some(w) = d.windows(2).find(|w| w[0] == w[1]) {
        return Err(MeshError::DuplicateDestination(w[0]));
    }
    Ok(d)
}

/// Plan a multicast from `p` to `dests` with `algo`.
///
/// # Errors
/// [`MeshError::NodeOutOfRange`], [`MeshError::NoDestinations`],
/// [`MeshError::DuplicateDestination`], [`MeshError::SourceIsDestination`],
/// [`MeshError::BadThreshold`], and [`MeshError::Unsupported`] for
/// multipath and column-path on a mesh that is not 2-D.
pub fn plan(
    mesh: &Mesh,
    algo: MeshAlgorithm,
    p: usize,
    dests: &[usize],
) -> Result<MeshPlan, MeshError> {
    let destinations = check_set(mesh, p, dests)?;
    let mut grouping_out = None;
    let sends = match algo {
        MeshAlgorithm::DualPath => dual_path(mesh, 1, p, &destinations),
        MeshAlgorithm::MultiPath | MeshAlgorithm::ColumnPath if mesh.dims() != 2 => {
            return Err(MeshError::Unsupported {
                algorithm: algo.name(),
                dims: mesh.dims(),
            })
        }
        MeshAlgorithm::MultiPath => multi_path(mesh, p, &destinations),
        MeshAlgorithm::ColumnPath => column_path(mesh, p, &destinations, PORTS_2D),
        MeshAlgorithm::Qg { td } => {
            if !(td > 0.0 && td < 1.0) {
                return Err(MeshError::BadThreshold(td));
            }
            let g = grouping(mesh, p, &destinations, td);
            // Step 1: DP over the representatives, one start-up.
            let mut sends = dual_path(mesh, 1, p, &g.representatives());
            // Step 2: every representative, DP over the rest of its group.
            for grp in &g.groups {
                let rest: Vec<usize> = grp
                    .members
                    .iter()
                    .copied()
                    .filter(|&d| d != grp.nearest)
                    .collect();
                sends.extend(dual_path(mesh, 2, grp.nearest, &rest));
            }
            grouping_out = Some(g);
            sends
        }
    };
    Ok(MeshPlan {
        algorithm: algo,
        source: p,
        destinations,
        sends,
        grouping: grouping_out,
    })
}
