//! Topology-aware unicast-based multicast planners ([Robinson 1994, chs. 3–4],
//! [Oral 2003, §3, Fig 1]) and the one-port / all-port step models.
//!
//! Every planner works the same way (DESIGN.md ideas 1 and 3): the source
//! builds an ordered chain of the participants; a holder of a chain splits it
//! and sends one unicast per part, each carrying the part as its **address
//! field D** ([`TreeSend::covers`]: the receiver's responsibility, itself
//! included, in chain order); the receiver runs the same split on D and needs
//! nothing else. A [`Multicast`] is the resulting tree with a step assigned to
//! every send by a [`PortModel`].
//!
//! | [`TreeAlgorithm`] | chain | split | topologies |
//! |---|---|---|---|
//! | `SeparateAddressing` | destinations by id | source sends to each | any |
//! | `DimensionOrderedChain` | `<_d`-sorted, not rotated | U-mesh halving [R] | any |
//! | `UTorus` | R-chain (sorted, rotated to the source) | Fig 4.9, sender keeps the larger half | any |
//! | `KBinomial` | R-chain (XOR-relative chain on a hypercube) | [`crate::shape::split`] | any |
//! | `UCube`, `Maxport`, `Combine` | XOR-relative sorted chain | Fig 3.5 | hypercube |
//! | `WSort` | relative chain after WeightedSort (Fig 3.8) | Maxport | hypercube |
//! | `MdTorus`, `MuTorus` | H-cycle (label sort, rotated) | SCI store-and-forward partitions | regular torus |
//!
//! # Step models [Robinson 1994, §3.4, Fig 3.9]
//! A node that received in step t (the source: t = 0) issues its sends in
//! algorithm order.
//! * [`PortModel::OnePort`]: the j-th send (1-based) is in step t + j.
//! * [`PortModel::AllPortA`] (Model A, per channel): a send is in step t + (its
//!   1-based count among this node's sends on the same output channel).
//! * [`PortModel::AllPortB`] (Model B, in-order issue): step(s_0) = t + 1,
//!   step(s_i) = max(step(s_{i−1}), last step on that channel + 1).
//!
//! The output channel of a send is the (dimension, direction) of the first
//! hop of its route. **Our all-port default is Model B**
//! ([`PortModel::ALL_PORT`]): it is our recommendation, because
//! U-cube run under Model A can have stepwise contention (the 5-cube example
//! of [Robinson 1994, §3.4, Fig 3.9], a unit test of [`crate::contention`]) while under Model B it has
//! none; it is also what an NI that issues one queue of sends in order does.
//! Maxport and W-sort never reuse a channel, so A and B agree for them, and
//! every thesis example comes out the same under both. Model A stays
//! available because the reference means of tests/topo_table_9_1.rs are computed with it.

mod chain;
mod cube;
mod mtorus;

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::plan::{self, Plan, PlanError};
use crate::topo::{Dir, TopoError, Topology};

pub use cube::{cube_center, weighted_sort};
pub(crate) use mtorus::h_cycle;

/// How partitions are sized by [`TreeAlgorithm::MuTorus`]: the two readings of
/// "r" in the literature [Oral 2003, §3, Fig 1e].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MuPartition {
    /// Robinson's reading [Robinson 1994, §6.4]: r partitions of sizes ⌈m/r⌉ and
    /// ⌊m/r⌋ (the first m mod r larger), applied recursively by every head;
    /// m < r gives singletons. ⌈log_r m⌉ phases.
    Count,
    /// The SCI paper's reading [Oral 2003, §3, Fig 1e]: partitions of r consecutive
    /// nodes; the source sends to the head of every other partition, then every
    /// partition (the source's included) is a store-and-forward chain.
    Length,
}

/// A multicast planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TreeAlgorithm {
    /// The source sends to every destination itself, in ascending node id
    /// order
    /// ([Oral 2003, §3, Fig 1a] leaves the order open; this is the order of the 4×4 vectors of tests/path_examples.rs). m − 1 sends.
    SeparateAddressing,
    /// Recursive doubling on an unrotated dimension-ordered chain (the
    /// U-mesh algorithm of McKinley et al. [19], whose pseudocode the thesis
    /// does not give; reconstructed: the holder sends to the nearest node of
    /// the other half of its chain, which becomes responsible for that half).
    /// Contention-free on meshes, not on tori [Robinson 1994, §4.3].
    DimensionOrderedChain,
    /// U-torus on an R-chain [Robinson 1994, §4.4, Fig 4.9].
    UTorus,
    /// U-cube [Robinson 1994, §3.3, Fig 3.4]: Fig 3.5 with next = center.
    UCube,
    /// Maxport (Fig 3.5 with next = highdim).
    Maxport,
    /// Combine (Fig 3.5 with next = max(highdim, center)).
    Combine,
    /// W-sort: WeightedSort with CubeCenter, then Maxport [Robinson 1994, §3.4, Figs 3.7–3.8].
    WSort,
    /// The k-binomial tree of the runtime (irregular-networks paper) built on
    /// the dimension-ordered chain: the R-chain on tori and meshes, the
    /// XOR-relative chain on hypercubes. `k: None` picks the optimal k for
    /// the message length ([`crate::optimal_k`]).
    KBinomial {
        /// The largest number of children of any node (≥ 1), or `None`.
        k: Option<usize>,
    },
    /// The SCI paper's unicast (store-and-forward) Md-torus: dimensional
    /// partitioning of the H-cycle ([Oral 2003, §3, Fig 1d], [Robinson 1994, §6.3]).
    MdTorus,
    /// The SCI paper's unicast (store-and-forward) Mu-torus(r): uniform
    /// partitioning of the H-cycle ([Oral 2003, §3, Fig 1e], [Robinson 1994, §6.4]).
    MuTorus {
        /// The partition parameter (≥ 2).
        r: usize,
        /// Which reading of r.
        partition: MuPartition,
    },
}

impl TreeAlgorithm {
    /// The short name (`separate`, `dochain`, `utorus`, `ucube`, `maxport`,
    /// `combine`, `wsort`, `kbinomial`, `mdtorus`, `mutorus`).
    pub fn name(&self) -> &'static str {
        match self {
            TreeAlgorithm::SeparateAddressing => "separate",
            TreeAlgorithm::DimensionOrderedChain => "dochain",
            TreeAlgorithm::UTorus => "utorus",
            TreeAlgorithm::UCube => "ucube",
            TreeAlgorithm::Maxport => "maxport",
            TreeAlgorithm::Combine => "combine",
            TreeAlgorithm::WSort => "wsort",
            TreeAlgorithm::KBinomial { .. } => "kbinomial",
            TreeAlgorithm::MdTorus => "mdtorus",
            TreeAlgorithm::MuTorus { .. } => "mutorus",
        }
    }
}

impl fmt::Display for TreeAlgorithm {
    /// The name with its parameters, parsed back by [`FromStr`]:
    /// `kbinomial:3`, `mutorus:4`, `mutorus:4:length`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TreeAlgorithm::KBinomial { k: Some(k) } => write!(f, "kbinomial:{k}"),
            TreeAlgorithm::MuTorus { r, partition } => match partition {
                MuPartition::Count => write!(f, "mutorus:{r}"),
                MuPartition::Length => write!(f, "mutorus:{r}:length"),
            },
            a => f.write_str(a.name()),
        }
    }
}

/// An algorithm name that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlgorithmParseError {
    /// Not a known name.
    #[error("unknown algorithm `{0}` (expected separate, dochain, utorus, ucube, maxport, combine, wsort, kbinomial[:k], mdtorus or mutorus:r[:count|:length])")]
    Unknown(String),
    /// A parameter that is missing or malformed.
    #[error("bad parameter in `{0}`")]
    BadParameter(String),
}

impl FromStr for TreeAlgorithm {
    type Err = AlgorithmParseError;

    /// Parse `utorus`, `kbinomial`, `kbinomial:3`, `mutorus:4`,
    /// `mutorus:4:length`, `mutorus:8:count`, … (also `u-torus`, `w-sort`).
    fn from_str(s: &str) -> Result<TreeAlgorithm, AlgorithmParseError> {
        let s = s.trim();
        let mut parts = s.split(':');
        let name = parts
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase()
            .replace(['-', '_'], "");
        let params: Vec<&str> = parts.collect();
        let bad = || AlgorithmParseError::BadParameter(s.to_string());
        let num = |p: &str| p.parse::<usize>().map_err(|_| bad());
        let simple = |a: TreeAlgorithm| if params.is_empty() { Ok(a) } else { Err(bad()) };
        match name.as_str() {
            "separate" | "separateaddressing" => simple(TreeAlgorithm::SeparateAddressing),
            "dochain" | "umesh" | "chain" => simple(TreeAlgorithm::DimensionOrderedChain),
            "utorus" => simple(TreeAlgorithm::UTorus),
            "ucube" => simple(TreeAlgorithm::UCube),
            "maxport" => simple(TreeAlgorithm::Maxport),
            "combine" => simple(TreeAlgorithm::Combine),
            "wsort" => simple(TreeAlgorithm::WSort),
            "mdtorus" => simple(TreeAlgorithm::MdTorus),
            "kbinomial" => match params.as_slice() {
                [] => Ok(TreeAlgorithm::KBinomial { k: None }),
                [k] => Ok(TreeAlgorithm::KBinomial { k: Some(num(k)?) }),
                _ => Err(bad()),
            },
            "mutorus" => {
                let (r, partition) = match params.as_slice() {
                    [r] => (num(r)?, MuPartition::Count),
                    [r, "count"] => (num(r)?, MuPartition::Count),
                    [r, "length"] => (num(r)?, MuPartition::Length),
                    _ => return Err(bad()),
                };
                Ok(TreeAlgorithm::MuTorus { r, partition })
            }
            _ => Err(AlgorithmParseError::Unknown(s.to_string())),
        }
    }
}

/// How many sends a node can make per step [Robinson 1994, §2.3; §3.4, Fig 3.9].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum PortModel {
    /// One send per node per step.
    #[default]
    OnePort,
    /// All-port, Model A (per-channel counting).
    AllPortA,
    /// All-port, Model B (in-order issue); our all-port default.
    AllPortB,
}

impl PortModel {
    /// The all-port model used when none is named: Model B (see the module
    /// documentation).
    pub const ALL_PORT: PortModel = PortModel::AllPortB;
}

/// Options of a planner call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Options {
    /// The step model.
    pub port_model: PortModel,
    /// The message length in packets (used by `KBinomial { k: None }`).
    pub packets: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            port_model: PortModel::OnePort,
            packets: 1,
        }
    }
}

impl Options {
    /// Default options with the given step model.
    pub fn with_port_model(port_model: PortModel) -> Options {
        Options {
            port_model,
            ..Options::default()
        }
    }
}

/// A multicast that cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlannerError {
    /// The source or a destination is not a node of the topology.
    #[error(transparent)]
    Topo(#[from] TopoError),
    /// The source is among the destinations.
    #[error("the source {0} is among the destinations")]
    SourceIsDestination(usize),
    /// A destination is listed twice.
    #[error("destination {0} is listed twice")]
    DuplicateDestination(usize),
    /// The algorithm does not apply to this topology.
    #[error("{algorithm} does not run on {topology}: {reason}")]
    Unsupported {
        /// The algorithm's name.
        algorithm: &'static str,
        /// The topology spec.
        topology: String,
        /// Why.
        reason: &'static str,
    },
    /// A parameter out of range (k = 0, r < 2).
    #[error("bad parameter: {0}")]
    BadParameter(&'static str),
}

/// One unicast of a multicast, owned: in step `step`, `from` sends a copy to
/// `to`, whose address field D is `covers` (the receiver's responsibility,
/// itself included, in the order of the chain it runs the algorithm on).
/// The input of [`Multicast::from_sends`]; [`TreeSendRef`] is the borrowed view.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TreeSend {
    /// The step (1-based).
    pub step: usize,
    /// The sender.
    pub from: usize,
    /// The receiver.
    pub to: usize,
    /// The address field D: every node the receiver becomes responsible
    /// for, itself included.
    pub covers: Vec<usize>,
    /// The position of this send in its sender's issue order (0-based). Not
    /// serialised.
    #[serde(skip)]
    pub order: usize,
}

/// One unicast of a [`Multicast`], borrowed from it. Serialises as
/// `{"step", "from", "to", "covers"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TreeSendRef<'a> {
    /// The step (1-based).
    pub step: usize,
    /// The sender.
    pub from: usize,
    /// The receiver.
    pub to: usize,
    /// The address field D: every node the receiver becomes responsible
    /// for, itself included.
    pub covers: &'a [usize],
    /// The position of this send in its sender's issue order (0-based). Not
    /// serialised.
    #[serde(skip)]
    pub order: usize,
}

impl TreeSendRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> TreeSend {
        TreeSend {
            step: self.step,
            from: self.from,
            to: self.to,
            covers: self.covers.to_vec(),
            order: self.order,
        }
    }
}

/// A send as stored: D is `pool[start..start + len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    step: usize,
    from: usize,
    to: usize,
    order: usize,
    start: usize,
    len: usize,
}

/// A planned multicast: a tree of unicasts with a step for every send.
///
/// The address fields of all sends share one buffer (a child's D is a
/// sub-range of its parent's chain for every planner but Md-torus), so a plan
/// of m nodes holds O(m) ids whatever the tree's depth.
///
/// Serialises as `{"algorithm"?, "port_model", "source", "destinations",
/// "steps", "sends": [{"step", "from", "to", "covers"}, …]}` with node ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Multicast {
    algorithm: Option<TreeAlgorithm>,
    port_model: PortModel,
    source: usize,
    destinations: Vec<usize>,
    steps: usize,
    pool: Vec<usize>,
    entries: Vec<Entry>,
}

impl Serialize for Multicast {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            algorithm: Option<TreeAlgorithm>,
            port_model: PortModel,
            source: usize,
            destinations: &'a [usize],
            steps: usize,
            sends: Vec<TreeSendRef<'a>>,
        }
        Out {
            algorithm: self.algorithm,
            port_model: self.port_model,
            source: self.source,
            destinations: &self.destinations,
            steps: self.steps,
            sends: self.sends(),
        }
        .serialize(serializer)
    }
}

impl Multicast {
    /// A multicast built by hand (e.g. a tree from a paper's figure), to be
    /// checked by the oracles of [`crate::contention`]. Nothing is validated
    /// here; sends of equal steps keep the given order.
    pub fn from_sends(
        source: usize,
        destinations: &[usize],
        port_model: PortModel,
        mut sends: Vec<TreeSend>,
    ) -> Multicast {
        sends.sort_by_key(|s| s.step);
        let mut destinations = destinations.to_vec();
        destinations.sort_unstable();
        let mut pool = Vec::new();
        let entries = sends
            .into_iter()
            .map(|s| {
                let start = pool.len();
                pool.extend_from_slice(&s.covers);
                Entry {
                    step: s.step,
                    from: s.from,
                    to: s.to,
                    order: s.order,
                    start,
                    len: s.covers.len(),
                }
            })
            .collect::<Vec<_>>();
        Multicast {
            algorithm: None,
            port_model,
            source,
            steps: entries.iter().map(|s| s.step).max().unwrap_or(0),
            destinations,
            pool,
            entries,
        }
    }

    /// The algorithm that made the plan (`None` for [`Multicast::from_sends`]).
    pub fn algorithm(&self) -> Option<TreeAlgorithm> {
        self.algorithm
    }

    /// The step model the steps were assigned with.
    pub fn port_model(&self) -> PortModel {
        self.port_model
    }

    /// The source.
    pub fn source(&self) -> usize {
        self.source
    }

    /// The destinations, ascending.
    pub fn destinations(&self) -> &[usize] {
        &self.destinations
    }

    /// The number of steps: the largest step of any send (0 if none).
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The number of sends.
    pub fn send_count(&self) -> usize {
        self.entries.len()
    }

    fn view(&self, e: &Entry) -> TreeSendRef<'_> {
        TreeSendRef {
            step: e.step,
            from: e.from,
            to: e.to,
            covers: &self.pool[e.start..e.start + e.len],
            order: e.order,
        }
    }

    /// Send number `i` (in the order of [`Multicast::sends`]).
    pub fn send(&self, i: usize) -> Option<TreeSendRef<'_>> {
        self.entries.get(i).map(|e| self.view(e))
    }

    /// Every send, by step (ties in planning order). The oracles of
    /// [`crate::contention`] name sends by their index in this list.
    pub fn sends(&self) -> Vec<TreeSendRef<'_>> {
        self.entries.iter().map(|e| self.view(e)).collect()
    }

    /// The step in which `node` receives (0 for the source), `None` if it
    /// does not take part.
    pub fn receive_step(&self, node: usize) -> Option<usize> {
        if node == self.source {
            return Some(0);
        }
        self.entries.iter().find(|s| s.to == node).map(|s| s.step)
    }

    /// The mean over destinations of the step in which they receive (0 when
    /// there are none).
    pub fn mean_receive_step(&self) -> f64 {
        if self.entries.is_empty() {
            return 0.0;
        }
        self.entries.iter().map(|s| s.step as f64).sum::<f64>() / self.entries.len() as f64
    }

    /// The sends of `from`, in its issue order.
    pub fn sends_from(&self, from: usize) -> Vec<TreeSendRef<'_>> {
        let mut v: Vec<TreeSendRef<'_>> = self
            .entries
            .iter()
            .filter(|s| s.from == from)
            .map(|e| self.view(e))
            .collect();
        v.sort_by_key(|s| s.order);
        v
    }

    /// The same tree as a [`Plan`] (each node's sends in issue order), so
    /// that [`crate::oracle::check_delivery`] and
    /// [`crate::oracle::check_responsibility`] apply.
    ///
    /// # Errors
    /// None in practice (one entry per sender is built); the type is
    /// [`Plan::from_parts`]'s.
    pub fn to_plan(&self) -> Result<Plan, PlanError> {
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut nodes: Vec<(usize, Vec<(usize, plan::PlanSend)>)> = Vec::new();
        for s in self.sends() {
            let i = *index.entry(s.from).or_insert_with(|| {
                nodes.push((s.from, Vec::new()));
                nodes.len() - 1
            });
            nodes[i].1.push((
                s.order,
                plan::PlanSend {
                    to: s.to,
                    covers: s.covers.to_vec(),
                },
            ));
        }
        let nodes = nodes
            .into_iter()
            .map(|(n, mut v)| {
                v.sort_by_key(|(o, _)| *o);
                (n, v.into_iter().map(|(_, s)| s).collect())
            })
            .collect();
        Plan::from_parts(self.source, nodes)
    }
}

/// The address field of one child, as a split returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cover {
    /// `chain[lo..hi]` of the holder's chain.
    Range(usize, usize),
    /// An explicit list.
    List(Vec<usize>),
}

/// The output of a split: (target, its D), in issue order.
pub(crate) type Kids = Vec<(usize, Cover)>;

/// Plan a multicast from `source` to `destinations` on `topology`.
///
/// # Errors
/// [`PlannerError::Topo`] for a node outside the topology;
/// [`PlannerError::SourceIsDestination`];
/// [`PlannerError::DuplicateDestination`]; [`PlannerError::Unsupported`]
/// (hypercube algorithms elsewhere, M-torus off regular tori);
/// [`PlannerError::BadParameter`] (k = 0, r < 2).
pub fn plan(
    topology: &Topology,
    algorithm: TreeAlgorithm,
    source: usize,
    destinations: &[usize],
    options: Options,
) -> Result<Multicast, PlannerError> {
    let dests = checked_destinations(topology, source, destinations)?;
    let unsupported = |reason| PlannerError::Unsupported {
        algorithm: algorithm.name(),
        topology: topology.to_string(),
        reason,
    };
    let mut driver = Driver::new(topology, options.port_model, dests.len());
    match algorithm {
        TreeAlgorithm::SeparateAddressing => {
            driver.run(source, dests.clone(), |holder, chain, out| {
                if chain.first() != Some(&holder) {
                    out.extend(
                        chain
                            .iter()
                            .enumerate()
                            .map(|(i, &d)| (d, Cover::Range(i, i + 1))),
                    );
                }
            });
        }
        TreeAlgorithm::DimensionOrderedChain => {
            let chain = chain::dimension_ordered(topology, source, &dests);
            driver.run(source, chain, chain::umesh_split);
        }
        TreeAlgorithm::UTorus => {
            let chain = chain::r_chain(topology, source, &dests);
            driver.run(source, chain, |_, c, out| chain::utorus_split(c, out));
        }
        TreeAlgorithm::KBinomial { k } => {
            let m = dests.len() + 1;
            let k = match k {
                Some(0) => return Err(PlannerError::BadParameter("k-binomial needs k >= 1")),
                Some(k) => k,
                None => crate::kbinomial::optimal_k(m, options.packets),
            };
            let chain = if topology.is_hypercube() {
                cube::Cube::new(topology).relative_chain(source, &dests)
            } else {
                chain::r_chain(topology, source, &dests)
            };
            driver.run(source, chain, move |_, c, out| {
                chain::kbinomial_split(c, k, out)
            });
        }
        TreeAlgorithm::UCube
        | TreeAlgorithm::Maxport
        | TreeAlgorithm::Combine
        | TreeAlgorithm::WSort => {
            if !topology.is_hypercube() {
                return Err(unsupported("it needs a hypercube"));
            }
            let cube = cube::Cube::new(topology);
            let mut chain = cube.relative_chain(source, &dests);
            let rule = match algorithm {
                TreeAlgorithm::UCube => cube::Next::Center,
                TreeAlgorithm::Combine => cube::Next::Combine,
                _ => cube::Next::HighDim,
            };
            if algorithm == TreeAlgorithm::WSort {
                cube.weighted_sort(&mut chain);
            }
            driver.run(source, chain, move |_, c, out| {
                cube.generalized(c, rule, out)
            });
        }
        TreeAlgorithm::MdTorus | TreeAlgorithm::MuTorus { .. } => {
            if !topology.is_torus() || topology.regular_radix().is_none() {
                return Err(unsupported(
                    "it needs a torus with one radix (H-cycle labels)",
                ));
            }
            let chain = mtorus::h_cycle(topology, source, &dests)?;
            match algorithm {
                TreeAlgorithm::MuTorus { r, partition } => {
                    if r < 2 {
                        return Err(PlannerError::BadParameter("Mu-torus needs r >= 2"));
                    }
                    driver.run(source, chain, move |_, c, out| {
                        mtorus::mu_split(c, r, partition, out)
                    });
                }
                _ => driver.run(source, chain, |_, c, out| {
                    mtorus::md_split(topology, c, out)
                }),
            }
        }
    }
    Ok(driver.finish(algorithm, source, dests))
}

/// The destinations sorted by id, after checking the source and every
/// destination are nodes, the source is not a destination, and none repeats.
fn checked_destinations(
    topology: &Topology,
    source: usize,
    destinations: &[usize],
) -> Result<Vec<usize>, PlannerError> {
    topology.check_node(source)?;
    let mut dests = destinations.to_vec();
    for &d in &dests {
        topology.check_node(d)?;
        if d == source {
            return Err(PlannerError::SourceIsDestination(d));
        }
    }
    dests.sort_unstable();
    if let Some(w) = dests.windows(2).find(|w| w[0] == w[1]) {
        return Err(PlannerError::DuplicateDestination(w[0]));
    }
    Ok(dests)
}

/// The algorithms a node can run distributed, from the address field alone.
fn distributed_rule(
    topology: &Topology,
    algorithm: TreeAlgorithm,
) -> Result<Option<cube::Next>, PlannerError> {
    let unsupported = |reason| PlannerError::Unsupported {
        algorithm: algorithm.name(),
        topology: topology.to_string(),
        reason,
    };
    match algorithm {
        TreeAlgorithm::UTorus => Ok(None),
        TreeAlgorithm::UCube
        | TreeAlgorithm::Maxport
        | TreeAlgorithm::Combine
        | TreeAlgorithm::WSort => {
            if !topology.is_hypercube() {
                return Err(unsupported("it needs a hypercube"));
            }
            Ok(Some(match algorithm {
                TreeAlgorithm::UCube => cube::Next::Center,
                TreeAlgorithm::Combine => cube::Next::Combine,
                _ => cube::Next::HighDim,
            }))
        }
        _ => Err(unsupported(
            "only U-torus, U-cube, Maxport, Combine and W-sort are run hop by hop",
        )),
    }
}

/// The chain the source of a U-torus, U-cube, Maxport, Combine or W-sort
/// multicast builds (source first, then the destinations): the R-chain, the
/// source-relative dimension-ordered chain, or that chain after WeightedSort.
/// It is the address field D the source holds; see [`split_received`].
///
/// # Errors
/// As [`plan`], and [`PlannerError::Unsupported`] for other algorithms.
pub fn source_chain(
    topology: &Topology,
    algorithm: TreeAlgorithm,
    source: usize,
    destinations: &[usize],
) -> Result<Vec<usize>, PlannerError> {
    let dests = checked_destinations(topology, source, destinations)?;
    Ok(match distributed_rule(topology, algorithm)? {
        None => chain::r_chain(topology, source, &dests),
        Some(_) => {
            let cube = cube::Cube::new(topology);
            let mut chain = cube.relative_chain(source, &dests);
            if algorithm == TreeAlgorithm::WSort {
                cube.weighted_sort(&mut chain);
            }
            chain
        }
    })
}

/// The sends of the node holding address field `d` (`d[0]` is that node), in
/// issue order, each with the receiver's address field (receiver first).
///
/// This is the hop-by-hop form of [`plan`]: the thesis's receivers run the
/// algorithm on the sub-chain they received, **as received** (
/// [Robinson 1994, §3.3, Fig 3.4]: "each receiver runs U-cube on the sub-chain it received"), never
/// re-sorted relative to themselves. Starting from [`source_chain`] and
/// applying this at every node yields exactly the tree of [`plan`].
///
/// # Errors
/// [`PlannerError::Topo`] for a node outside the topology,
/// [`PlannerError::DuplicateDestination`] for a repeated node, and
/// [`PlannerError::Unsupported`] as in [`source_chain`].
pub fn split_received(
    topology: &Topology,
    algorithm: TreeAlgorithm,
    d: &[usize],
) -> Result<Vec<(usize, Vec<usize>)>, PlannerError> {
    let rule = distributed_rule(topology, algorithm)?;
    let mut seen = std::collections::HashSet::with_capacity(d.len());
    for &v in d {
        topology.check_node(v)?;
        if !seen.insert(v) {
            return Err(PlannerError::DuplicateDestination(v));
        }
    }
    let mut out = Kids::new();
    match rule {
        None => chain::utorus_split(d, &mut out),
        Some(rule) => cube::Cube::new(topology).generalized(d, rule, &mut out),
    }
    Ok(out
        .into_iter()
        .map(|(to, cover)| {
            let covers = match cover {
                Cover::Range(lo, hi) => d[lo..hi].to_vec(),
                Cover::List(v) => v,
            };
            (to, covers)
        })
        .collect())
}

/// Runs a split function from the source down the tree and assigns steps.
struct Driver<'a> {
    topo: &'a Topology,
    model: PortModel,
    pool: Vec<usize>,
    entries: Vec<Entry>,
    kids: Kids,
    ports: Vec<((usize, Dir), usize, usize)>,
}

impl<'a> Driver<'a> {
    fn new(topo: &'a Topology, model: PortModel, sends: usize) -> Driver<'a> {
        Driver {
            topo,
            model,
            pool: Vec::new(),
            entries: Vec::with_capacity(sends),
            kids: Vec::new(),
            ports: Vec::new(),
        }
    }

    /// `split(holder, chain, out)` appends the holder's sends in issue order,
    /// each (target, D); the receiver later runs `split(target, D, out)`.
    fn run<F>(&mut self, source: usize, root_chain: Vec<usize>, mut split: F)
    where
        F: FnMut(usize, &[usize], &mut Kids),
    {
        let len = root_chain.len();
        self.pool = root_chain;
        self.expand(source, 0, 0, len, &mut split);
        let mut i = 0;
        while i < self.entries.len() {
            let e = self.entries[i];
            self.expand(e.to, e.step, e.start, e.len, &mut split);
            i += 1;
        }
    }

    fn expand<F>(&mut self, from: usize, t: usize, start: usize, len: usize, split: &mut F)
    where
        F: FnMut(usize, &[usize], &mut Kids),
    {
        let mut kids = std::mem::take(&mut self.kids);
        kids.clear();
        split(from, &self.pool[start..start + len], &mut kids);
        self.ports.clear();
        let mut prev = t + 1;
        for (order, (to, cover)) in kids.drain(..).enumerate() {
            let (cstart, clen) = match cover {
                Cover::Range(lo, hi) => (start + lo, hi - lo),
                Cover::List(v) => {
                    let s = self.pool.len();
                    self.pool.extend_from_slice(&v);
                    (s, v.len())
                }
            };
            let step = match self.model {
                PortModel::OnePort => t + order + 1,
                PortModel::AllPortA | PortModel::AllPortB => {
                    let port = self
                        .topo
                        .first_channel_unchecked(from, to)
                        .map(|c| (c.dim, c.dir))
                        .unwrap_or((usize::MAX, Dir::Plus));
                    let slot = match self.ports.iter().position(|p| p.0 == port) {
                        Some(i) => i,
                        None => {
                            self.ports.push((port, t, 0));
                            self.ports.len() - 1
                        }
                    };
                    let (_, last, count) = &mut self.ports[slot];
                    *count += 1;
                    let step = if self.model == PortModel::AllPortA {
                        t + *count
                    } else {
                        prev.max(*last + 1)
                    };
                    *last = step;
                    prev = step;
                    step
                }
            };
            self.entries.push(Entry {
                step,
                from,
                to,
                order,
                start: cstart,
                len: clen,
            });
        }
        self.kids = kids;
    }

    fn finish(
        self,
        algorithm: TreeAlgorithm,
        source: usize,
        destinations: Vec<usize>,
    ) -> Multicast {
        // Stable counting sort by step (steps are at most the number of sends).
        let steps = self.entries.iter().map(|s| s.step).max().unwrap_or(0);
        let mut start = vec![0usize; steps + 2];
        for e in &self.entries {
            start[e.step + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut sorted = self.entries.clone();
        for e in &self.entries {
            sorted[start[e.step]] = *e;
            start[e.step] += 1;
        }
        Multicast {
            algorithm: Some(algorithm),
            port_model: self.model,
            source,
            steps,
            destinations,
            pool: self.pool,
            entries: sorted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::Links;

    #[test]
    fn algorithm_names_round_trip() {
        for a in [
            TreeAlgorithm::SeparateAddressing,
            TreeAlgorithm::DimensionOrderedChain,
            TreeAlgorithm::UTorus,
            TreeAlgorithm::UCube,
            TreeAlgorithm::Maxport,
            TreeAlgorithm::Combine,
            TreeAlgorithm::WSort,
            TreeAlgorithm::KBinomial { k: None },
            TreeAlgorithm::KBinomial { k: Some(3) },
            TreeAlgorithm::MdTorus,
            TreeAlgorithm::MuTorus {
                r: 4,
                partition: MuPartition::Count,
            },
            TreeAlgorithm::MuTorus {
                r: 4,
                partition: MuPartition::Length,
            },
        ] {
            assert_eq!(a.to_string().parse::<TreeAlgorithm>(), Ok(a));
        }
        assert_eq!(
            "U-Torus".parse::<TreeAlgorithm>(),
            Ok(TreeAlgorithm::UTorus)
        );
        assert!(matches!(
            "mutorus".parse::<TreeAlgorithm>(),
            Err(AlgorithmParseError::BadParameter(_))
        ));
        assert!(matches!(
            "utorus:3".parse::<TreeAlgorithm>(),
            Err(AlgorithmParseError::BadParameter(_))
        ));
        assert!(matches!(
            "bogus".parse::<TreeAlgorithm>(),
            Err(AlgorithmParseError::Unknown(_))
        ));
    }

    #[test]
    fn input_errors() {
        let t = Topology::torus(&[4, 4], Links::Bidirectional).unwrap();
        let o = Options::default();
        assert_eq!(
            plan(&t, TreeAlgorithm::UTorus, 16, &[1], o),
            Err(PlannerError::Topo(TopoError::NodeOutOfRange {
                node: 16,
                nodes: 16
            }))
        );
        assert_eq!(
            plan(&t, TreeAlgorithm::UTorus, 0, &[1, 99], o),
            Err(PlannerError::Topo(TopoError::NodeOutOfRange {
                node: 99,
                nodes: 16
            }))
        );
        assert_eq!(
            plan(&t, TreeAlgorithm::UTorus, 3, &[1, 3], o),
            Err(PlannerError::SourceIsDestination(3))
        );
        assert_eq!(
            plan(&t, TreeAlgorithm::UTorus, 3, &[1, 2, 1], o),
            Err(PlannerError::DuplicateDestination(1))
        );
        assert!(matches!(
            plan(&t, TreeAlgorithm::WSort, 0, &[1], o),
            Err(PlannerError::Unsupported {
                algorithm: "wsort",
                ..
            })
        ));
        let irregular = Topology::torus(&[4, 6], Links::Bidirectional).unwrap();
        assert!(matches!(
            plan(&irregular, TreeAlgorithm::MdTorus, 0, &[1], o),
            Err(PlannerError::Unsupported { .. })
        ));
        let mesh = Topology::mesh(&[4, 4]).unwrap();
        assert!(matches!(
            plan(&mesh, TreeAlgorithm::MdTorus, 0, &[1], o),
            Err(PlannerError::Unsupported { .. })
        ));
        assert_eq!(
            plan(&t, TreeAlgorithm::KBinomial { k: Some(0) }, 0, &[1], o),
            Err(PlannerError::BadParameter("k-binomial needs k >= 1"))
        );
        assert!(matches!(
            plan(
                &t,
                TreeAlgorithm::MuTorus {
                    r: 1,
                    partition: MuPartition::Count
                },
                0,
                &[1],
                o
            ),
            Err(PlannerError::BadParameter(_))
        ));
        // No destinations: an empty plan.
        let m = plan(&t, TreeAlgorithm::UTorus, 5, &[], o).unwrap();
        assert_eq!(m.steps(), 0);
        assert!(m.sends().is_empty());
        assert_eq!(m.receive_step(5), Some(0));
        assert_eq!(m.mean_receive_step(), 0.0);
    }

    #[test]
    fn model_a_and_b_differ() {
        // [Robinson 1994, §3.4, Fig 3.9]: the source sends 01111 (ch3), 01011 (ch3), then
        // 00100 (ch2): Model A puts the third send in step 1, Model B in 2.
        let h = Topology::hypercube(5, crate::topo::Resolution::HighToLow).unwrap();
        let dests = [
            0b00100, 0b01010, 0b01011, 0b01101, 0b01110, 0b01111, 0b10000, 0b10011, 0b10101,
            0b11011, 0b11100, 0b11111,
        ];
        let a = plan(
            &h,
            TreeAlgorithm::UCube,
            0,
            &dests,
            Options::with_port_model(PortModel::AllPortA),
        )
        .unwrap();
        let b = plan(
            &h,
            TreeAlgorithm::UCube,
            0,
            &dests,
            Options::with_port_model(PortModel::AllPortB),
        )
        .unwrap();
        let s0: Vec<usize> = a.sends_from(0).iter().map(|s| s.to).collect();
        assert_eq!(s0, vec![0b01111, 0b01011, 0b00100]);
        assert_eq!(a.receive_step(0b01011), Some(2));
        assert_eq!(a.receive_step(0b00100), Some(1));
        assert_eq!(a.receive_step(0b01010), Some(2));
        assert_eq!(b.receive_step(0b00100), Some(2));
        assert_eq!(b.receive_step(0b01010), Some(3));
        assert_eq!(PortModel::ALL_PORT, PortModel::AllPortB);
    }
}
