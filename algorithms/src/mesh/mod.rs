//! Path-based multicast on n-dimensional meshes: Qualified Groups (Al-Dubai,
//! Ould-Khaoua, Mackenzie [Al-Dubai 2009]) and the
//! baselines it is compared with, dual-path and multipath (Lin, McKinley, Ni)
//! and column-path (Boppana et al.).
//!
//! * [`grid`]: the [`Mesh`] (coordinates, distance, snake labelling, XY
//!   routes);
//! * [`qg`]: the QG [`grouping`] (area, divisor dimension, primary groups,
//!   Int/Ext/W_m, W_av, QP, TD, splits, representatives);
//! * [`plan`](mod@plan): [`plan()`] builds a [`MeshPlan`] — phases of worm
//!   sends, each with its route and the destinations it delivers on the way;
//! * [`metrics`]: the paper's contention-free latency model, node- and
//!   network-level latency, jitter (coefficient of variation), link visits
//!   and additional traffic;
//! * [`check_plan`] and [`check_groups`]: the oracles;
//! * [`compare`](mod@compare): the QG vs DP/MP/CP table over random sets.
//!
//! Nothing here does I/O, and no public function panics on bad input.
//!
//! # Where the paper is ambiguous or self-contradictory, and the choices made
//! * **Routing.** Lin et al. [10] route DP/MP legs with their label-monotone
//!   function R; the paper says its simulated messages "select
//!   network paths according to dimension-ordered routing". The paper wins:
//!   every leg is XY (dimension 0 first) routed. In 2-D both give shortest
//!   legs, so hop counts, link visits and latencies are the same either way;
//!   only which channels are used differs (and with it the deadlock argument
//!   of Lin et al. \[10\], which this pure planner does not need).
//! * **The Figs 6–7 example.** The paper's coordinates are lost (figures not
//!   in the text); the tests use a synthetic example (Example A), built to
//!   reproduce every number the paper prints (N_y = 9 < N_x = 11, weights
//!   13, 11, 25, 13, W_av = 15.5, QP(G3) = 0.6129 printed as 0.6, five
//!   groups).
//! * **Definition 7 prose vs formula.** The prose "each qualified group must
//!   hold at least half of the average weight" contradicts the formula; the
//!   formula (QP ≤ TD) is used.
//! * **Fig. 4 / Fig. 5 vs Definitions.** Fig. 4 prints another N formula and
//!   Fig. 5 prints Ext = Dist(p_f, p); Definition 3 and Eq. (3) (which the
//!   worked example confirms: Ext(G1) = 1) are used.
//! * **Open choices** (the paper leaves them open): coordinates equal to mid go to the
//!   lower half; primary groups are the orthants at the global mids; a
//!   subgroup's area is its destinations' bounding box; it is split at its
//!   own mid along its own divisor dimension; the heaviest unqualified piece
//!   is split until all qualify or the primary group has 2^n pieces; W_av is
//!   fixed from the primary groups; step 1 and step 2 are dual-path worms
//!   (from the source over the representatives, from each representative
//!   over the rest of its group); a representative forwards after the whole
//!   message has arrived.
//! * **Multipath split** (the paper does not say how D_H, D_L are split): by
//!   the source's x, with forced distinct first hops [Al-Dubai 2009, §2, §4.1.2]. MP and CP
//!   are defined for 2-D meshes only ([`MeshError::Unsupported`] otherwise);
//!   DP and QG run in any dimension (the snake labelling generalises).
//! * **TD range.** The paper: 0 < TD < 1; anything else is
//!   [`MeshError::BadThreshold`].

pub mod compare;
pub mod grid;
pub mod metrics;
pub mod plan;
pub mod qg;

use std::collections::HashMap;

pub use grid::Mesh;
pub use metrics::{evaluate, MeshCost, Metrics};
pub use plan::{plan, MeshAlgorithm, MeshAlgorithmParseError, MeshPlan, MeshSend, DEFAULT_TD};
pub use qg::{grouping, Group, Grouping};

use crate::topo::TopoError;

/// A mesh request that cannot be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// The topology is not a mesh.
    #[error("{0} is not a mesh")]
    NotAMesh(String),
    /// The mesh cannot be built.
    #[error(transparent)]
    Topo(#[from] TopoError),
    /// A node outside the mesh.
    #[error("node {node} is outside the mesh (it has {nodes} nodes)")]
    NodeOutOfRange {
        /// The node.
        node: usize,
        /// The number of nodes.
        nodes: usize,
    },
    /// No destinations.
    #[error("a multicast needs at least one destination")]
    NoDestinations,
    /// A destination listed twice.
    #[error("destination {0} is listed twice")]
    DuplicateDestination(usize),
    /// The source among the destinations.
    #[error("the source {0} is among the destinations")]
    SourceIsDestination(usize),
    /// TD outside (0, 1).
    #[error("threshold {0} is outside 0 < TD < 1")]
    BadThreshold(f64),
    /// An algorithm defined for 2-D meshes only.
    #[error("{algorithm} is defined for 2-D meshes only, not {dims}-D")]
    Unsupported {
        /// The algorithm.
        algorithm: String,
        /// The mesh's dimensions.
        dims: usize,
    },
}

/// A plan the oracle rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeshOracleError {
    /// A route that does not start at its sender or steps between
    /// non-neighbours.
    #[error("send {send}: the route is broken at position {at}")]
    Route {
        /// The send index.
        send: usize,
        /// The route position.
        at: usize,
    },
    /// A listed destination not at its delivery position, or a worm that
    /// does not end at its last destination.
    #[error("send {send}: delivery {index} is not where the route says")]
    Delivery {
        /// The send index.
        send: usize,
        /// The delivery index.
        index: usize,
    },
    /// A node delivered a number of times other than once, or a
    /// non-destination delivered.
    #[error("node {node} receives {count} times")]
    Count {
        /// The node.
        node: usize,
        /// Deliveries.
        count: usize,
    },
    /// A sender that has not received in an earlier phase.
    #[error("node {node} sends in phase {phase} before it has the message")]
    Premature {
        /// The node.
        node: usize,
        /// The phase.
        phase: usize,
    },
    /// QG groups that overlap or do not cover D.
    #[error("the QG groups are not a partition of the destinations: {0}")]
    Groups(String),
}

/// The delivery oracle: every route is a walk on the mesh from its sender;
/// every worm delivers its destinations at the recorded positions and ends at
/// the last; every destination receives exactly once and nobody else; a
/// sender other than the source has received in an earlier phase.
///
/// # Errors
/// The first violation found.
pub fn check_plan(mesh: &Mesh, plan: &MeshPlan) -> Result<(), MeshOracleError> {
    let mut got: HashMap<usize, (usize, usize)> = HashMap::new(); // node -> (count, phase)
    for (i, s) in plan.sends.iter().enumerate() {
        if s.route.first() != Some(&s.from) {
            return Err(MeshOracleError::Route { send: i, at: 0 });
        }
        if let Some(at) = s.route.windows(2).position(|w| !mesh.adjacent(w[0], w[1])) {
            return Err(MeshOracleError::Route {
                send: i,
                at: at + 1,
            });
        }
        if s.delivers.len() != s.delivery_hops.len()
            || s.delivers.is_empty()
            || s.delivery_hops.last() != Some(&(s.route.len() - 1))
        {
            return Err(MeshOracleError::Delivery { send: i, index: 0 });
        }
        let mut prev = 0;
        for (j, (&d, &h)) in s.delivers.iter().zip(&s.delivery_hops).enumerate() {
            if s.route.get(h) != Some(&d) || (j > 0 && h < prev) {
                return Err(MeshOracleError::Delivery { send: i, index: j });
            }
            prev = h;
            let e = got.entry(d).or_insert((0, s.phase));
            e.0 += 1;
            e.1 = e.1.min(s.phase);
        }
    }
    for s in &plan.sends {
        if s.from != plan.source {
            match got.get(&s.from) {
                Some(&(_, ph)) if ph < s.phase => {}
                _ => {
                    return Err(MeshOracleError::Premature {
                        node: s.from,
                        phase: s.phase,
                    })
                }
            }
        }
    }
    for &d in &plan.destinations {
        let c = got.get(&d).map_or(0, |e| e.0);
        if c != 1 {
            return Err(MeshOracleError::Count { node: d, count: c });
        }
    }
    if let Some((&node, &(count, _))) = got
        .iter()
        .find(|(n, _)| plan.destinations.binary_search(n).is_err())
    {
        return Err(MeshOracleError::Count { node, count });
    }
    Ok(())
}

/// QG's groups are pairwise disjoint, non-empty, cover exactly the
/// destinations, and each representative is a member of its group.
///
/// # Errors
/// [`MeshOracleError::Groups`].
pub fn check_groups(g: &Grouping, destinations: &[usize]) -> Result<(), MeshOracleError> {
    let mut all: Vec<usize> = Vec::new();
    for (i, grp) in g.groups.iter().enumerate() {
        if grp.members.is_empty() {
            return Err(MeshOracleError::Groups(format!("group {i} is empty")));
        }
        if !grp.members.contains(&grp.nearest) {
            return Err(MeshOracleError::Groups(format!(
                "group {i}'s representative {} is not a member",
                grp.nearest
            )));
        }
        all.extend(&grp.members);
    }
    all.sort_unstable();
    let mut want = destinations.to_vec();
    want.sort_unstable();
    if all != want {
        return Err(MeshOracleError::Groups(format!(
            "{} members in all groups for {} destinations",
            all.len(),
            want.len()
        )));
    }
    Ok(())
}
