//! `mcsim plan` for the unicast-tree planners on direct networks (tori,
//! meshes, hypercubes; [`mcast_algorithms::trees`]), checked by the delivery,
//! step and contention oracles of [`mcast_algorithms::contention`].

use mcast_algorithms::contention;
use mcast_algorithms::topo::Topology;
use mcast_algorithms::trees::{self, Options, PlannerError, TreeAlgorithm};
use mcast_algorithms::{ceil_log2, optimal_k};

use super::json::{ContentionJson, Node, PlanJson, Receivers, SendJson};
use super::request::{direct_nodes, input, internal, McsimError, PlanRequest};

/// A unicast-tree planner of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TreeChoice {
    /// A direct-network planner (`kbinomial` without k takes the optimal k
    /// of Theorem 3 for the message length).
    Tree(TreeAlgorithm),
    /// The binomial tree (k = ⌈log2 m⌉).
    Binomial,
}

/// Plan, check and shape a unicast tree; `algorithm` is the name printed.
pub(crate) fn plan_direct(
    req: &PlanRequest<'_>,
    topo: &Topology,
    choice: TreeChoice,
    algorithm: String,
) -> Result<PlanJson, McsimError> {
    let (source, dests) = direct_nodes(req, topo)?;
    let m_nodes = dests.len() + 1;
    let (planner, k) = match choice {
        TreeChoice::Binomial => {
            let k = ceil_log2(m_nodes).max(1);
            (TreeAlgorithm::KBinomial { k: Some(k) }, Some(k))
        }
        TreeChoice::Tree(TreeAlgorithm::KBinomial { k }) => {
            let k = k.unwrap_or_else(|| optimal_k(m_nodes, req.packets));
            (TreeAlgorithm::KBinomial { k: Some(k) }, Some(k))
        }
        TreeChoice::Tree(a) => (a, None),
    };
    let options = Options {
        port_model: req.port_model.model(),
        packets: req.packets,
    };
    let m = trees::plan(topo, planner, source, &dests, options).map_err(|e| match e {
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
        algorithm,
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
