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
//!   papers' worked examples, written and printed as the JSON **string**
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
//!   `mtorus-u:R`, see [`path`]) has `worm` = `path`, `route` =
//!   the nodes visited (strings, the sender first), `vcs`, `boundaries` and
//!   `delivers`; the plan adds `phases` and `link_visits`.
//! * A **unicast send on an irregular fabric** (`binomial`, `kbinomial`,
//!   `separate`) adds `route`: the switches the up*/down* unicast traverses,
//!   as traced through the switch decisions.
//! * Every route and branch printed has passed the up*/down* legality oracle
//!   ([`SwitchNetwork::check_route`]); every plan has passed the delivery oracle
//!   (every destination receives exactly once, nobody else receives, each
//!   sender has received first, each `covers` is split exactly) before it is
//!   returned.
//!
//! # `contention`
//! * Direct networks: [`mcast_algorithms::contention::analyze`] (stepwise
//!   pairs, depth pairs of Theorems 3.3/4.1, Type 1 and Type 2 link sharing
//!   of [Robinson 1994, §4.5]); steps are re-derived by
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
//! see `mcast_algorithms::trees`) and `all-a` (Model A, the one the reference
//! means of tests/topo_table_9_1.rs use). Irregular fabrics are one-port only: a host has one link
//! to its switch and injects one worm or unicast per step.

pub mod irregular;
pub mod json;
pub mod mesh;
pub mod path;
pub mod request;
pub mod tree;

use mcast_algorithms::irregular::{IrregularSpec, Scheme, SwitchNetwork};
use mcast_algorithms::path::PathAlgorithm;
use mcast_algorithms::topo::{TopoSpecError, Topology};
use mcast_algorithms::trees::TreeAlgorithm;

pub use json::{ContentionJson, Node, PlanJson, Receivers, SendJson};
pub use request::{McsimError, PlanRequest, PortChoice};

use request::input;

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

/// A parsed fabric.
enum ParsedFabric {
    Direct(Topology),
    Irregular(Box<(IrregularSpec, SwitchNetwork)>),
    Min(mcast_algorithms::min::Min),
}

const FABRIC_KINDS: &str = "torus:AxB[:uni|:bi], mesh:AxB, hypercube:N, min:N or \
                            irregular:switches=S,ports=K,nodes=P,connectivity=C,seed=N[,root=R]";

fn parse_fabric(text: &str) -> Result<ParsedFabric, McsimError> {
    let t = text.trim();
    if let Some(net) = mesh::parse_min_fabric(t) {
        return net.map(ParsedFabric::Min);
    }
    if t == "irregular" || t.starts_with("irregular:") {
        let spec: IrregularSpec = t
            .parse()
            .map_err(|e| input(format!("bad fabric `{t}`: {e}")))?;
        spec.validate()
            .map_err(|e| input(format!("bad fabric `{t}`: {e}")))?;
        let fabric = SwitchNetwork::from_spec(&spec)
            .map_err(|e| input(format!("cannot build fabric `{t}`: {e}")))?;
        return Ok(ParsedFabric::Irregular(Box::new((spec, fabric))));
    }
    match t.parse::<Topology>() {
        Ok(topo) => Ok(ParsedFabric::Direct(topo)),
        Err(TopoSpecError::Empty | TopoSpecError::UnknownKind(_)) => Err(input(format!(
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
    Tree(TreeAlgorithm),
    /// The binomial tree (k = ⌈log2 m⌉).
    Binomial,
    /// A worm scheme.
    Worm(Scheme),
    /// A path-based (UTPR) planner on a unidirectional torus
    /// ([`path`]).
    Path(PathAlgorithm),
    /// A mesh path scheme or the MIN two-pass multicast
    /// ([`mesh`]).
    Mesh(mesh::MeshChoice),
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

    /// The `algorithm` printed: [`Algo::name`], but a `kbinomial` without k
    /// stays `kbinomial` (the k used is printed as `k`).
    fn shown(&self) -> String {
        match self {
            Algo::Tree(TreeAlgorithm::KBinomial { k: None }) => "kbinomial".to_string(),
            a => a.name(),
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
    if let Some(a) = path::parse_path_algo(t)? {
        return Ok(Algo::Path(a));
    }
    if let Some(a) = mesh::parse_mesh_algo(t)? {
        return Ok(Algo::Mesh(a));
    }
    use mcast_algorithms::trees::AlgorithmParseError as E;
    match t.parse::<TreeAlgorithm>() {
        Ok(TreeAlgorithm::KBinomial { k: Some(0) }) => {
            Err(input(format!("bad algorithm `{t}`: k-binomial needs k >= 1")))
        }
        Ok(TreeAlgorithm::MuTorus { r, .. }) if r < 2 => {
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
            Algo::Path(a) => path::plan_path(req, &topo, a),
            Algo::Mesh(a) => mesh::plan_mesh(req, &topo, a),
            Algo::Worm(s) => {
                // The nodes are checked first, as for every direct planner.
                request::direct_nodes(req, &topo)?;
                Err(input(format!(
                    "{s} is a switch-based worm scheme; it needs an irregular fabric, not {topo}"
                )))
            }
            Algo::Binomial => {
                tree::plan_direct(req, &topo, tree::TreeChoice::Binomial, algo.shown())
            }
            Algo::Tree(a) => tree::plan_direct(req, &topo, tree::TreeChoice::Tree(a), algo.shown()),
        },
        ParsedFabric::Min(net) => match algo {
            Algo::Mesh(a) => mesh::plan_min(req, &net, a),
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

/// The irregular family: the nodes and the port model are checked before the
/// algorithm is matched to the fabric.
fn plan_irregular(
    req: &PlanRequest<'_>,
    spec: &IrregularSpec,
    fabric: &SwitchNetwork,
    algo: Algo,
) -> Result<PlanJson, McsimError> {
    use irregular::IrregularChoice as C;
    let (source, dests) = irregular::hosts(req, fabric)?;
    let choice = match algo {
        Algo::Worm(scheme) => C::Worm(scheme),
        Algo::Binomial => C::Binomial,
        Algo::Tree(TreeAlgorithm::KBinomial { k }) => C::KBinomial(k),
        Algo::Tree(TreeAlgorithm::SeparateAddressing) => C::Separate,
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
    irregular::plan_irregular(req, spec, fabric, source, &dests, choice, algo.shown())
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
}
