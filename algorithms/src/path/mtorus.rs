//! The path-based multicast planners of
//! [Robinson 1994, ch. 6]: S-torus, the generic M-torus of Fig 6.1 with a pluggable linear
//! partitioning, M_d-torus and M_u-torus(r).
//!
//! Every holder of a sub-H-cycle Φ = {u_0 (itself), …} chooses a linear
//! partitioning Φ = Φ_0 ‖ Φ_1 ‖ … ‖ Φ_{r−1} (r ≥ 2, contiguous, non-empty),
//! sends **one** worm through the heads u_{1,0}, …, u_{r−1,0} in order, and
//! every head (u_0 for Φ_0) recurses on its part in the next phase. A phase
//! is one worm per holder (all-port IR, [Robinson 1994, §5.1]).
//!
//! Choices (recorded here):
//! * **M_d-torus** partitions Φ into the *maximal contiguous runs* of nodes
//!   sharing σ_{≥d}, where d is the highest dimension in which Φ's members
//!   differ (our fix for a source sub-torus that the rotation to
//!   the source splits in two, which [Robinson 1994, §6.3] leaves open;
//!   the tail piece becomes a part of its own). An order at which Φ lies in one
//!   sub-torus creates no partition and takes no phase, so a multicast
//!   takes at most n phases (the thesis says n; [D] ≤ n).
//! * **M_u-torus(r)** uses r parts, the first m mod r of size ⌈m/r⌉
//!   (our convention; [Robinson 1994, §6.4] does not say); m ≤ r gives m singletons.
//! * S-torus = all singletons; the unicast-based baseline = M_u-torus(2).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::utpr::Utpr;
use super::worm::{PathWorm, WormRoute};
use super::PathError;
use crate::plan::{self, Plan, PlanError};
use crate::topo::Topology;

/// A path-based planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PathAlgorithm {
    /// One worm through the whole H-cycle (`storus`).
    STorus,
    /// Dimensional partitioning with the run-splitting fix (`mtorus-d`).
    MdTorus,
    /// Uniform partitioning into r parts (`mtorus-u:R`); r = 2 is the
    /// thesis's unicast-based baseline.
    MuTorus {
        /// The number of parts (≥ 2).
        r: usize,
    },
}

impl fmt::Display for PathAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathAlgorithm::STorus => f.write_str("storus"),
            PathAlgorithm::MdTorus => f.write_str("mtorus-d"),
            PathAlgorithm::MuTorus { r } => write!(f, "mtorus-u:{r}"),
        }
    }
}

/// A path-algorithm name that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown path algorithm `{0}` (expected storus, mtorus-d or mtorus-u:R with R >= 2)")]
pub struct PathAlgorithmParseError(pub String);

impl FromStr for PathAlgorithm {
    type Err = PathAlgorithmParseError;

    /// `storus`, `s-torus`, `mtorus-d`, `mtorus-u:R` (R ≥ 2), case and
    /// `-`/`_` insensitive. (`mdtorus` and `mutorus` are not accepted: they
    /// name the store-and-forward planners of [`crate::trees`].)
    fn from_str(s: &str) -> Result<PathAlgorithm, PathAlgorithmParseError> {
        let bad = || PathAlgorithmParseError(s.to_string());
        let t = s.trim().to_ascii_lowercase();
        let (name, param) = match t.split_once(':') {
            Some((n, p)) => (n.to_string(), Some(p.to_string())),
            None => (t.clone(), None),
        };
        let name = name.replace(['-', '_'], "");
        match (name.as_str(), param) {
            ("storus", None) => Ok(PathAlgorithm::STorus),
            ("mtorusd", None) => Ok(PathAlgorithm::MdTorus),
            ("mtorusu", Some(p)) => {
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                match p.parse::<usize>() {
                    Ok(r) if r >= 2 => Ok(PathAlgorithm::MuTorus { r }),
                    _ => Err(bad()),
                }
            }
            _ => Err(bad()),
        }
    }
}

/// One worm of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathSend {
    /// The phase (1-based).
    pub phase: usize,
    /// The injecting node (the holder of the partitioned sub-H-cycle).
    pub sender: usize,
    /// For every node the worm delivers to, in delivery order, the sub-H-cycle
    /// it becomes responsible for (itself first): the compound header of
    /// Fig 6.2 [Robinson 1994, §6.5, Fig 6.2].
    pub parts: Vec<Vec<usize>>,
    /// The worm's route (its `delivers` are the heads of `parts`).
    pub route: WormRoute,
}

impl PathSend {
    /// The nodes the worm delivers to, in delivery order.
    pub fn delivers(&self) -> &[usize] {
        &self.route.delivers
    }
}

/// A planned path-based multicast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathPlan {
    /// The planner, `None` for [`plan_with`].
    pub algorithm: Option<PathAlgorithm>,
    /// The source.
    pub source: usize,
    /// The destinations, sorted by node id.
    pub destinations: Vec<usize>,
    /// The number of phases.
    pub phases: usize,
    /// Every worm, by phase (ties in planning order).
    pub sends: Vec<PathSend>,
}

impl PathPlan {
    /// Link visits [Robinson 1994, §6.6]: one per link per worm, summed.
    pub fn link_visits(&self) -> usize {
        self.sends.iter().map(|s| s.route.len()).sum()
    }

    /// The number of worms.
    pub fn worm_count(&self) -> usize {
        self.sends.len()
    }

    /// The plan as a [`Plan`] for [`crate::oracle`]: every delivery becomes
    /// a send from the worm's sender, and the receiver is responsible for
    /// its part.
    ///
    /// # Errors
    /// [`PlanError::DuplicateEntry`] cannot happen for plans built here.
    pub fn to_plan(&self) -> Result<Plan, PlanError> {
        let mut nodes: Vec<(usize, Vec<plan::PlanSend>)> = Vec::new();
        let mut index = std::collections::HashMap::new();
        index.insert(self.source, 0);
        nodes.push((self.source, Vec::new()));
        for s in &self.sends {
            let i = *index.entry(s.sender).or_insert_with(|| {
                nodes.push((s.sender, Vec::new()));
                nodes.len() - 1
            });
            nodes[i].1.extend(s.parts.iter().map(|p| plan::PlanSend {
                to: p[0],
                covers: p.clone(),
            }));
        }
        Plan::from_parts(self.source, nodes)
    }
}

/// Plan a path-based multicast from `source` to `dests` on a regular
/// unidirectional torus.
///
/// Choices where the thesis is silent or inconsistent: M_d-torus splits Φ
/// into the maximal contiguous runs of nodes sharing σ_{≥d}, d the highest
/// dimension in which Φ differs (so the tail of a source sub-torus that the
/// rotation splits is a part of its own, and an order with a single part
/// takes no phase: ≤ n phases); M_u-torus(r) gives the first m mod r parts
/// the larger size and partitions m ≤ r nodes into singletons.
///
/// # Errors
/// [`PathError::NotUnidirectionalTorus`], [`PathError::Topo`],
/// [`PathError::SourceIsDestination`], [`PathError::DuplicateDestination`],
/// [`PathError::BadParameter`] (r < 2).
pub fn plan(
    topo: &Topology,
    algorithm: PathAlgorithm,
    source: usize,
    dests: &[usize],
) -> Result<PathPlan, PathError> {
    let mut p = match algorithm {
        PathAlgorithm::STorus => plan_with(topo, source, dests, |_, phi| vec![1; phi.len()])?,
        PathAlgorithm::MdTorus => plan_with(topo, source, dests, dimensional_runs)?,
        PathAlgorithm::MuTorus { r } => {
            if r < 2 {
                return Err(PathError::BadParameter("M_u-torus needs r >= 2"));
            }
            plan_with(topo, source, dests, move |_, phi| {
                uniform_sizes(phi.len(), r)
            })?
        }
    };
    p.algorithm = Some(algorithm);
    Ok(p)
}

/// Dimensional partitioning with the run-splitting fix: maximal contiguous
/// runs of Φ sharing σ_{≥d}, d = the highest dimension in which Φ differs.
pub(crate) fn dimensional_runs(utpr: &Utpr<'_>, phi: &[usize]) -> Vec<usize> {
    let topo = utpr.topology();
    let first = phi[0];
    let Some(d) = (0..topo.dims()).rev().find(|&d| {
        phi.iter()
            .any(|&v| topo.sigma(v, d) != topo.sigma(first, d))
    }) else {
        return vec![phi.len()];
    };
    let mut sizes = Vec::new();
    let mut run = 0;
    let mut key = topo.high_key(first, d);
    for &v in phi {
        let kv = topo.high_key(v, d);
        if kv != key {
            sizes.push(run);
            run = 0;
            key = kv;
        }
        run += 1;
    }
    sizes.push(run);
    sizes
}

/// Uniform partitioning of m nodes into r parts (first m mod r larger);
/// m ≤ r gives m singletons.
pub(crate) fn uniform_sizes(m: usize, r: usize) -> Vec<usize> {
    if m <= r {
        return vec![1; m];
    }
    let (q, rem) = (m / r, m % r);
    (0..r).map(|i| q + usize::from(i < rem)).collect()
}

/// The generic M-torus of Fig 6.1 with any linear partitioning: `partition`
/// gets a holder's sub-H-cycle Φ (holder first, |Φ| ≥ 2) and returns the
/// part sizes, in order. They must be ≥ 2 non-empty parts covering Φ
/// exactly (Definition 6.1); partitionings need not be consistent between
/// holders (Theorem 6.1).
///
/// # Errors
/// As [`plan`]; [`PathError::BadPartition`] when `partition` returns
/// something that is not a linear partitioning.
pub fn plan_with<F>(
    topo: &Topology,
    source: usize,
    dests: &[usize],
    mut partition: F,
) -> Result<PathPlan, PathError>
where
    F: FnMut(&Utpr<'_>, &[usize]) -> Vec<usize>,
{
    let utpr = Utpr::new(topo)?;
    let cycle = utpr.h_cycle(source, dests)?;
    let mut sends = Vec::new();
    // (phase the holder starts at, sub-H-cycle), processed depth-first.
    let mut stack: Vec<(usize, Vec<usize>)> = vec![(0, cycle)];
    while let Some((t, phi)) = stack.pop() {
        if phi.len() < 2 {
            continue;
        }
        let sizes = partition(&utpr, &phi);
        if sizes.len() < 2 || sizes.contains(&0) || sizes.iter().sum::<usize>() != phi.len() {
            return Err(PathError::BadPartition {
                len: phi.len(),
                sizes,
            });
        }
        let mut parts = Vec::with_capacity(sizes.len());
        let mut start = 0;
        for &s in &sizes {
            parts.push(phi[start..start + s].to_vec());
            start += s;
        }
        let worm = PathWorm {
            source: phi[0],
            dests: parts[1..].iter().map(|p| p[0]).collect(),
        };
        let route = worm.route_unchecked(&utpr);
        let mut parts = parts.into_iter();
        let own = parts.next().unwrap_or_default();
        let others: Vec<Vec<usize>> = parts.collect();
        for p in others.iter().rev() {
            stack.push((t + 1, p.clone()));
        }
        stack.push((t + 1, own));
        sends.push(PathSend {
            phase: t + 1,
            sender: phi[0],
            parts: others,
            route,
        });
    }
    sends.sort_by_key(|s| s.phase);
    let phases = sends.iter().map(|s| s.phase).max().unwrap_or(0);
    let mut destinations = dests.to_vec();
    destinations.sort_unstable();
    Ok(PathPlan {
        algorithm: None,
        source,
        destinations,
        phases,
        sends,
    })
}
