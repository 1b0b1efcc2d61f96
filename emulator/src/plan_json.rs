//! `mcsim plan`: one multicast plan, checked by the oracles of
//! `mcast-algorithms`, as a serialisable [`PlanJson`].
//!
//! Nothing is planned here: fabrics, planners and oracles all come from
//! [`mcast_algorithms`]. This module parses the command-line notation, picks
//! the planner for the fabric, runs the oracles, and shapes the JSON. It does
//! no I/O (the `mcsim` binary prints).
//!
//! # Fabrics
//! * direct networks ([`mcast_algorithms::topo::Topology`]): `torus:5x5`
//!   (bidirectional, BTR), `torus:5x5:uni` (UTR), `mesh:4x4`, `hypercube:4`
//!   (`hypercube:4:low-to-high` for the nCUBE-2 resolution order);
//! * generated irregular networks ([`mcast_algorithms::irregular`]):
//!   `irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=7[,root=R]`
//!   (missing keys take the paper's defaults).
//!
//! # Node notation (input and output)
//! * torus and mesh nodes: coordinates highest dimension first, as in the
//!   digests' worked examples, written and printed as the JSON **string**
//!   `"4,3"` (`(4, 3)` is accepted on input);
//! * hypercube nodes: the address as a bit string, MSB first, exactly n bits,
//!   printed as the JSON **string** `"0101"`;
//! * irregular-fabric nodes: host ids (hosts are numbered in (switch, port)
//!   order), printed as JSON **numbers**. Switch ids in `route`/`branches` are
//!   numbers too.
//!
//! # Output
//! ```json
//! {
//!   "algorithm": "utorus", "fabric": "torus:5x5:uni",
//!   "port_model": "one", "packets": 1,
//!   "source": "4,3", "destinations": ["0,0", "0,3", ...],
//!   "steps": 3,
//!   "sends": [
//!     {"step": 1, "from": "4,3", "to": "1,1", "covers": ["1,1", "1,3", "2,1"]}, ...
//!   ],
//!   "contention": {"stepwise": 0, "depth": 0, "link_type1": 0, "link_type2": 0}
//! }
//! ```
//! * `algorithm` is the canonical name (`kbinomial:3`, `mutorus:4:length`,
//!   `ssr-greedy`, …); `k` is added for `binomial`/`kbinomial` (the k used,
//!   the optimal one of Theorem 3 for `--packets` when none is given).
//! * `destinations` are sorted by node id; `sends` are sorted by step (ties
//!   in planning order).
//! * `covers` is every node the send's receiver(s) become responsible for,
//!   themselves included: the address field D of the thesis for unicast
//!   trees; for a worm, the union over its receivers, in delivery order,
//!   each followed by the nodes it forwards to later.
//! * A **worm send** (irregular fabrics, `ssr-*`, `path-*`, `tree-worm`) has
//!   `to` = the array of its receivers (ascending) instead of one node, and
//!   adds `worm` (`ssr`, `path`, `tree`), `route` (the switches traversed:
//!   the whole path for SSR and path worms, the up phase — injection switch
//!   to turn switch — for a tree worm), `branches` (tree worms: every branch,
//!   injection switch to leaf switch) and `delivers` (the receivers in
//!   delivery order).
//! * A **path worm on a unidirectional torus** (`storus`, `mtorus-d`,
//!   `mtorus-u:R`, see [`crate::plan_path`]) has `worm` = `path`, `route` =
//!   the nodes visited (strings, the sender first), `vcs`, `boundaries` and
//!   `delivers`; the plan adds `phases` and `link_visits`.
//! * A **unicast send on an irregular fabric** (`binomial`, `kbinomial`,
//!   `separate`) adds `route`: the switches the up*/down* unicast traverses,
//!   as traced through the switch decisions.
//! * Every route and branch printed has passed the up*/down* legality oracle
//!   ([`Fabric::check_route`]); every plan has passed the delivery oracle
//!   (every destination receives exactly once, nobody else receives, each
//!   sender has received first, each `covers` is split exactly) before it is
//!   returned.
//!
//! # `contention`
//! * Direct networks: [`mcast_algorithms::contention::analyze`] (stepwise
//!   pairs, depth pairs of Theorems 3.3/4.1, Type 1 and Type 2 link sharing
//!   of thesis §3.6); steps are re-derived by
//!   [`mcast_algorithms::contention::check_steps`].
//! * Irregular networks: the direct-network definitions carry over only
//!   partly, so `note` says what was counted. `stepwise` = pairs of sends of
//!   the same step (phase) whose routes traverse the same inter-switch link in
//!   the same direction (parallel links count as one, so this is an upper
//!   bound); `link_type1` = the number of sends that share such a directed
//!   link with another send of their step. `depth` is `null`: Theorems
//!   3.3/4.1 are stated for unicast trees on direct networks with virtual
//!   channels. `link_type2` is `null`: Type 2 is the 3-way multiplexing of
//!   both directions of a bidirectional torus link; irregular links are
//!   full duplex.
//!
//! # Port models
//! `one` (default), `all` (all-port Model B, the planners' all-port default:
//! see `mcast_algorithms::trees`) and `all-a` (Model A, the one the digest's
//! §9.1 means use). Irregular fabrics are one-port only: a host has one link
//! to its switch and injects one worm or unicast per step.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use mcast_algorithms::contention;
use mcast_algorithms::irregular::{
    Fabric, IrregularSpec, RouteHeader, Scheme, UnicastHeader, WormKind,
};
use mcast_algorithms::oracle;
use mcast_algorithms::path::PathAlgorithm;
use mcast_algorithms::plan::Plan;
use mcast_algorithms::topo::{SpecError, Topology};
use mcast_algorithms::trees::{self, Algorithm, Options, PlannerError, PortModel};
use mcast_algorithms::{ceil_log2, optimal_k, Shape};
use serde::{Deserialize, Serialize};

/// The fabric spec grammar, for help texts.
pub const FABRICS_HELP: &str =
    "  torus:AxB[x...][:uni|:bi]   k-ary n-cube torus, radices highest dimension first;
                              bidirectional (BTR) by default, :uni = unidirectional (UTR)
  mesh:AxB[x...]              mesh, dimension-order routing
  hypercube:N[:low-to-high]   binary N-cube, e-cube routing (high-to-low by default)
  irregular:switches=S,ports=K,nodes=P,connectivity=C,seed=N[,root=R]
                              generated irregular network with up*/down* routing
                              (missing keys: the paper's 8 switches, 8 ports,
                              32 nodes, connectivity 0.8, seed 0; root = switch 0)
  min:N[:omega]               wrap-around MIN of 2^N nodes, 2x2 replicating switches
                              (the paper's shuffle + butterfly wiring; :omega = omega)";

/// The algorithm names, for help texts.
pub const ALGORITHMS_HELP: &str = "  torus, mesh, hypercube:
    separate              separate addressing (the source sends to everyone)
    dochain               recursive doubling on the dimension-ordered chain (U-mesh)
    utorus                U-torus on the R-chain
    kbinomial[:k]         k-binomial tree on the dimension-ordered chain
                          (no k: the optimal k for --packets)
    binomial              = kbinomial:ceil(log2 m)
  hypercube only:
    ucube, maxport, combine, wsort
  torus with one radix only (H-cycle):
    mdtorus, mutorus:r[:count|:length]
                          SCI store-and-forward Md-/Mu-torus (unicast trees)
  unidirectional torus with one radix only (torus:AxB[x...]:uni), path worms
  with intermediate reception, R_UTPR routing, all-port; add phases, link_visits:
    storus                S-torus: one worm through the H-cycle
    mtorus-d              M_d-torus: dimensional partitioning (<= n phases)
    mtorus-u:R            M_u-torus(R): R parts per phase (R >= 2; 2 = unicast-based)
  mesh (Qualified Groups paper), path worms with intermediate reception, XY legs,
  all-port; add phases, link_visits:
    qg[:TD]               Qualified Groups, threshold 0 < TD < 1 (default 0.5), any n
    dual-path             dual-path on the snake Hamiltonian labelling, any n
    multipath             multipath (4 worms, distinct first hops), 2-D
    column-path           column-path (<= 2 worms per column, rounds of 4), 2-D
  min:N:
    min-two-pass[:S]      region copy to relays S..S+f-1, then one unicast each
                          (no S: drawn from 0..=2^N-f with seed 0)
  irregular:
    ssr-greedy, ssr-lg    single-switch-replication worms, Greedy / Less-Greedy phases
    path-greedy, path-lg  path-based multi-drop worms, Greedy / Less-Greedy phases
    tree-worm             one tree-based bit-string worm
    binomial, kbinomial[:k], separate
                          NI-based unicast trees on the paper's host ordering";

/// The node notation, for help texts.
pub const NODES_HELP: &str = "  torus, mesh: coordinates highest dimension first, e.g. 4,3
  hypercube:   the address as exactly N bits, MSB first, e.g. 0101
  irregular:   host ids 0..P-1, e.g. 17
  min:         node ids 0..2^N-1, e.g. 13
  --dests separates nodes with ';' (quote it in a shell): --dests '0,0;1,1;2,1'";

/// Why no plan was printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McsimError {
    /// The request is wrong (bad fabric, algorithm, node, …): exit status 2.
    #[error("{0}")]
    Input(String),
    /// A planner produced something an oracle rejects, or similar: a bug in
    /// `mcast-algorithms`. Exit status 1.
    #[error("internal error (a planner or oracle bug): {0}")]
    Internal(String),
}

pub(crate) fn input(msg: impl Into<String>) -> McsimError {
    McsimError::Input(msg.into())
}

pub(crate) fn internal(msg: impl std::fmt::Display) -> McsimError {
    McsimError::Internal(msg.to_string())
}

/// The step model requested with `--port-model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PortChoice {
    /// One-port.
    #[default]
    One,
    /// All-port, Model B (in-order issue).
    All,
    /// All-port, Model A (per-channel counting).
    AllA,
}

impl PortChoice {
    /// The name printed in `port_model`.
    pub fn name(self) -> &'static str {
        match self {
            PortChoice::One => "one",
            PortChoice::All => "all",
            PortChoice::AllA => "all-a",
        }
    }

    fn model(self) -> PortModel {
        match self {
            PortChoice::One => PortModel::OnePort,
            PortChoice::All => PortModel::ALL_PORT,
            PortChoice::AllA => PortModel::AllPortA,
        }
    }
}

/// What `mcsim plan` was asked, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRequest<'a> {
    /// The fabric spec.
    pub fabric: &'a str,
    /// The algorithm name.
    pub algo: &'a str,
    /// The source node.
    pub source: &'a str,
    /// The destinations, `;`-separated.
    pub dests: &'a str,
    /// The message length in packets (≥ 1).
    pub packets: usize,
    /// The step model.
    pub port_model: PortChoice,
}

/// A node as printed: a paper-notation string (`"4,3"`, `"0101"`) or a host
/// id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Node {
    /// A host id of an irregular fabric.
    Host(usize),
    /// Coordinates or a bit string.
    Label(String),
}

/// The receiver(s) of a send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Receivers {
    /// A unicast's receiver.
    One(Node),
    /// A worm's receivers, ascending.
    Many(Vec<Node>),
}

/// One send of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendJson {
    /// The step (1-based).
    pub step: usize,
    /// The sender.
    pub from: Node,
    /// The receiver (unicast) or receivers (worm).
    pub to: Receivers,
    /// Every node the receiver(s) become responsible for, themselves included.
    pub covers: Vec<Node>,
    /// Worms only: `ssr`, `path` or `tree`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worm: Option<String>,
    /// Irregular fabrics: the switches traversed (a tree worm: its up
    /// phase), as numbers. Path worms on tori (`storus`, `mtorus-*`): the
    /// nodes visited, the sender first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Vec<Node>>,
    /// Tree worms only: every branch, injection switch to leaf switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branches: Option<Vec<Vec<usize>>>,
    /// Worms only: the receivers in delivery order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivers: Option<Vec<Node>>,
    /// Path worms on tori: the VC set of every hop of `route`, one letter
    /// per hop (`p` before the boundary, `h` on and after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcs: Option<String>,
    /// Path worms on tori: the number of boundaries crossed (0 or 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boundaries: Option<usize>,
}

/// The contention counts (see the module documentation for irregular
/// fabrics). `null` means "not defined on this fabric".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentionJson {
    /// Pairs of same-step sends sharing a channel.
    pub stepwise: Option<usize>,
    /// Depth-contention pairs (Theorems 3.3 / 4.1).
    pub depth: Option<usize>,
    /// Type 1 link sharing.
    pub link_type1: Option<usize>,
    /// Type 2 link sharing.
    pub link_type2: Option<usize>,
    /// What was counted, where it differs from the direct-network oracles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One plan as `mcsim plan` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanJson {
    /// The canonical algorithm name.
    pub algorithm: String,
    /// The canonical fabric spec.
    pub fabric: String,
    /// `one`, `all` (Model B) or `all-a`.
    pub port_model: String,
    /// The message length in packets.
    pub packets: usize,
    /// The k of a (k-)binomial tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// The source.
    pub source: Node,
    /// The destinations, by node id.
    pub destinations: Vec<Node>,
    /// The number of steps (phases for worm schemes).
    pub steps: usize,
    /// Path-based plans on tori: the number of phases (= `steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<usize>,
    /// Path-based plans on tori: link visits (one per link per worm, summed
    /// over all worms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_visits: Option<usize>,
    /// Every send, by step.
    pub sends: Vec<SendJson>,
    /// Contention counts.
    pub contention: ContentionJson,
}

/// A parsed fabric.
enum ParsedFabric {
    Direct(Topology),
    Irregular(Box<(IrregularSpec, Fabric)>),
    Min(mcast_algorithms::min::Min),
}

const FABRIC_KINDS: &str = "torus:AxB[:uni|:bi], mesh:AxB, hypercube:N, min:N or \
                            irregular:switches=S,ports=K,nodes=P,connectivity=C,seed=N[,root=R]";

fn parse_fabric(text: &str) -> Result<ParsedFabric, McsimError> {
    let t = text.trim();
    if let Some(net) = crate::plan_mesh::parse_min_fabric(t) {
        return net.map(ParsedFabric::Min);
    }
    if t == "irregular" || t.starts_with("irregular:") {
        let spec: IrregularSpec = t
            .parse()
            .map_err(|e| input(format!("bad fabric `{t}`: {e}")))?;
        spec.validate()
            .map_err(|e| input(format!("bad fabric `{t}`: {e}")))?;
        let fabric = Fabric::from_spec(&spec)
            .map_err(|e| input(format!("cannot build fabric `{t}`: {e}")))?;
        return Ok(ParsedFabric::Irregular(Box::new((spec, fabric))));
    }
    match t.parse::<Topology>() {
        Ok(topo) => Ok(ParsedFabric::Direct(topo)),
        Err(SpecError::Empty | SpecError::UnknownKind(_)) => Err(input(format!(
            "unknown fabric `{t}` (expected {FABRIC_KINDS})"
        ))),
        Err(e) => Err(input(format!("bad fabric `{t}`: {e}"))),
    }
}

/// A parsed algorithm name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algo {
    /// A direct-network planner (also `kbinomial` and `separate`, which run
    /// on irregular fabrics too).
    Tree(Algorithm),
    /// The binomial tree (k = ⌈log2 m⌉).
    Binomial,
    /// A worm scheme.
    Worm(Scheme),
    /// A path-based (UTPR) planner on a unidirectional torus
    /// ([`crate::plan_path`]).
    Path(PathAlgorithm),
    /// A mesh path scheme or the MIN two-pass multicast
    /// ([`crate::plan_mesh`]).
    Mesh(crate::plan_mesh::MeshChoice),
}

impl Algo {
    fn name(&self) -> String {
        match self {
            Algo::Tree(a) => a.to_string(),
            Algo::Binomial => "binomial".to_string(),
            Algo::Worm(s) => s.name().to_string(),
            Algo::Path(a) => a.to_string(),
            Algo::Mesh(a) => a.name(),
        }
    }
}

const ALGO_NAMES: &str = "separate, dochain, utorus, ucube, maxport, combine, wsort, \
                          kbinomial[:k], binomial, mdtorus, mutorus:r[:count|:length], \
                          storus, mtorus-d, mtorus-u:R, \
                          qg[:TD], dual-path, multipath, column-path, min-two-pass[:S], \
                          ssr-greedy, ssr-lg, path-greedy, path-lg, tree-worm";

fn parse_algo(text: &str) -> Result<Algo, McsimError> {
    let t = text.trim();
    if let Ok(s) = t.parse::<Scheme>() {
        return Ok(Algo::Worm(s));
    }
    if t.eq_ignore_ascii_case("binomial") {
        return Ok(Algo::Binomial);
    }
    if let Some(a) = crate::plan_path::parse_path_algo(t)? {
        return Ok(Algo::Path(a));
    }
    if let Some(a) = crate::plan_mesh::parse_mesh_algo(t)? {
        return Ok(Algo::Mesh(a));
    }
    use mcast_algorithms::trees::AlgorithmParseError as E;
    match t.parse::<Algorithm>() {
        Ok(Algorithm::KBinomial { k: Some(0) }) => {
            Err(input(format!("bad algorithm `{t}`: k-binomial needs k >= 1")))
        }
        Ok(Algorithm::MuTorus { r, .. }) if r < 2 => {
            Err(input(format!("bad algorithm `{t}`: Mu-torus needs r >= 2")))
        }
        Ok(a) => Ok(Algo::Tree(a)),
        Err(E::Unknown(_)) => Err(input(format!(
            "unknown algorithm `{t}` (expected one of {ALGO_NAMES})"
        ))),
        Err(E::BadParameter(_)) => Err(input(format!(
            "bad algorithm parameter in `{t}` (kbinomial[:k] with k >= 1, mutorus:r[:count|:length] with r >= 2)"
        ))),
    }
}

/// Split `--dests`; empty items are malformed nodes.
pub(crate) fn dest_items(text: &str) -> Result<Vec<&str>, McsimError> {
    if text.trim().is_empty() {
        return Err(input("--dests needs at least one destination"));
    }
    Ok(text.split(';').collect())
}

/// Reject the source among the destinations and duplicates, naming nodes
/// with `show`.
pub(crate) fn check_set(
    source: usize,
    dests: &[usize],
    show: impl Fn(usize) -> String,
) -> Result<(), McsimError> {
    let mut seen = HashSet::with_capacity(dests.len());
    for &d in dests {
        if d == source {
            return Err(input(format!(
                "the source {} is among the destinations",
                show(d)
            )));
        }
        if !seen.insert(d) {
            return Err(input(format!("destination {} is listed twice", show(d))));
        }
    }
    Ok(())
}

/// Plan, check and shape one multicast.
///
/// # Errors
/// [`McsimError::Input`] for any bad request; [`McsimError::Internal`] when
/// an oracle rejects a plan (a planner bug).
pub fn plan(req: &PlanRequest<'_>) -> Result<PlanJson, McsimError> {
    if req.packets == 0 {
        return Err(input("--packets must be at least 1"));
    }
    // Parse the algorithm first: it is cheap, and an irregular fabric is not.
    let algo = parse_algo(req.algo)?;
    match parse_fabric(req.fabric)? {
        ParsedFabric::Direct(topo) => match algo {
            Algo::Path(a) => crate::plan_path::plan_path(req, &topo, a),
            Algo::Mesh(a) => crate::plan_mesh::plan_mesh(req, &topo, a),
            _ => plan_direct(req, &topo, algo),
        },
        ParsedFabric::Min(net) => match algo {
            Algo::Mesh(a) => crate::plan_mesh::plan_min(req, &net, a),
            a => Err(input(format!(
                "{} does not run on a MIN fabric (there: min-two-pass[:S])",
                a.name()
            ))),
        },
        ParsedFabric::Irregular(b) => {
            let (spec, fabric) = *b;
            plan_irregular(req, &spec, &fabric, algo)
        }
    }
}

// ---------------------------------------------------------------- direct

pub(crate) fn parse_direct_node(
    topo: &Topology,
    text: &str,
    what: &str,
) -> Result<usize, McsimError> {
    topo.parse_node(text).map_err(|e| match e {
        SpecError::Topo(t) => input(format!(
            "{what} `{}` is not a node of {topo}: {t}",
            text.trim()
        )),
        e => input(format!("malformed {what}: {e}")),
    })
}

/// The source and destinations of a request on a direct network, checked
/// (distinct, source not among the destinations).
pub(crate) fn direct_nodes(
    req: &PlanRequest<'_>,
    topo: &Topology,
) -> Result<(usize, Vec<usize>), McsimError> {
    let show = |n: usize| topo.format_node(n).unwrap_or_else(|_| n.to_string());
    let source = parse_direct_node(topo, req.source, "source")?;
    let dests = dest_items(req.dests)?
        .into_iter()
        .map(|t| parse_direct_node(topo, t, "destination"))
        .collect::<Result<Vec<_>, _>>()?;
    check_set(source, &dests, show)?;
    Ok((source, dests))
}

fn plan_direct(req: &PlanRequest<'_>, topo: &Topology, algo: Algo) -> Result<PlanJson, McsimError> {
    let (source, dests) = direct_nodes(req, topo)?;
    let m_nodes = dests.len() + 1;
    let (algorithm, k) = match algo {
        Algo::Worm(s) => {
            return Err(input(format!(
                "{s} is a switch-based worm scheme; it needs an irregular fabric, not {topo}"
            )))
        }
        Algo::Path(a) => return crate::plan_path::plan_path(req, topo, a),
        Algo::Mesh(a) => return crate::plan_mesh::plan_mesh(req, topo, a),
        Algo::Binomial => {
            let k = ceil_log2(m_nodes).max(1);
            (Algorithm::KBinomial { k: Some(k) }, Some(k))
        }
        Algo::Tree(Algorithm::KBinomial { k }) => {
            let k = k.unwrap_or_else(|| optimal_k(m_nodes, req.packets));
            (Algorithm::KBinomial { k: Some(k) }, Some(k))
        }
        Algo::Tree(a) => (a, None),
    };
    let options = Options {
        port_model: req.port_model.model(),
        packets: req.packets,
    };
    let m = trees::plan(topo, algorithm, source, &dests, options).map_err(|e| match e {
        PlannerError::Unsupported {
            algorithm, reason, ..
        } => input(format!("{algorithm} does not run on {topo}: {reason}")),
        e => input(e.to_string()),
    })?;
    // The delivery oracle (exactly once, nobody else, D split exactly), then
    // an independent recomputation of every step.
    contention::check_delivery(&m).map_err(internal)?;
    let steps = contention::check_steps(topo, &m).map_err(internal)?;
    if steps != m.steps() {
        return Err(internal(format!(
            "the plan claims {} steps, the step oracle counts {steps}",
            m.steps()
        )));
    }
    let report = contention::analyze(topo, &m).map_err(internal)?;
    let fmt = |n: usize| -> Result<Node, McsimError> {
        topo.format_node(n).map(Node::Label).map_err(internal)
    };
    let sends = m
        .sends()
        .iter()
        .map(|s| {
            Ok(SendJson {
                step: s.step,
                from: fmt(s.from)?,
                to: Receivers::One(fmt(s.to)?),
                covers: s.covers.iter().map(|&n| fmt(n)).collect::<Result<_, _>>()?,
                worm: None,
                route: None,
                branches: None,
                delivers: None,
                vcs: None,
                boundaries: None,
            })
        })
        .collect::<Result<Vec<_>, McsimError>>()?;
    Ok(PlanJson {
        algorithm: match algo {
            Algo::Tree(Algorithm::KBinomial { k: None }) => "kbinomial".to_string(),
            a => a.name(),
        },
        fabric: topo.to_string(),
        port_model: req.port_model.name().to_string(),
        packets: req.packets,
        k,
        source: fmt(source)?,
        destinations: m
            .destinations()
            .iter()
            .map(|&n| fmt(n))
            .collect::<Result<_, _>>()?,
        steps,
        phases: None,
        link_visits: None,
        sends,
        contention: ContentionJson {
            stepwise: Some(report.stepwise),
            depth: Some(report.depth),
            link_type1: Some(report.link_type1),
            link_type2: Some(report.link_type2),
            note: None,
        },
    })
}

// ------------------------------------------------------------- irregular

const IRREGULAR_NOTE: &str = "irregular fabric: stepwise = pairs of same-step sends \
    traversing the same inter-switch link in the same direction (parallel links counted \
    as one); link_type1 = sends sharing such a link with another send of their step; \
    depth and link_type2 are defined for direct networks only";

fn parse_host(fabric: &Fabric, text: &str, what: &str) -> Result<usize, McsimError> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(input(format!(
            "malformed {what} `{t}`: an irregular-fabric node is a host id (a decimal number)"
        )));
    }
    let nodes = fabric.topology().node_count();
    match t.parse::<usize>() {
        Ok(n) if n < nodes => Ok(n),
        _ => Err(input(format!(
            "{what} {t} is outside the fabric (it has {nodes} hosts, 0..={})",
            nodes.saturating_sub(1)
        ))),
    }
}

/// One send on an irregular fabric before shaping.
struct RawSend {
    step: usize,
    from: usize,
    to: Vec<usize>,
    covers: Vec<usize>,
    worm: Option<WormKind>,
    route: Vec<usize>,
    branches: Option<Vec<Vec<usize>>>,
    delivers: Option<Vec<usize>>,
}

fn plan_irregular(
    req: &PlanRequest<'_>,
    spec: &IrregularSpec,
    fabric: &Fabric,
    algo: Algo,
) -> Result<PlanJson, McsimError> {
    let source = parse_host(fabric, req.source, "source")?;
    let dests = dest_items(req.dests)?
        .into_iter()
        .map(|t| parse_host(fabric, t, "destination"))
        .collect::<Result<Vec<_>, _>>()?;
    check_set(source, &dests, |n| n.to_string())?;
    if req.port_model != PortChoice::One {
        return Err(input(format!(
            "--port-model {} does not apply to irregular fabrics: a host has one link to its \
             switch and injects one worm or unicast per step (use one)",
            req.port_model.name()
        )));
    }
    let m_nodes = dests.len() + 1;
    let (raw, k) = match algo {
        Algo::Worm(scheme) => (worm_sends(fabric, scheme, source, &dests)?, None),
        Algo::Binomial => {
            let k = ceil_log2(m_nodes).max(1);
            let shape = Shape::KBinomial { k };
            (chain_sends(fabric, shape, source, &dests)?, Some(k))
        }
        Algo::Tree(Algorithm::KBinomial { k }) => {
            let k = k.unwrap_or_else(|| optimal_k(m_nodes, req.packets));
            let shape = Shape::KBinomial { k };
            (chain_sends(fabric, shape, source, &dests)?, Some(k))
        }
        Algo::Tree(Algorithm::SeparateAddressing) => {
            (chain_sends(fabric, Shape::Flat, source, &dests)?, None)
        }
        Algo::Mesh(a) => {
            return Err(input(format!(
                "{} needs a mesh (mesh:AxB) or MIN (min:N) fabric, not an irregular one",
                a.name()
            )))
        }
        Algo::Path(a) => {
            return Err(input(format!(
                "{a} is a path-based (UTPR) scheme; it needs a unidirectional torus \
                 (torus:AxB[x...]:uni with one radix), not an irregular fabric"
            )))
        }
        Algo::Tree(a) => {
            return Err(input(format!(
                "{a} does not run on irregular fabrics (there: ssr-greedy, ssr-lg, path-greedy, \
                 path-lg, tree-worm, binomial, kbinomial[:k], separate)"
            )))
        }
    };
    for s in &raw {
        let all = std::iter::once(&s.route).chain(s.branches.iter().flatten());
        for r in all {
            fabric.check_route(r).map_err(|e| {
                internal(format!(
                    "route {r:?} of a send from {} is not a legal up*/down* route: {e}",
                    s.from
                ))
            })?;
        }
    }
    let (stepwise, type1) = hop_contention(&raw);
    let mut sorted_dests = dests.clone();
    sorted_dests.sort_unstable();
    let steps = raw.iter().map(|s| s.step).max().unwrap_or(0);
    let hosts = |v: &[usize]| v.iter().map(|&n| Node::Host(n)).collect::<Vec<_>>();
    let sends = raw
        .into_iter()
        .map(|s| SendJson {
            step: s.step,
            from: Node::Host(s.from),
            to: if s.worm.is_some() {
                Receivers::Many(hosts(&s.to))
            } else {
                Receivers::One(Node::Host(s.to[0]))
            },
            covers: hosts(&s.covers),
            worm: s.worm.map(|w| {
                match w {
                    WormKind::Ssr => "ssr",
                    WormKind::Path => "path",
                    WormKind::Tree => "tree",
                }
                .to_string()
            }),
            route: Some(hosts(&s.route)),
            branches: s.branches,
            delivers: s.delivers.as_deref().map(hosts),
            vcs: None,
            boundaries: None,
        })
        .collect();
    Ok(PlanJson {
        algorithm: match algo {
            Algo::Tree(Algorithm::KBinomial { k: None }) => "kbinomial".to_string(),
            a => a.name(),
        },
        fabric: spec.to_string(),
        port_model: req.port_model.name().to_string(),
        packets: req.packets,
        k,
        source: Node::Host(source),
        destinations: hosts(&sorted_dests),
        steps,
        phases: None,
        link_visits: None,
        sends,
        contention: ContentionJson {
            stepwise: Some(stepwise),
            depth: None,
            link_type1: Some(type1),
            link_type2: None,
            note: Some(IRREGULAR_NOTE.to_string()),
        },
    })
}

/// Receiver -> its responsibility, from a checked plan.
fn responsibilities(plan: &Plan) -> HashMap<usize, &[usize]> {
    plan.nodes()
        .flat_map(|(_, sends)| sends.iter())
        .map(|s| (s.to, s.responsible_for.as_slice()))
        .collect()
}

fn worm_sends(
    fabric: &Fabric,
    scheme: Scheme,
    source: usize,
    dests: &[usize],
) -> Result<Vec<RawSend>, McsimError> {
    let wp = fabric
        .plan(scheme, source, dests)
        .map_err(|e| internal(format!("{scheme}: {e}")))?;
    let plan = wp.to_plan().map_err(internal)?;
    oracle::check_responsibility(&plan, source, dests).map_err(internal)?;
    let resp = responsibilities(&plan);
    wp.sends
        .into_iter()
        .map(|s| {
            let mut covers = Vec::new();
            for d in &s.delivers {
                let r = resp
                    .get(d)
                    .ok_or_else(|| internal(format!("node {d} has no responsibility")))?;
                covers.extend_from_slice(r);
            }
            let mut to = s.delivers.clone();
            to.sort_unstable();
            Ok(RawSend {
                step: s.step,
                from: s.sender,
                to,
                covers,
                worm: Some(s.worm),
                route: s.route,
                branches: (s.worm == WormKind::Tree).then_some(s.branches),
                delivers: Some(s.delivers),
            })
        })
        .collect()
}

fn chain_sends(
    fabric: &Fabric,
    shape: Shape,
    source: usize,
    dests: &[usize],
) -> Result<Vec<RawSend>, McsimError> {
    let plan = fabric
        .chain_plan(source, dests, shape)
        .map_err(|e| internal(format!("chain plan: {e}")))?;
    oracle::check_responsibility(&plan, source, dests).map_err(internal)?;
    // One-port steps: the j-th send (1-based) of a node that received in
    // step t is in step t + j.
    let mut received = HashMap::from([(source, 0usize)]);
    let mut queue = VecDeque::from([source]);
    let mut out = Vec::with_capacity(dests.len());
    while let Some(v) = queue.pop_front() {
        let t = received[&v];
        for (j, s) in plan.sends(v).iter().enumerate() {
            let step = t + j + 1;
            received.insert(s.to, step);
            queue.push_back(s.to);
            let header = RouteHeader::Unicast(UnicastHeader {
                dest: u32::try_from(s.to).map_err(internal)?,
            });
            let trace = fabric
                .trace(v, &header)
                .map_err(|e| internal(format!("unicast {v} -> {}: {e}", s.to)))?;
            if trace.delivered != [s.to] || trace.branches.len() != 1 {
                return Err(internal(format!(
                    "unicast {v} -> {} delivered to {:?}",
                    s.to, trace.delivered
                )));
            }
            out.push(RawSend {
                step,
                from: v,
                to: vec![s.to],
                covers: s.responsible_for.clone(),
                worm: None,
                route: trace.branches.into_iter().next().unwrap_or_default(),
                branches: None,
                delivers: None,
            });
        }
    }
    out.sort_by_key(|s| s.step);
    Ok(out)
}

/// (stepwise pairs, type-1 sends) over directed inter-switch hops.
fn hop_contention(sends: &[RawSend]) -> (usize, usize) {
    let mut users: BTreeMap<(usize, usize, usize), Vec<usize>> = BTreeMap::new();
    for (i, s) in sends.iter().enumerate() {
        let mut hops: Vec<(usize, usize)> = std::iter::once(&s.route)
            .chain(s.branches.iter().flatten())
            .flat_map(|r| r.windows(2).map(|w| (w[0], w[1])))
            .collect();
        hops.sort_unstable();
        hops.dedup();
        for (a, b) in hops {
            users.entry((s.step, a, b)).or_default().push(i);
        }
    }
    sharing(&users)
}

/// Given the users (send indices) of each (step, link), the number of pairs
/// of sends sharing a link in a step, and the number of sends sharing one.
pub(crate) fn sharing<K>(users: &BTreeMap<K, Vec<usize>>) -> (usize, usize) {
    let mut pairs = HashSet::new();
    let mut sharers = HashSet::new();
    for list in users.values().filter(|l| l.len() >= 2) {
        sharers.extend(list.iter().copied());
        for (x, &i) in list.iter().enumerate() {
            for &j in &list[x + 1..] {
                pairs.insert((i, j));
            }
        }
    }
    (pairs.len(), sharers.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(fabric: &'a str, algo: &'a str, source: &'a str, dests: &'a str) -> PlanRequest<'a> {
        PlanRequest {
            fabric,
            algo,
            source,
            dests,
            packets: 1,
            port_model: PortChoice::One,
        }
    }

    #[test]
    fn utorus_5x5() {
        let p = plan(&req(
            "torus:5x5:uni",
            "utorus",
            "4,3",
            "0,0;1,1;2,1;0,3;1,3;4,4",
        ))
        .unwrap();
        assert_eq!(p.steps, 3);
        assert_eq!(p.contention.stepwise, Some(0));
        assert_eq!(p.contention.depth, Some(0));
        assert_eq!(p.source, Node::Label("4,3".into()));
    }

    #[test]
    fn errors_are_input_errors() {
        let bad = [
            req("ring:4", "utorus", "0", "1"),
            req("torus:5x5", "nope", "0,0", "1,1"),
            req("torus:5x5", "ucube", "0,0", "1,1"),
            req("torus:5x5", "utorus", "9,9", "1,1"),
            req("torus:5x5", "utorus", "0,0", "1,1;1,1"),
            req("torus:5x5", "utorus", "0,0", "0,0"),
            req("hypercube:3", "ucube", "000", "0x1"),
            req("irregular", "ssr-greedy", "0", "32"),
            req("irregular", "utorus", "0", "1"),
        ];
        for r in bad {
            let e = plan(&r).unwrap_err();
            assert!(matches!(e, McsimError::Input(_)), "{r:?}: {e:?}");
            assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn hop_contention_counts() {
        let s = |step, route: Vec<usize>| RawSend {
            step,
            from: 0,
            to: vec![1],
            covers: vec![1],
            worm: None,
            route,
            branches: None,
            delivers: None,
        };
        let sends = [
            s(1, vec![0, 1, 2]),
            s(1, vec![0, 1]),
            s(1, vec![1, 0]),
            s(2, vec![0, 1]),
        ];
        assert_eq!(hop_contention(&sends), (1, 2));
    }
}
