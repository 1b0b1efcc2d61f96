//! The traffic manager of a load run: one generator per traffic scheme
//! (uniform unicast; `multicast:D` carried as one bit-string tree worm, one
//! path worm through the H-cycle, or D unicast copies), each turning a
//! generation at a host into destinations and packet headers.

use std::sync::Arc;

use mcast_algorithms::irregular::{BitStringHeader, NodeSet, RouteHeader, SplitMix64};
use mcast_algorithms::path::{PathWorm, Utpr};

use crate::sim::spec::SimFabric;
use crate::sim::{unicast, SimulatorError};
use crate::switch::routing::PathHeader;
use crate::switch::SwitchHeader;

/// The traffic pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    /// Uniform random unicast (destination ≠ source).
    Uniform,
    /// Multicast to D random destinations.
    Multicast(usize),
}

impl std::str::FromStr for Traffic {
    type Err = SimulatorError;
    fn from_str(s: &str) -> Result<Traffic, SimulatorError> {
        let t = s.trim();
        if t == "uniform" {
            return Ok(Traffic::Uniform);
        }
        if let Some(d) = t.strip_prefix("multicast:") {
            if let Ok(d) = d.parse::<usize>() {
                if d >= 1 {
                    return Ok(Traffic::Multicast(d));
                }
            }
        }
        Err(SimulatorError::Input(format!(
            "bad traffic `{t}` (expected uniform or multicast:D with D >= 1)"
        )))
    }
}

/// The destinations of one generated packet.
pub(super) enum Dests {
    /// A unicast's destination.
    One(usize),
    /// A multicast's destinations, in the order drawn.
    Many(Vec<usize>),
}

/// How the fabric carries a multicast.
enum Carrier<'a> {
    /// One bit-string tree worm, replicated by the switches (irregular
    /// fabrics).
    TreeWorm,
    /// One path worm through the H-cycle, with intermediate reception
    /// (unidirectional tori with one radix).
    PathWorm(Utpr<'a>),
    /// D unicast copies from the source NI (elsewhere).
    Copies,
}

/// The generator of one traffic scheme.
enum Scheme<'a> {
    Uniform,
    Multicast { d: usize, carrier: Carrier<'a> },
}

/// The traffic manager: draws each packet's destinations from the run's RNG
/// and builds its headers.
pub(super) struct Generator<'a> {
    n: usize,
    scheme: Scheme<'a>,
    /// Scratch: the hosts other than the source.
    others: Vec<usize>,
}

impl<'a> Generator<'a> {
    /// The generator of `traffic` on `fabric` (of `n` ≥ 2 hosts).
    ///
    /// # Errors
    /// [`SimulatorError::Input`] when `multicast:D` needs more hosts than there are.
    pub(super) fn new(
        traffic: Traffic,
        fabric: &'a SimFabric,
        n: usize,
    ) -> Result<Self, SimulatorError> {
        let scheme = match traffic {
            Traffic::Uniform => Scheme::Uniform,
            Traffic::Multicast(d) => {
                if d > n - 1 {
                    return Err(SimulatorError::Input(format!(
                        "multicast:{d} needs {d} destinations besides the source; the fabric \
                         has {n} hosts"
                    )));
                }
                let carrier = match fabric {
                    SimFabric::Irregular(_) => Carrier::TreeWorm,
                    // Path worms need a unidirectional torus with one radix
                    // (UTPR).
                    SimFabric::Direct(dr) => match Utpr::new(dr.topology()) {
                        Ok(utpr) if dr.topology().nodes() <= usize::from(u16::MAX) => {
                            Carrier::PathWorm(utpr)
                        }
                        _ => Carrier::Copies,
                    },
                    _ => Carrier::Copies,
                };
                Scheme::Multicast { d, carrier }
            }
        };
        Ok(Generator {
            n,
            scheme,
            others: Vec::new(),
        })
    }

    /// One packet generated at `node`: its destinations and the headers to
    /// inject, in injection order.
    ///
    /// # Errors
    /// [`SimulatorError::Internal`] when a header cannot be built.
    pub(super) fn generate(
        &mut self,
        rng: &mut SplitMix64,
        node: usize,
    ) -> Result<(Dests, Vec<SwitchHeader>), SimulatorError> {
        let n = self.n;
        match &self.scheme {
            Scheme::Uniform => {
                let mut d = rng.below(n - 1);
                if d >= node {
                    d += 1;
                }
                Ok((Dests::One(d), vec![unicast(d)]))
            }
            Scheme::Multicast { d, carrier } => {
                self.others.clear();
                self.others.extend((0..n).filter(|&x| x != node));
                let dests = rng.sample(&self.others, *d);
                let headers = match carrier {
                    Carrier::TreeWorm => {
                        let set = NodeSet::from_nodes(n, dests.iter().copied());
                        let h = BitStringHeader::new(true, set)
                            .map_err(|e| SimulatorError::Internal(e.to_string()))?;
                        vec![SwitchHeader::Irregular(Box::new(RouteHeader::BitString(h)))]
                    }
                    Carrier::PathWorm(utpr) => {
                        let w = PathWorm::prepare(utpr, node, &dests)
                            .map_err(|e| SimulatorError::Internal(e.to_string()))?;
                        let list: Arc<[u32]> = w.dests.iter().map(|&d| d as u32).collect();
                        vec![SwitchHeader::Path(Box::new(PathHeader {
                            dests: list,
                            pos: 0,
                            on_h: false,
                        }))]
                    }
                    Carrier::Copies => dests.iter().map(|&d| unicast(d)).collect(),
                };
                Ok((Dests::Many(dests), headers))
            }
        }
    }
}
