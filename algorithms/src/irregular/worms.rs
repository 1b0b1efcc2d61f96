//! Worm finding and phase scheduling [Sivaram 1998, §5.2.1; §5.2.2; §5.2.4; §5.2.4, Fig 13; §5.2.5, Figs 15–16; §5.3]: SSR worms,
//! path-based (multi-drop) worms from the Fig 13 chains, the Greedy and
//! Less-Greedy schedulers, and the single tree-based bit-string worm. Every
//! planned send is traced through the switch decisions of
//! [`SwitchNetwork`], so its `route` and `delivers` are what
//! the switches actually do.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::header::{
    BitStringHeader, HeaderError, IdForm, MultiDropHeader, PortMask, RouteHeader, SsrHeader,
};
use super::nodeset::NodeSet;
use super::poc::{find_pocs, Pocs};
use super::switch::{SwitchError, SwitchNetwork};
use super::topology::{NodeId, SwitchId};
use crate::plan::{self, Plan};
use crate::shape::Shape;

/// A multicast scheme on an irregular fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Scheme {
    /// MPM-SSR with the Greedy scheduler (`ssr-greedy`).
    #[serde(rename = "ssr-greedy")]
    SsrGreedy,
    /// MPM-SSR with the Less-Greedy scheduler (`ssr-lg`).
    #[serde(rename = "ssr-lg")]
    SsrLessGreedy,
    /// Path-based multi-drop worms, Greedy (`path-greedy`).
    #[serde(rename = "path-greedy")]
    PathGreedy,
    /// Path-based multi-drop worms, Less-Greedy (`path-lg`).
    #[serde(rename = "path-lg")]
    PathLessGreedy,
    /// One tree-based bit-string worm (`tree-worm`).
    #[serde(rename = "tree-worm")]
    TreeWorm,
}

impl Scheme {
    /// Every scheme, in the order of the issue.
    pub const ALL: [Scheme; 5] = [
        Scheme::SsrGreedy,
        Scheme::SsrLessGreedy,
        Scheme::PathGreedy,
        Scheme::PathLessGreedy,
        Scheme::TreeWorm,
    ];

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::SsrGreedy => "ssr-greedy",
            Scheme::SsrLessGreedy => "ssr-lg",
            Scheme::PathGreedy => "path-greedy",
            Scheme::PathLessGreedy => "path-lg",
            Scheme::TreeWorm => "tree-worm",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown scheme name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheme {0:?} (expected ssr-greedy, ssr-lg, path-greedy, path-lg, tree-worm)")]
pub struct UnknownScheme(pub String);

impl FromStr for Scheme {
    type Err = UnknownScheme;
    fn from_str(s: &str) -> Result<Self, UnknownScheme> {
        Scheme::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| UnknownScheme(s.to_string()))
    }
}

/// The kind of a worm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WormKind {
    /// Single-switch replication.
    Ssr,
    /// Path-based multi-drop.
    Path,
    /// Tree-based bit-string.
    Tree,
}

/// A worm before scheduling: which switches it covers and whom it delivers
/// to. Headers are source independent (§5.1), so any node holding the message
/// may send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundWorm {
    /// SSR, path or tree.
    pub kind: WormKind,
    /// The switches with destinations, in the order covered.
    pub switches: Vec<SwitchId>,
    /// The destinations, by switch in `switches` order, node id order within
    /// a switch.
    pub delivers: Vec<NodeId>,
    /// The route header.
    pub header: RouteHeader,
}

/// One worm injected by one node in one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WormPlanSend {
    /// The phase (1-based).
    pub step: usize,
    /// The injecting node.
    pub sender: NodeId,
    /// `ssr`, `path` or `tree`.
    pub worm: WormKind,
    /// The switches traversed: the whole path for SSR and path worms; the
    /// up-phase path (injection switch to turn switch) for a tree worm.
    pub route: Vec<SwitchId>,
    /// Tree worms only: every branch, injection switch to leaf switch.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<Vec<SwitchId>>,
    /// The nodes that receive this worm, in delivery order.
    pub delivers: Vec<NodeId>,
    /// The header injected.
    #[serde(skip)]
    pub header: RouteHeader,
}

/// A complete switch-assisted multicast plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WormPlan {
    /// The scheme.
    pub scheme: Scheme,
    /// The source node.
    pub source: NodeId,
    /// The destination set, sorted.
    pub destinations: Vec<NodeId>,
    /// The number of phases (steps).
    pub phases: usize,
    /// Every send, by phase, in scheduling order.
    pub sends: Vec<WormPlanSend>,
}

impl WormPlan {
    /// The number of worms sent.
    pub fn worm_count(&self) -> usize {
        self.sends.len()
    }

    /// Every route of the plan (tree worms: each branch), for the legality
    /// oracle.
    pub fn routes(&self) -> impl Iterator<Item = &[SwitchId]> + '_ {
        self.sends.iter().flat_map(|s| {
            std::iter::once(s.route.as_slice()).chain(s.branches.iter().map(Vec::as_slice))
        })
    }

    /// The plan as a [`Plan`] for [`crate::oracle`]: every delivery of a worm
    /// becomes a send from its sender, and each receiver is responsible for
    /// itself and everything it (transitively) sends to later.
    ///
    /// # Errors
    /// [`plan::PlanError::DuplicateEntry`] cannot happen for plans built here.
    pub fn to_plan(&self) -> Result<Plan, plan::PlanError> {
        let mut out: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
        for s in &self.sends {
            out.entry(s.sender).or_default().extend(&s.delivers);
        }
        // Responsibility, computed leaves-first (later steps first).
        let mut resp: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
        for s in self.sends.iter().rev() {
            for &d in &s.delivers {
                if resp.contains_key(&d) {
                    continue;
                }
                let mut r = vec![d];
                let mut stack: Vec<NodeId> = out.get(&d).cloned().unwrap_or_default();
                let mut seen = BTreeSet::from([d]);
                while let Some(x) = stack.pop() {
                    if seen.insert(x) {
                        r.push(x);
                        stack.extend(out.get(&x).into_iter().flatten());
                    }
                }
                resp.insert(d, r);
            }
        }
        let mut nodes: Vec<(NodeId, Vec<plan::PlanSend>)> = vec![(self.source, Vec::new())];
        for (&sender, targets) in &out {
            let sends = targets
                .iter()
                .map(|&t| plan::PlanSend {
                    to: t,
                    covers: resp.get(&t).cloned().unwrap_or_else(|| vec![t]),
                })
                .collect();
            if sender == self.source {
                nodes[0].1 = sends;
            } else {
                nodes.push((sender, sends));
            }
        }
        Plan::from_parts(self.source, nodes)
    }
}

/// Options of [`SwitchNetwork::plan_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOptions {
    /// The id form of SSR and multi-drop headers.
    pub form: IdForm,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            form: IdForm::Switch,
        }
    }
}

/// A multicast that cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WormPlanError {
    /// A node id out of range.
    #[error("node {0} does not exist")]
    NoSuchNode(NodeId),
    /// The source is in the destination set.
    #[error("the source {0} is in the destination set")]
    SourceIsDestination(NodeId),
    /// A header could not be built.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// A switch rejected a planned worm (a planner bug).
    #[error("sender {sender}: {error}")]
    Switch {
        /// The sender.
        sender: NodeId,
        /// The switch error.
        error: SwitchError,
    },
    /// A traced worm did not deliver what was planned (a planner bug).
    #[error("worm from {sender} delivered {got:?}, planned {planned:?}")]
    Mismatch {
        /// The sender.
        sender: NodeId,
        /// Planned deliveries (sorted).
        planned: Vec<NodeId>,
        /// Traced deliveries (sorted).
        got: Vec<NodeId>,
    },
    /// Building a chain plan failed.
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
}

/// Greedy (`less_greedy = false`) or Less-Greedy phase schedule of `worms`
/// (already in send order) from `source` [Sivaram 1998, §5.2.5, Figs 15–16]: step 1, the source
/// sends the first worm; in each later step every covered node (Greedy) or
/// one node per covered switch — the first covered there, the source for its
/// own switch (Less-Greedy) — takes the next worm, in coverage order.
/// Returns the (sender, worm index) pairs of every step.
pub fn schedule(
    fabric: &SwitchNetwork,
    worms: &[FoundWorm],
    source: NodeId,
    less_greedy: bool,
) -> Vec<Vec<(NodeId, usize)>> {
    let topo = fabric.topology();
    let mut covered = vec![source];
    let mut steps = Vec::new();
    let mut next = 0;
    while next < worms.len() {
        let senders: Vec<NodeId> = if steps.is_empty() {
            vec![source]
        } else if less_greedy {
            let mut seen = BTreeSet::new();
            covered
                .iter()
                .copied()
                .filter(|&n| seen.insert(topo.switch_of(n)))
                .collect()
        } else {
            covered.clone()
        };
        let mut step = Vec::new();
        for s in senders {
            if next == worms.len() {
                break;
            }
            step.push((s, next));
            next += 1;
        }
        for &(_, w) in &step {
            covered.extend(&worms[w].delivers);
        }
        steps.push(step);
    }
    steps
}

impl SwitchNetwork {
    fn normalize(&self, source: NodeId, dests: &[NodeId]) -> Result<Vec<NodeId>, WormPlanError> {
        let n = self.topology().node_count();
        if source >= n {
            return Err(WormPlanError::NoSuchNode(source));
        }
        let mut d = dests.to_vec();
        d.sort_unstable();
        d.dedup();
        if let Some(&bad) = d.iter().find(|&&x| x >= n) {
            return Err(WormPlanError::NoSuchNode(bad));
        }
        if d.binary_search(&source).is_ok() {
            return Err(WormPlanError::SourceIsDestination(source));
        }
        Ok(d)
    }

    /// The Fig 13 chains for `source` and `dests`.
    ///
    /// # Errors
    /// Unknown nodes, or the source among the destinations.
    pub fn pocs(&self, source: NodeId, dests: &[NodeId]) -> Result<Pocs, WormPlanError> {
        let d = self.normalize(source, dests)?;
        Ok(find_pocs(self.topology(), self.updown(), source, &d))
    }

    /// Destinations grouped by switch, node ids ascending.
    fn by_switch(&self, dests: &[NodeId]) -> BTreeMap<SwitchId, Vec<NodeId>> {
        let mut m: BTreeMap<SwitchId, Vec<NodeId>> = BTreeMap::new();
        for &d in dests {
            if let Some(s) = self.topology().switch_of(d) {
                m.entry(s).or_default().push(d);
            }
        }
        m
    }

    fn pair(
        &self,
        form: IdForm,
        switch: SwitchId,
        nodes: &[NodeId],
    ) -> Result<(u32, PortMask), HeaderError> {
        let topo = self.topology();
        let id = match form {
            IdForm::Switch => switch,
            IdForm::Node => nodes[0],
        };
        let id = u32::try_from(id).map_err(|_| HeaderError::TooLarge("id"))?;
        let mask = PortMask::from_ports(
            topo.ports_per_switch(),
            nodes
                .iter()
                .filter_map(|&n| topo.host_location(n).map(|l| l.1)),
        )?;
        Ok((id, mask))
    }

    /// The SSR worms, one per switch holding destinations, in the flattened
    /// Fig 13 chain order (unsorted).
    ///
    /// # Errors
    /// Unknown nodes, the source among the destinations, or a header error.
    pub fn ssr_worms(
        &self,
        source: NodeId,
        dests: &[NodeId],
        form: IdForm,
    ) -> Result<Vec<FoundWorm>, WormPlanError> {
        let d = self.normalize(source, dests)?;
        let groups = self.by_switch(&d);
        let pocs = find_pocs(self.topology(), self.updown(), source, &d);
        let mut worms = Vec::new();
        for &s in pocs.chains.iter().flatten() {
            if let Some(nodes) = groups.get(&s) {
                let (id, ports) = self.pair(form, s, nodes)?;
                worms.push(FoundWorm {
                    kind: WormKind::Ssr,
                    switches: vec![s],
                    delivers: nodes.clone(),
                    header: RouteHeader::Ssr(SsrHeader {
                        form,
                        multidest: true,
                        id,
                        ports,
                    }),
                });
            }
        }
        Ok(worms)
    }

    /// The path-based worms, one per Fig 13 chain holding destinations, in
    /// stripping order (unsorted); switches without destinations (e.g. the
    /// source's, if it holds no other participant) are left out of headers.
    ///
    /// # Errors
    /// As [`SwitchNetwork::ssr_worms`].
    pub fn path_worms(
        &self,
        source: NodeId,
        dests: &[NodeId],
        form: IdForm,
    ) -> Result<Vec<FoundWorm>, WormPlanError> {
        let d = self.normalize(source, dests)?;
        let groups = self.by_switch(&d);
        let pocs = find_pocs(self.topology(), self.updown(), source, &d);
        let mut worms = Vec::new();
        for chain in &pocs.chains {
            let mut pairs = Vec::new();
            let mut switches = Vec::new();
            let mut delivers = Vec::new();
            for &s in chain {
                if let Some(nodes) = groups.get(&s) {
                    pairs.push(self.pair(form, s, nodes)?);
                    switches.push(s);
                    delivers.extend(nodes);
                }
            }
            if pairs.is_empty() {
                continue;
            }
            worms.push(FoundWorm {
                kind: WormKind::Path,
                switches,
                delivers,
                header: RouteHeader::MultiDrop(MultiDropHeader::new(form, pairs)?),
            });
        }
        Ok(worms)
    }

    /// The single tree worm covering `dests`.
    ///
    /// # Errors
    /// As [`SwitchNetwork::ssr_worms`].
    pub fn tree_worm(&self, source: NodeId, dests: &[NodeId]) -> Result<FoundWorm, WormPlanError> {
        let d = self.normalize(source, dests)?;
        let groups = self.by_switch(&d);
        let set = NodeSet::from_nodes(self.topology().node_count(), d.iter().copied());
        Ok(FoundWorm {
            kind: WormKind::Tree,
            switches: groups.keys().copied().collect(),
            delivers: groups.values().flatten().copied().collect(),
            header: RouteHeader::BitString(BitStringHeader::new(true, set)?),
        })
    }

    /// Plan a multicast with default options (switch-id headers).
    ///
    /// # Errors
    /// Any [`WormPlanError`].
    pub fn plan(
        &self,
        scheme: Scheme,
        source: NodeId,
        dests: &[NodeId],
    ) -> Result<WormPlan, WormPlanError> {
        self.plan_with(scheme, source, dests, PlanOptions::default())
    }

    /// Plan a multicast: find the worms, sort them by decreasing number of
    /// destinations (stable), schedule them, and trace every send.
    ///
    /// # Errors
    /// Any [`WormPlanError`].
    pub fn plan_with(
        &self,
        scheme: Scheme,
        source: NodeId,
        dests: &[NodeId],
        opts: PlanOptions,
    ) -> Result<WormPlan, WormPlanError> {
        let d = self.normalize(source, dests)?;
        let (mut worms, lg) = match scheme {
            Scheme::SsrGreedy => (self.ssr_worms(source, &d, opts.form)?, false),
            Scheme::SsrLessGreedy => (self.ssr_worms(source, &d, opts.form)?, true),
            Scheme::PathGreedy => (self.path_worms(source, &d, opts.form)?, false),
            Scheme::PathLessGreedy => (self.path_worms(source, &d, opts.form)?, true),
            Scheme::TreeWorm => {
                if d.is_empty() {
                    (Vec::new(), false)
                } else {
                    (vec![self.tree_worm(source, &d)?], false)
                }
            }
        };
        worms.sort_by_key(|w| std::cmp::Reverse(w.delivers.len()));
        let steps = schedule(self, &worms, source, lg);
        let mut sends = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            for &(sender, w) in step {
                let worm = &worms[w];
                let t = self
                    .trace(sender, &worm.header)
                    .map_err(|error| WormPlanError::Switch { sender, error })?;
                let mut got = t.delivered.clone();
                got.sort_unstable();
                let mut planned = worm.delivers.clone();
                planned.sort_unstable();
                if got != planned {
                    return Err(WormPlanError::Mismatch {
                        sender,
                        planned,
                        got,
                    });
                }
                let (route, branches) = match worm.kind {
                    WormKind::Tree => (t.up_path, t.branches),
                    _ => (
                        t.branches.into_iter().next().unwrap_or_default(),
                        Vec::new(),
                    ),
                };
                sends.push(WormPlanSend {
                    step: i + 1,
                    sender,
                    worm: worm.kind,
                    route,
                    branches,
                    delivers: t.delivered,
                    header: worm.header.clone(),
                });
            }
        }
        Ok(WormPlan {
            scheme,
            source,
            destinations: d,
            phases: steps.len(),
            sends,
        })
    }

    /// The paper's host ordering for NI-based trees on this fabric
    /// ([Sivaram 1998, §4.3.4], our choice): the source, then the participants in Fig 13 chain-stripping
    /// order, each chain's switches in order and each switch's nodes in id
    /// order.
    ///
    /// # Errors
    /// Unknown nodes, or the source among the destinations.
    pub fn host_chain(
        &self,
        source: NodeId,
        dests: &[NodeId],
    ) -> Result<Vec<NodeId>, WormPlanError> {
        let d = self.normalize(source, dests)?;
        let groups = self.by_switch(&d);
        let pocs = find_pocs(self.topology(), self.updown(), source, &d);
        let mut chain = vec![source];
        for s in pocs.chains.iter().flatten() {
            if let Some(nodes) = groups.get(s) {
                chain.extend(nodes);
            }
        }
        Ok(chain)
    }

    /// A binomial / k-binomial / flat plan ([`Plan::from_chain`]) over
    /// [`SwitchNetwork::host_chain`].
    ///
    /// # Errors
    /// As [`SwitchNetwork::host_chain`], or an invalid shape.
    pub fn chain_plan(
        &self,
        source: NodeId,
        dests: &[NodeId],
        shape: Shape,
    ) -> Result<Plan, WormPlanError> {
        let chain = self.host_chain(source, dests)?;
        Ok(Plan::from_chain(&chain, shape)?)
    }
}
