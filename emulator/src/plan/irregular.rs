//! `mcsim plan` on generated irregular networks
//! ([`mcast_algorithms::irregular`]): the switch-based worm schemes
//! (`ssr-*`, `path-*`, `tree-worm`) and the unicast chains (`binomial`,
//! `kbinomial[:k]`, `separate`) over up*/down* routes, every route checked by
//! the legality oracle.

use std::collections::{BTreeMap, HashMap, VecDeque};

use mcast_algorithms::irregular::{
    IrregularSpec, RouteHeader, Scheme, SwitchNetwork, UnicastHeader, WormKind,
};
use mcast_algorithms::oracle;
use mcast_algorithms::plan::Plan;
use mcast_algorithms::{ceil_log2, optimal_k, Shape};

use super::json::{sharing, ContentionJson, Node, PlanJson, Receivers, SendJson};
use super::request::{check_set, dest_items, input, internal, McsimError, PlanRequest, PortChoice};

// ------------------------------------------------------------- irregular

const IRREGULAR_NOTE: &str = "irregular fabric: stepwise = pairs of same-step sends \
    traversing the same inter-switch link in the same direction (parallel links counted \
    as one); link_type1 = sends sharing such a link with another send of their step; \
    depth and link_type2 are defined for direct networks only";

fn parse_host(fabric: &SwitchNetwork, text: &str, what: &str) -> Result<usize, McsimError> {
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

/// A planner of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IrregularChoice {
    /// A switch-based worm scheme.
    Worm(Scheme),
    /// The binomial unicast chain (k = ⌈log2 m⌉).
    Binomial,
    /// The k-binomial unicast chain (no k: the optimal one of Theorem 3).
    KBinomial(Option<usize>),
    /// Separate addressing (a flat chain).
    Separate,
}

/// The source and destinations of a request (host ids, distinct, the source
/// not among the destinations); irregular fabrics are one-port only.
pub(crate) fn hosts(
    req: &PlanRequest<'_>,
    fabric: &SwitchNetwork,
) -> Result<(usize, Vec<usize>), McsimError> {
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
    Ok((source, dests))
}

/// Plan, check and shape one multicast; `algorithm` is the name printed.
pub(crate) fn plan_irregular(
    req: &PlanRequest<'_>,
    spec: &IrregularSpec,
    fabric: &SwitchNetwork,
    source: usize,
    dests: &[usize],
    choice: IrregularChoice,
    algorithm: String,
) -> Result<PlanJson, McsimError> {
    let m_nodes = dests.len() + 1;
    let (raw, k) = match choice {
        IrregularChoice::Worm(scheme) => (worm_sends(fabric, scheme, source, dests)?, None),
        IrregularChoice::Binomial => {
            let k = ceil_log2(m_nodes).max(1);
            let shape = Shape::KBinomial { k };
            (chain_sends(fabric, shape, source, dests)?, Some(k))
        }
        IrregularChoice::KBinomial(k) => {
            let k = k.unwrap_or_else(|| optimal_k(m_nodes, req.packets));
            let shape = Shape::KBinomial { k };
            (chain_sends(fabric, shape, source, dests)?, Some(k))
        }
        IrregularChoice::Separate => (chain_sends(fabric, Shape::Flat, source, dests)?, None),
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
    let mut sorted_dests = dests.to_vec();
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
        algorithm,
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
        .map(|s| (s.to, s.covers.as_slice()))
        .collect()
}

fn worm_sends(
    fabric: &SwitchNetwork,
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
    fabric: &SwitchNetwork,
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
                covers: s.covers.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
