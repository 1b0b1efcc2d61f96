//! `mcsim plan` for the mesh path-based schemes of the Qualified Groups
//! paper (`qg[:TD]`, `dual-path`, `multipath`, `column-path` on
//! `mesh:AxB[x...]`; [`mcast_algorithms::mesh`]) and the two-pass MIN
//! multicast (`min-two-pass[:S]` on `min:N`; [`mcast_algorithms::min`]).
//! The planners live in `mcast-algorithms`; this module checks and shapes
//! the [`PlanJson`].
//!
//! # Mesh schemes
//! * `port_model` is always `all` (the paper's routers have four injection
//!   and four ejection channels); `--port-model` is not consulted.
//! * `steps` = `phases` = message-passing steps (QG: 2, or 1 for a single
//!   destination; DP, MP: 1; CP: ⌈worms/4⌉ rounds); `link_visits` = channels
//!   traversed by all worms (a channel used twice counts twice).
//! * Every send is a worm: `to` = its receivers (ascending), `worm` =
//!   `path`, `route` = the nodes traversed (the sender first, every leg XY
//!   routed), `delivers` = the receivers in delivery order, `covers` = each
//!   receiver followed by the nodes it forwards to in a later phase (QG's
//!   representatives: the rest of their group).
//! * `contention`: `stepwise` = pairs of same-phase worms using the same
//!   directed channel; `link_type1` = worms sharing a directed channel with
//!   another worm of their phase; `depth` and `link_type2` are `null`.
//! * Oracles run first: every destination exactly once and nobody else,
//!   routes are walks on the mesh, senders have received in an earlier
//!   phase; QG's groups partition the destinations.
//!
//! # `min:N` (a 2^N-node MIN of 2×2 replicating switches)
//! * `min:N` has the paper's wiring (shuffle, then butterflies), `min:N:omega`
//!   the omega wiring. Nodes are decimal ids, printed as numbers.
//! * `min-two-pass:S` uses relays S..S+f−1; `min-two-pass` draws S uniformly
//!   from 0..=2^N−f with a fixed seed (0). `algorithm` names the S used.
//! * `steps` = `phases` = 2 (passes). Pass 1 is one send from the source,
//!   `worm` = `region`, `to`/`delivers` = the relays (they receive without
//!   delivering to their host), `covers` = each relay followed by the
//!   destination it forwards to. Pass 2 is one unicast per relay. Every
//!   send's `branches` lists, per copy, its output link at stages N−1 … 0
//!   (the last label is the node reached); `route` is absent.
//! * `link_visits` = injection links plus SE output links over both passes.
//! * `contention`: `stepwise` = copies blocked when each pass runs lock-step
//!   under upper-input-first arbitration (0, Theorem 1); `link_type1` =
//!   SE output links used by two copies of one pass (0).

use std::collections::{BTreeMap, HashMap};

use mcast_algorithms::mesh::{self, Mesh, MeshAlgorithm, MeshPlan};
use mcast_algorithms::min::{self, Min, Start, TwoPassPlan, Wiring};
use mcast_algorithms::topo::Topology;

use super::json::{ContentionJson, Node, PlanJson, Receivers, SendJson};
use super::request::{check_set, dest_items, input, internal, McsimError, PlanRequest};

/// A mesh or MIN algorithm of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MeshChoice {
    /// A mesh path-based scheme.
    Mesh(MeshAlgorithm),
    /// The two-pass MIN multicast with an optional first relay.
    MinTwoPass(Option<u64>),
}

impl MeshChoice {
    /// The name as typed (canonical).
    pub(crate) fn name(&self) -> String {
        match self {
            MeshChoice::Mesh(a) => a.name(),
            MeshChoice::MinTwoPass(None) => "min-two-pass".to_string(),
            MeshChoice::MinTwoPass(Some(s)) => format!("min-two-pass:{s}"),
        }
    }
}

/// `Some` for `qg[:TD]`, `dual-path`, `multipath`, `column-path`,
/// `min-two-pass[:S]`; `None` for any other name.
///
/// # Errors
/// [`McsimError::Input`] for one of these names with a bad parameter.
pub(crate) fn parse_mesh_algo(text: &str) -> Result<Option<MeshChoice>, McsimError> {
    let t = text.trim().to_ascii_lowercase();
    if let Some(rest) = t.strip_prefix("min-two-pass") {
        return match rest.strip_prefix(':') {
            None if rest.is_empty() => Ok(Some(MeshChoice::MinTwoPass(None))),
            Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s
                .parse::<u64>()
                .map(|s| Some(MeshChoice::MinTwoPass(Some(s))))
                .map_err(|_| input(format!("bad start in `{t}`"))),
            _ => Err(input(format!(
                "bad algorithm `{t}` (min-two-pass or min-two-pass:S with S a node id)"
            ))),
        };
    }
    let ours = t == "qg"
        || t.starts_with("qg:")
        || matches!(t.as_str(), "dual-path" | "multipath" | "column-path");
    if !ours {
        return Ok(None);
    }
    t.parse::<MeshAlgorithm>()
        .map(|a| Some(MeshChoice::Mesh(a)))
        .map_err(|e| input(e.to_string()))
}

/// `Some` for a `min` fabric spec (`min:N`, `min:N:omega`, `min:N:banyan`).
pub(crate) fn parse_min_fabric(text: &str) -> Option<Result<Min, McsimError>> {
    let t = text.trim();
    let rest = t.strip_prefix("min")?;
    if !(rest.is_empty() || rest.starts_with(':')) {
        return None;
    }
    let bad = |why: &str| Some(Err(input(format!("bad fabric `{t}`: {why}"))));
    let mut parts = rest.trim_start_matches(':').split(':');
    let n = parts.next().unwrap_or_default();
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return bad("min:N needs N, the number of stages (2^N nodes), e.g. min:4");
    }
    let Ok(n) = n.parse::<u32>() else {
        return bad("N is too large");
    };
    let wiring = match parts.next() {
        None | Some("banyan") => Wiring::Banyan,
        Some("omega") => Wiring::Omega,
        Some(o) => return bad(&format!("unknown option `{o}` (banyan or omega)")),
    };
    if parts.next().is_some() {
        return bad("too many `:` parts");
    }
    // Keep the printed node lists reasonable: 2^20 nodes at most.
    if !(1..=20).contains(&n) {
        return bad("N must be between 1 and 20");
    }
    Some(Min::new(n, wiring).map_err(|e| input(format!("bad fabric `{t}`: {e}"))))
}

fn min_spec(net: &Min) -> String {
    match net.wiring() {
        Wiring::Banyan => format!("min:{}", net.stages()),
        Wiring::Omega => format!("min:{}:omega", net.stages()),
    }
}

/// Same-phase pairs of worms sharing a directed channel, and worms sharing
/// one with another worm of their phase.
fn channel_sharing(phased: &[(usize, Vec<(usize, usize)>)]) -> (usize, usize) {
    let mut by: BTreeMap<(usize, (usize, usize)), Vec<usize>> = BTreeMap::new();
    for (i, (phase, chans)) in phased.iter().enumerate() {
        let mut seen = std::collections::HashSet::new();
        for &c in chans {
            if seen.insert(c) {
                by.entry((*phase, c)).or_default().push(i);
            }
        }
    }
    let mut pairs = std::collections::BTreeSet::new();
    let mut sharers = std::collections::BTreeSet::new();
    for users in by.values() {
        for (a, &x) in users.iter().enumerate() {
            for &y in &users[a + 1..] {
                pairs.insert((x, y));
                sharers.insert(x);
                sharers.insert(y);
            }
        }
    }
    (pairs.len(), sharers.len())
}

const MESH_NOTE: &str = "mesh path worms: stepwise = pairs of same-phase worms using the same \
    directed channel; link_type1 = worms sharing such a channel with another worm of their \
    phase; depth and link_type2 are defined for unicast trees only";

const MIN_NOTE: &str = "MIN: stepwise = copies blocked when each pass runs lock-step under \
    upper-input-first arbitration; link_type1 = SE output links used by two copies of one \
    pass; depth and link_type2 are defined for direct networks only";

/// Plan a mesh scheme.
///
/// # Errors
/// [`McsimError::Input`] for a bad request, [`McsimError::Internal`] when an
/// oracle rejects the plan.
pub(crate) fn plan_mesh(
    req: &PlanRequest<'_>,
    topo: &Topology,
    choice: MeshChoice,
) -> Result<PlanJson, McsimError> {
    let MeshChoice::Mesh(algo) = choice else {
        return Err(input(format!(
            "{} runs on a MIN fabric (min:N), not {topo}",
            choice.name()
        )));
    };
    let grid = Mesh::from_topology(topo).map_err(|_| {
        input(format!(
            "{algo} is a mesh scheme; it needs a mesh fabric (mesh:AxB[x...]), not {topo}"
        ))
    })?;
    let (source, dests) = super::request::direct_nodes(req, topo)?;
    let pl: MeshPlan = mesh::plan(&grid, algo, source, &dests).map_err(|e| input(e.to_string()))?;
    mesh::check_plan(&grid, &pl).map_err(internal)?;
    if let Some(g) = &pl.grouping {
        mesh::check_groups(g, &pl.destinations).map_err(internal)?;
    }
    let fmt = |n: usize| -> Result<Node, McsimError> {
        topo.format_node(n).map(Node::Label).map_err(internal)
    };
    let fmts = |v: &[usize]| v.iter().map(|&n| fmt(n)).collect::<Result<Vec<_>, _>>();
    // What each node forwards in a later phase.
    let mut later: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for s in &pl.sends {
        later
            .entry((s.from, s.phase))
            .or_default()
            .extend(&s.delivers);
    }
    let forwards = |n: usize, phase: usize| -> Vec<usize> {
        let mut out = Vec::new();
        let mut frontier = vec![(n, phase)];
        while let Some((x, ph)) = frontier.pop() {
            for (&(from, p2), ds) in &later {
                if from == x && p2 > ph {
                    out.extend(ds);
                    frontier.extend(ds.iter().map(|&d| (d, p2)));
                }
            }
        }
        out
    };
    let mut sends = Vec::with_capacity(pl.sends.len());
    for s in &pl.sends {
        let mut to = s.delivers.clone();
        to.sort_unstable();
        let mut covers = Vec::new();
        for &d in &s.delivers {
            covers.push(d);
            covers.extend(forwards(d, s.phase));
        }
        sends.push(SendJson {
            step: s.phase,
            from: fmt(s.from)?,
            to: Receivers::Many(fmts(&to)?),
            covers: fmts(&covers)?,
            worm: Some("path".to_string()),
            route: Some(fmts(&s.route)?),
            branches: None,
            delivers: Some(fmts(&s.delivers)?),
            vcs: None,
            boundaries: None,
        });
    }
    let phased: Vec<(usize, Vec<(usize, usize)>)> = pl
        .sends
        .iter()
        .map(|s| (s.phase, s.route.windows(2).map(|w| (w[0], w[1])).collect()))
        .collect();
    let (stepwise, type1) = channel_sharing(&phased);
    Ok(PlanJson {
        algorithm: algo.name(),
        fabric: topo.to_string(),
        port_model: "all".to_string(),
        packets: req.packets,
        k: None,
        source: fmt(source)?,
        destinations: fmts(&pl.destinations)?,
        steps: pl.phases(),
        phases: Some(pl.phases()),
        link_visits: Some(pl.link_visits()),
        sends,
        contention: ContentionJson {
            stepwise: Some(stepwise),
            depth: None,
            link_type1: Some(type1),
            link_type2: None,
            note: Some(MESH_NOTE.to_string()),
        },
    })
}

fn parse_min_node(net: &Min, text: &str, what: &str) -> Result<usize, McsimError> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(input(format!(
            "malformed {what} `{t}`: a MIN node is a decimal id"
        )));
    }
    match t.parse::<u64>() {
        Ok(n) if n < net.nodes() => Ok(n as usize),
        _ => Err(input(format!(
            "{what} {t} is outside {} (nodes 0..={})",
            min_spec(net),
            net.nodes() - 1
        ))),
    }
}

/// Plan the two-pass MIN multicast.
///
/// # Errors
/// As [`plan_mesh`].
pub(crate) fn plan_min(
    req: &PlanRequest<'_>,
    net: &Min,
    choice: MeshChoice,
) -> Result<PlanJson, McsimError> {
    let MeshChoice::MinTwoPass(start) = choice else {
        return Err(input(format!(
            "{} is a mesh scheme; on {} use min-two-pass[:S]",
            choice.name(),
            min_spec(net)
        )));
    };
    let source = parse_min_node(net, req.source, "source")?;
    let dests = dest_items(req.dests)?
        .into_iter()
        .map(|t| parse_min_node(net, t, "destination"))
        .collect::<Result<Vec<_>, _>>()?;
    check_set(source, &dests, |n| n.to_string())?;
    let start = start.map_or(Start::Seeded(0), Start::Fixed);
    let d64: Vec<u64> = dests.iter().map(|&d| d as u64).collect();
    let plan: TwoPassPlan =
        min::two_pass(net, source as u64, &d64, start).map_err(|e| input(e.to_string()))?;
    min::check_two_pass(net, &plan).map_err(internal)?;
    if plan.passes() != 2 {
        return Err(internal(format!("{} passes, not 2", plan.passes())));
    }
    let host = |n: u32| Node::Host(n as usize);
    let mut sends = Vec::with_capacity(plan.sends.len());
    let mut blocked = 0;
    let mut shared = 0;
    for pass in [1u32, 2] {
        let packets: Vec<_> = plan
            .sends
            .iter()
            .filter(|s| s.pass == pass)
            .map(|s| (s.from, s.header))
            .collect();
        let wave = net
            .wave(&packets, min::Arbitration::UpperFirst)
            .map_err(internal)?;
        blocked += wave.blocked.len();
        let mut links: HashMap<(u32, u32), usize> = HashMap::new();
        for s in plan.sends.iter().filter(|s| s.pass == pass) {
            for h in &s.trace.hops {
                for &o in &h.out_links {
                    *links.entry((h.stage, o)).or_default() += 1;
                }
            }
        }
        shared += links.values().filter(|&&c| c > 1).count();
    }
    for s in &plan.sends {
        let receivers: Vec<u32> = s.trace.delivered.clone();
        let covers: Vec<Node> = if s.pass == 1 {
            receivers
                .iter()
                .zip(&plan.destinations)
                .flat_map(|(&r, &d)| [host(r), host(d)])
                .collect()
        } else {
            receivers.iter().map(|&r| host(r)).collect()
        };
        sends.push(SendJson {
            step: s.pass as usize,
            from: host(s.from),
            to: if s.pass == 1 {
                Receivers::Many(receivers.iter().map(|&r| host(r)).collect())
            } else {
                Receivers::One(host(receivers.first().copied().unwrap_or(0)))
            },
            covers,
            worm: (s.pass == 1).then(|| "region".to_string()),
            route: None,
            branches: Some(
                s.trace
                    .branches
                    .iter()
                    .map(|b| b.iter().map(|&l| l as usize).collect())
                    .collect(),
            ),
            delivers: (s.pass == 1).then(|| receivers.iter().map(|&r| host(r)).collect()),
            vcs: None,
            boundaries: None,
        });
    }
    Ok(PlanJson {
        algorithm: MeshChoice::MinTwoPass(Some(u64::from(plan.start))).name(),
        fabric: min_spec(net),
        port_model: "one".to_string(),
        packets: req.packets,
        k: None,
        source: host(plan.source),
        destinations: plan.destinations.iter().map(|&d| host(d)).collect(),
        steps: 2,
        phases: Some(2),
        link_visits: Some(plan.link_visits()),
        sends,
        contention: ContentionJson {
            stepwise: Some(blocked),
            depth: None,
            link_type1: Some(shared),
            link_type2: None,
            note: Some(MIN_NOTE.to_string()),
        },
    })
}
