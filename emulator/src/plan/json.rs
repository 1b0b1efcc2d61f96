//! The JSON that `mcsim plan` prints: [`PlanJson`] and its parts (see the
//! [`plan`](super) module for the format), and the link-sharing count the
//! families' `contention` fields share.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

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
