//! What `mcsim plan` was asked ([`PlanRequest`], [`PortChoice`]), why it
//! printed no plan ([`McsimError`]), and the node-set parsing and checks every
//! family shares.

use std::collections::HashSet;

use mcast_algorithms::topo::{TopoSpecError, Topology};
use mcast_algorithms::trees::PortModel;

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

    pub(crate) fn model(self) -> PortModel {
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

pub(crate) fn parse_direct_node(
    topo: &Topology,
    text: &str,
    what: &str,
) -> Result<usize, McsimError> {
    topo.parse_node(text).map_err(|e| match e {
        TopoSpecError::Topo(t) => input(format!(
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
