//! `mcsim plan` for the path-based planners of Robinson's thesis chapter 6
//! (`storus`, `mtorus-d`, `mtorus-u:R`) on unidirectional tori
//! (`torus:AxB[x...]:uni`, one radix): [`mcast_algorithms::path`] plans,
//! this module checks and shapes the [`PlanJson`].
//!
//! Output, beside the common fields:
//! * `port_model` is always `all`: intermediate reception needs all-port
//!   nodes (thesis Fig 5.2, port-induced deadlock), so `--port-model` is
//!   not consulted;
//! * `steps` = `phases` (one worm per holder per phase) and `link_visits`
//!   (one per link per worm, summed);
//! * every send is a worm: `to` = its receivers (ascending), `worm` =
//!   `path`, `route` = the nodes visited (the sender first), `vcs` = the VC
//!   set of each hop (`p`/`h`), `boundaries` (0 or 1), `delivers` = the
//!   receivers in delivery order, `covers` = each receiver followed by the
//!   rest of the sub-H-cycle it becomes responsible for (the compound
//!   header of Fig 6.2), in delivery order;
//! * `contention`: `stepwise` = pairs of worms of the same phase that use
//!   the same physical link, `link_type1` = worms sharing a link with another
//!   worm of their phase (both 0 by Theorem 6.1); `depth` and `link_type2`
//!   are `null` (defined for unicast trees).
//!
//! Oracles run before anything is printed: delivery and responsibility
//! ([`mcast_algorithms::oracle::check_responsibility`]), every worm crosses
//! at most one boundary, every segment is minimal, no worm revisits a node,
//! every hop is a UTPR channel.

use std::collections::{BTreeMap, HashSet};

use mcast_algorithms::oracle;
use mcast_algorithms::path::{self, PathAlgorithm, PathError, PathPlan, Utpr};
use mcast_algorithms::topo::{Topology, Vc};

use super::json::{ContentionJson, Node, PlanJson, Receivers, SendJson};
use super::request::{input, internal, McsimError, PlanRequest};

const PATH_NOTE: &str = "path worms: stepwise = pairs of same-phase worms using the same \
    physical link; link_type1 = worms sharing a link with another worm of their phase; depth \
    and link_type2 are defined for unicast trees only";

/// `Some` for the path-based names (`storus`, `s-torus`, `mtorus-d`,
/// `mtorus-u:R`), `None` for any other name.
///
/// # Errors
/// [`McsimError::Input`] for a path-based name with a bad parameter.
pub(crate) fn parse_path_algo(text: &str) -> Result<Option<PathAlgorithm>, McsimError> {
    let t = text.trim().to_ascii_lowercase();
    if !(t.starts_with("storus") || t.starts_with("s-torus") || t.starts_with("mtorus-")) {
        return Ok(None);
    }
    t.parse::<PathAlgorithm>().map(Some).map_err(|_| {
        input(format!(
            "bad path algorithm `{}` (storus, mtorus-d or mtorus-u:R with R >= 2)",
            text.trim()
        ))
    })
}

/// Plan, check and shape a path-based multicast.
///
/// # Errors
/// [`McsimError::Input`] for a bad request (not a regular unidirectional
/// torus, bad nodes); [`McsimError::Internal`] when an oracle fails.
pub(crate) fn plan_path(
    req: &PlanRequest<'_>,
    topo: &Topology,
    algorithm: PathAlgorithm,
) -> Result<PlanJson, McsimError> {
    let utpr = Utpr::new(topo).map_err(|_| {
        input(format!(
            "{algorithm} is a path-based (UTPR) scheme; it needs a unidirectional torus with \
             one radix (torus:AxB[x...]:uni), not {topo}"
        ))
    })?;
    let (source, dests) = super::request::direct_nodes(req, topo)?;
    let p = path::plan(topo, algorithm, source, &dests).map_err(|e| match e {
        PathError::Topo(_)
        | PathError::SourceIsDestination(_)
        | PathError::DuplicateDestination(_)
        | PathError::NotUnidirectionalTorus(_)
        | PathError::BadParameter(_) => input(e.to_string()),
        e => internal(e),
    })?;
    check(&utpr, &p, source, &dests)?;
    let (stepwise, type1) = link_sharing(&p);
    let fmt = |n: usize| -> Result<Node, McsimError> {
        topo.format_node(n).map(Node::Label).map_err(internal)
    };
    let fmt_all = |v: &[usize]| v.iter().map(|&n| fmt(n)).collect::<Result<Vec<_>, _>>();
    let sends = p
        .sends
        .iter()
        .map(|s| {
            let mut to = s.delivers().to_vec();
            to.sort_unstable();
            let covers: Vec<usize> = s.parts.iter().flatten().copied().collect();
            Ok(SendJson {
                step: s.phase,
                from: fmt(s.sender)?,
                to: Receivers::Many(fmt_all(&to)?),
                covers: fmt_all(&covers)?,
                worm: Some("path".to_string()),
                route: Some(fmt_all(&s.route.nodes(&utpr))?),
                branches: None,
                delivers: Some(fmt_all(s.delivers())?),
                vcs: Some(
                    s.route
                        .hops
                        .iter()
                        .map(|c| if c.vc == Vc::P { 'p' } else { 'h' })
                        .collect(),
                ),
                boundaries: Some(s.route.boundaries),
            })
        })
        .collect::<Result<Vec<_>, McsimError>>()?;
    Ok(PlanJson {
        algorithm: algorithm.to_string(),
        fabric: topo.to_string(),
        port_model: "all".to_string(),
        packets: req.packets,
        k: None,
        source: fmt(source)?,
        destinations: fmt_all(&p.destinations)?,
        steps: p.phases,
        phases: Some(p.phases),
        link_visits: Some(p.link_visits()),
        sends,
        contention: ContentionJson {
            stepwise: Some(stepwise),
            depth: None,
            link_type1: Some(type1),
            link_type2: None,
            note: Some(PATH_NOTE.to_string()),
        },
    })
}

/// The oracles of the module documentation.
fn check(utpr: &Utpr<'_>, p: &PathPlan, source: usize, dests: &[usize]) -> Result<(), McsimError> {
    let plan = p.to_plan().map_err(internal)?;
    oracle::check_responsibility(&plan, source, dests).map_err(internal)?;
    for s in &p.sends {
        let r = &s.route;
        if r.boundaries > 1 {
            return Err(internal(format!(
                "a worm from {} crosses {} boundaries",
                s.sender, r.boundaries
            )));
        }
        let mut at = s.sender;
        let mut prev = 0;
        for (&d, &h) in r.delivers.iter().zip(&r.reached_at) {
            let min = utpr.distance(at, d).map_err(internal)?;
            if h - prev != min {
                return Err(internal(format!(
                    "the segment {at} -> {d} takes {} hops, the minimum is {min}",
                    h - prev
                )));
            }
            at = d;
            prev = h;
        }
        let nodes = r.nodes(utpr);
        if nodes.iter().collect::<HashSet<_>>().len() != nodes.len() {
            return Err(internal(format!(
                "a worm from {} revisits a node",
                s.sender
            )));
        }
        if let Some(c) = r.hops.iter().find(|c| !utpr.channel_exists(c)) {
            return Err(internal(format!("{c:?} is not a UTPR channel")));
        }
    }
    Ok(())
}

/// (pairs of same-phase worms sharing a physical link, worms sharing one).
fn link_sharing(p: &PathPlan) -> (usize, usize) {
    let mut users: BTreeMap<(usize, usize, usize), Vec<usize>> = BTreeMap::new();
    for (i, s) in p.sends.iter().enumerate() {
        for c in &s.route.hops {
            users.entry((s.phase, c.node, c.dim)).or_default().push(i);
        }
    }
    super::json::sharing(&users)
}
