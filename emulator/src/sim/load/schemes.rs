//! The multicast schemes of a load run with hosts and NIs
//! ([`super::hosts`]): how each generated message becomes steps of worms
//! (and relays), or a tree the NIs forward on.
//!
//! * **Worm schemes on irregular fabrics** (`tree-worm`, `path-greedy`,
//!   `path-lg`, `ssr-greedy`, `ssr-lg`): the plan of
//!   [`mcast_algorithms::irregular::SwitchNetwork::plan`]; every worm is a
//!   step of its own (its sender's host pays t_hs per worm, as in a single
//!   run [Sivaram 1998, §6.4.1]).
//! * **NI-based trees** (`ni:<shape>`, e.g. `ni:kbinomial`, `ni:binomial`,
//!   `ni:auto`): the chain tree of the runtime's planner over the paper's
//!   host ordering (irregular) or the destinations by id; every NI forwards
//!   each packet to its children as it arrives (FPFS) [Sivaram 1998, §4].
//! * **Mesh path schemes** (`dp`, `mp`, `cp`, `qg[:TD]`) [Al-Dubai 2009]: the
//!   plan of [`mcast_algorithms::mesh::plan`]; the worms of one sender in
//!   one phase are one step (one start-up, all-port). Dual-path, multipath
//!   and QG worms are routed by Lin, McKinley and Ni's label-monotone R
//!   (deadlock-free without virtual channels; multipath's worms first take
//!   their planned, distinct, first channels, which R allows); column-path
//!   worms keep their
//!   dimension-ordered route (one turn, XY-conformed). The paper says its
//!   simulator routed by dimension order; leg-by-leg XY worms are not
//!   XY-conformed and deadlock under wormhole with one-flit buffers, so R
//!   is the reading taken (in 2-D it gives the same hop counts).

use std::collections::HashMap;

use mcast::algorithm::{Algorithm, TreeKind};
use mcast_algorithms::irregular::{Scheme, SwitchNetwork};
use mcast_algorithms::mesh::{self, Mesh, MeshAlgorithm, MeshCost};
use mcast_algorithms::Plan;

use crate::sim::spec::SimFabric;
use crate::sim::{unicast, SimulatorError};
use crate::switch::routing::SourceRoute;
use crate::switch::SwitchHeader;

/// A multicast scheme under load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadScheme {
    /// Worms planned on an irregular fabric.
    Worms(Scheme),
    /// NI-based trees, forwarded FPFS by the NIs.
    Ni(Algorithm),
    /// A mesh path-based scheme.
    Mesh(MeshAlgorithm),
}

impl std::str::FromStr for LoadScheme {
    type Err = SimulatorError;
    fn from_str(s: &str) -> Result<LoadScheme, SimulatorError> {
        let t = s.trim();
        if let Some(a) = t.strip_prefix("ni:") {
            return a
                .parse::<Algorithm>()
                .map(LoadScheme::Ni)
                .map_err(|e| SimulatorError::Input(format!("bad scheme `{t}`: {e}")));
        }
        if let Ok(m) = t.parse::<MeshAlgorithm>() {
            return Ok(LoadScheme::Mesh(m));
        }
        t.parse::<Scheme>().map(LoadScheme::Worms).map_err(|_| {
            SimulatorError::Input(format!(
                "bad scheme `{t}` (tree-worm, path-greedy, path-lg, ssr-greedy, ssr-lg, \
                 ni:<tree> such as ni:kbinomial, or on meshes dp, mp, cp, qg, qg:TD)"
            ))
        })
    }
}

impl LoadScheme {
    /// The preparation time the source's host spends before a multicast's
    /// first step: the paper's for the mesh schemes [Al-Dubai 2009, §4.1]
    /// (DP 2, MP 2, CP 4, QG 16 cycles), none otherwise.
    pub fn default_prep(&self) -> u64 {
        match self {
            LoadScheme::Mesh(a) => MeshCost::paper(0.0).prep_for(*a) as u64,
            _ => 0,
        }
    }
}

/// One step: a sender's host pays one start-up (t_hs), then posts every
/// worm in turn.
#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) phase: usize,
    pub(super) worms: Vec<SwitchHeader>,
}

/// What a generated message needs.
pub(super) enum Carry {
    /// Steps by sender: the source's start at generation, the others' once
    /// their host has the whole message.
    Steps(HashMap<usize, Vec<Step>>),
    /// A tree the NIs forward on.
    Tree(Plan),
}

/// The planner of one run.
pub(super) struct Planner<'a> {
    scheme: LoadScheme,
    fabric: &'a SimFabric,
    mesh: Option<Mesh>,
    packets: usize,
}

impl<'a> Planner<'a> {
    /// The planner of `scheme` on `fabric`.
    ///
    /// # Errors
    /// [`SimulatorError::Input`] when the scheme does not run on the fabric.
    pub(super) fn new(
        scheme: LoadScheme,
        fabric: &'a SimFabric,
        packets: usize,
    ) -> Result<Self, SimulatorError> {
        let mut mesh = None;
        match scheme {
            LoadScheme::Worms(s) if !matches!(fabric, SimFabric::Irregular(_)) => {
                return Err(SimulatorError::Input(format!(
                    "{} is a switch-based worm scheme; it needs an irregular fabric",
                    s.name()
                )))
            }
            LoadScheme::Mesh(a) => {
                let topo = fabric.topology().ok_or_else(|| {
                    SimulatorError::Input(format!("{} needs a mesh fabric", a.name()))
                })?;
                mesh = Some(
                    Mesh::from_topology(topo)
                        .map_err(|e| SimulatorError::Input(format!("{}: {e}", a.name())))?,
                );
            }
            _ => {}
        }
        Ok(Planner {
            scheme,
            fabric,
            mesh,
            packets,
        })
    }

    fn irregular(&self) -> Option<&SwitchNetwork> {
        match self.fabric {
            SimFabric::Irregular(irr) => Some(irr.fabric()),
            _ => None,
        }
    }

    /// A unicast from `source` to `dest`: its one step.
    pub(super) fn unicast(&self, source: usize, dest: usize) -> Result<Carry, SimulatorError> {
        let header = match (&self.mesh, self.scheme) {
            // Unicasts take the multicast worms' routing function (mixing
            // two would close channel cycles): R, or XY beside column-path
            // (the switches' own mesh routing corrects the highest
            // dimension first).
            (Some(m), LoadScheme::Mesh(MeshAlgorithm::ColumnPath)) => {
                let route = m
                    .route(source, dest)
                    .map_err(|e| SimulatorError::Internal(e.to_string()))?;
                let topo = self
                    .fabric
                    .topology()
                    .ok_or_else(|| SimulatorError::Internal("no topology".into()))?;
                SwitchHeader::Source(Box::new(
                    SourceRoute::through(topo, &route, &[route.len() - 1])
                        .map_err(|e| SimulatorError::Internal(e.to_string()))?,
                ))
            }
            (Some(m), LoadScheme::Mesh(_)) => self.label_worm(m, source, None, &[dest])?,
            _ => unicast(dest),
        };
        Ok(Carry::Steps(HashMap::from([(
            source,
            vec![Step {
                phase: 1,
                worms: vec![header],
            }],
        )])))
    }

    /// A multicast from `source` to `dests`.
    pub(super) fn multicast(
        &self,
        source: usize,
        dests: &[usize],
    ) -> Result<Carry, SimulatorError> {
        let int = |e: &dyn std::fmt::Display| SimulatorError::Internal(e.to_string());
        match self.scheme {
            LoadScheme::Worms(s) => {
                let net = self.irregular().ok_or_else(|| int(&"not irregular"))?;
                let plan = net.plan(s, source, dests).map_err(|e| int(&e))?;
                let mut steps: HashMap<usize, Vec<Step>> = HashMap::new();
                for w in plan.sends {
                    steps.entry(w.sender).or_default().push(Step {
                        phase: w.step,
                        worms: vec![SwitchHeader::Irregular(Box::new(w.header))],
                    });
                }
                for v in steps.values_mut() {
                    v.sort_by_key(|s| s.phase);
                }
                Ok(Carry::Steps(steps))
            }
            LoadScheme::Ni(a) => {
                let mut chain = match self.irregular() {
                    Some(net) => net.host_chain(source, dests).map_err(|e| int(&e))?,
                    None => {
                        let mut c = vec![source];
                        c.extend_from_slice(dests);
                        c
                    }
                };
                if chain.first() != Some(&source) {
                    chain.insert(0, source);
                }
                let shape = match a
                    .resolve(chain.len(), self.packets, None)
                    .map_err(|e| SimulatorError::Input(e.to_string()))?
                {
                    TreeKind::Chain(shape) => shape,
                    other => {
                        return Err(SimulatorError::Input(format!(
                            "ni:{a}: {other:?} is not a chain tree; under load the NI-based \
                             schemes use chain shapes (binomial, kbinomial, chain, flat)"
                        )))
                    }
                };
                Plan::from_chain(&chain, shape)
                    .map(Carry::Tree)
                    .map_err(|e| int(&e))
            }
            LoadScheme::Mesh(a) => {
                let m = self.mesh.as_ref().ok_or_else(|| int(&"not a mesh"))?;
                let plan = mesh::plan(m, a, source, dests).map_err(|e| int(&e))?;
                let mut steps: HashMap<usize, Vec<Step>> = HashMap::new();
                for s in &plan.sends {
                    let header = if a == MeshAlgorithm::ColumnPath {
                        let topo = self.fabric.topology().ok_or_else(|| int(&"no topology"))?;
                        SwitchHeader::Source(Box::new(
                            SourceRoute::through(topo, &s.route, &s.delivery_hops)
                                .map_err(|e| int(&e))?,
                        ))
                    } else {
                        // Multipath's forced first hop (distinct channels
                        // out of the source), when R allows it.
                        let first = (a == MeshAlgorithm::MultiPath)
                            .then(|| s.route.get(1).copied())
                            .flatten()
                            .filter(|&f| monotone(m, s.from, f, &s.delivers));
                        self.label_worm(m, s.from, first, &s.delivers)?
                    };
                    let v = steps.entry(s.from).or_default();
                    match v.iter_mut().find(|st| st.phase == s.phase) {
                        Some(st) => st.worms.push(header),
                        None => v.push(Step {
                            phase: s.phase,
                            worms: vec![header],
                        }),
                    }
                }
                for v in steps.values_mut() {
                    v.sort_by_key(|s| s.phase);
                }
                Ok(Carry::Steps(steps))
            }
        }
    }

    /// A worm from `from` through `dests` (label-monotone), routed by R,
    /// through `first` first if given.
    fn label_worm(
        &self,
        m: &Mesh,
        from: usize,
        first: Option<usize>,
        dests: &[usize],
    ) -> Result<SwitchHeader, SimulatorError> {
        let topo = self
            .fabric
            .topology()
            .ok_or_else(|| SimulatorError::Internal("no topology".into()))?;
        let mut route = vec![from];
        route.extend(first);
        let mut at = Vec::with_capacity(dests.len());
        for &d in dests {
            let cur = *route.last().unwrap_or(&from);
            m.label_route_into(cur, d, &mut route);
            if route.last() != Some(&d) {
                return Err(SimulatorError::Internal(format!(
                    "no label route from {cur} to {d}"
                )));
            }
            at.push(route.len() - 1);
        }
        SourceRoute::through(topo, &route, &at)
            .map(|r| SwitchHeader::Source(Box::new(r)))
            .map_err(|e| SimulatorError::Internal(e.to_string()))
    }
}

/// Whether the hop `from` → `first` moves the label towards the first of
/// `dests` without passing it (so R can go on from there).
fn monotone(m: &Mesh, from: usize, first: usize, dests: &[usize]) -> bool {
    let Some(&d) = dests.first() else {
        return false;
    };
    let (lf, l1, ld) = (m.label(from), m.label(first), m.label(d));
    (ld > lf && l1 > lf && l1 <= ld) || (ld < lf && l1 < lf && l1 >= ld)
}
