//! The random irregular-topology generator of [Sivaram 1998, §6.3] and the
//! `irregular:` fabric spec string.
//!
//! Generation, per attempt (reconstructed from [Sivaram 1998, §6.3]):
//! 1. choose `nodes` of the `switches·ports` ports uniformly for hosts
//!    (hosts are numbered in (switch, port) order);
//! 2. of the `F = switches·ports − nodes` free ports, choose
//!    `L = round(connectivity·F)` rounded down to an even number;
//! 3. pair those ports into links uniformly at random, never pairing two ports
//!    of one switch (a shuffle with retries); parallel links are allowed;
//! 4. accept the draw if the switch graph is connected, else draw again.
//!
//! All randomness comes from one [`SplitMix64`] seeded with `seed`, so a spec
//! names exactly one topology.

use std::fmt;
use std::str::FromStr;

use super::rng::SplitMix64;
use super::topology::{
    PortId, SwitchId, SwitchTopology, SwitchTopologyBuilder, SwitchTopologyError, MAX_PORTS,
    MAX_SWITCHES,
};

/// Draws before [`GenError::GaveUp`].
pub const MAX_ATTEMPTS: usize = 2000;

/// Parameters of a generated irregular network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IrregularSpec {
    /// Number of switches (s).
    pub switches: usize,
    /// Ports per switch (k).
    pub ports: usize,
    /// Number of nodes (p).
    pub nodes: usize,
    /// Fraction of non-host ports that carry links (c, in 0..=1).
    pub connectivity: f64,
    /// PRNG seed.
    pub seed: u64,
    /// The up*/down* root; `None` = lowest switch id.
    pub root: Option<SwitchId>,
}

impl Default for IrregularSpec {
    /// The paper's default network: 32 nodes on eight 8-port switches, 80%
    /// connectivity; seed 0.
    fn default() -> Self {
        IrregularSpec {
            switches: 8,
            ports: 8,
            nodes: 32,
            connectivity: 0.8,
            seed: 0,
            root: None,
        }
    }
}

/// A generation failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GenError {
    /// Switch or port count out of range.
    #[error(transparent)]
    SwitchTopology(#[from] SwitchTopologyError),
    /// More nodes than ports.
    #[error("{nodes} nodes do not fit on {ports} ports")]
    TooManyNodes {
        /// Requested nodes.
        nodes: usize,
        /// Total ports.
        ports: usize,
    },
    /// Connectivity not a number in 0..=1.
    #[error("connectivity {0} is not in 0..=1")]
    Connectivity(f64),
    /// Too few link ports to connect the switches (fewer than s−1 links).
    #[error("{links} links cannot connect {switches} switches")]
    TooFewLinks {
        /// Links the parameters allow.
        links: usize,
        /// Switches to connect.
        switches: usize,
    },
    /// No connected draw within [`MAX_ATTEMPTS`].
    #[error("no connected topology in {0} draws")]
    GaveUp(usize),
    /// The root is not a switch.
    #[error("root {root} is not one of the {switches} switches")]
    NoSuchRoot {
        /// The requested root.
        root: SwitchId,
        /// The switch count.
        switches: usize,
    },
}

impl IrregularSpec {
    /// Check the parameters without generating.
    ///
    /// # Errors
    /// The first parameter problem found.
    pub fn validate(&self) -> Result<(), GenError> {
        if self.switches == 0 || self.switches > MAX_SWITCHES {
            return Err(SwitchTopologyError::SwitchCount(self.switches).into());
        }
        if self.ports == 0 || self.ports > MAX_PORTS {
            return Err(SwitchTopologyError::PortCount(self.ports).into());
        }
        let total = self.switches * self.ports;
        if self.nodes > total {
            return Err(GenError::TooManyNodes {
                nodes: self.nodes,
                ports: total,
            });
        }
        if !(0.0..=1.0).contains(&self.connectivity) {
            return Err(GenError::Connectivity(self.connectivity));
        }
        if let Some(root) = self.root {
            if root >= self.switches {
                return Err(GenError::NoSuchRoot {
                    root,
                    switches: self.switches,
                });
            }
        }
        let links = self.link_ports() / 2;
        if links + 1 < self.switches {
            return Err(GenError::TooFewLinks {
                links,
                switches: self.switches,
            });
        }
        Ok(())
    }

    /// The number of ports that carry links: round(c·(s·k − p)), made even.
    pub fn link_ports(&self) -> usize {
        let free = (self.switches * self.ports).saturating_sub(self.nodes);
        let l = (self.connectivity * free as f64).round() as usize;
        l.min(free) & !1
    }

    /// Generate the topology (deterministic per spec).
    ///
    /// # Errors
    /// Invalid parameters, or [`GenError::GaveUp`].
    pub fn generate(&self) -> Result<SwitchTopology, GenError> {
        self.validate()?;
        let (s, k) = (self.switches, self.ports);
        let all: Vec<(SwitchId, PortId)> =
            (0..s).flat_map(|w| (0..k).map(move |p| (w, p))).collect();
        let nlink = self.link_ports();
        let mut rng = SplitMix64::new(self.seed);
        for _ in 0..MAX_ATTEMPTS {
            let mut order = all.clone();
            rng.shuffle(&mut order);
            let mut hosts = order[..self.nodes].to_vec();
            hosts.sort_unstable();
            let free = &order[self.nodes..self.nodes + nlink];
            let Some(pairs) = pair_ports(&mut rng, free) else {
                continue;
            };
            let mut b = SwitchTopologyBuilder::new(s, k)?;
            for &(w, p) in &hosts {
                b.host_at(w, p)?;
            }
            for ((a, pa), (c, pc)) in pairs {
                b.link_at(a, pa, c, pc)?;
            }
            match b.build() {
                Ok(t) => return Ok(t),
                Err(SwitchTopologyError::Disconnected) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(GenError::GaveUp(MAX_ATTEMPTS))
    }
}

type PortRef = (SwitchId, PortId);

/// Pair `ports` randomly so no pair joins two ports of one switch; `None` if
/// a few shuffles do not find such a pairing.
fn pair_ports(rng: &mut SplitMix64, ports: &[PortRef]) -> Option<Vec<(PortRef, PortRef)>> {
    'retry: for _ in 0..32 {
        let mut pool = ports.to_vec();
        rng.shuffle(&mut pool);
        let mut pairs = Vec::with_capacity(pool.len() / 2);
        while let Some(a) = pool.pop() {
            // Take a random partner on another switch.
            let cands: Vec<usize> = (0..pool.len()).filter(|&i| pool[i].0 != a.0).collect();
            if cands.is_empty() {
                continue 'retry;
            }
            let i = cands[rng.below(cands.len())];
            let b = pool.swap_remove(i);
            pairs.push((a, b));
        }
        return Some(pairs);
    }
    None
}

/// A spec string that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IrregularSpecError {
    /// The string does not start with `irregular`.
    #[error("fabric spec must start with `irregular:`, got {0:?}")]
    Prefix(String),
    /// An item is not `key=value`.
    #[error("expected key=value, got {0:?}")]
    Item(String),
    /// An unknown key.
    #[error("unknown key {0:?} (expected switches, ports, nodes, connectivity, seed, root)")]
    UnknownKey(String),
    /// A key given twice.
    #[error("key {0:?} given twice")]
    DuplicateKey(String),
    /// A value that does not parse.
    #[error("bad value {value:?} for {key}")]
    Value {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
}

impl FromStr for IrregularSpec {
    type Err = IrregularSpecError;

    /// Parse `irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=7[,root=R]`.
    /// Keys may come in any order; missing keys take the paper defaults of
    /// [`IrregularSpec::default`]. Only syntax is checked here; use
    /// [`IrregularSpec::validate`] for the parameters.
    fn from_str(s: &str) -> Result<Self, IrregularSpecError> {
        let s = s.trim();
        let rest = match s.strip_prefix("irregular") {
            Some("") => "",
            Some(r) => r
                .strip_prefix(':')
                .ok_or_else(|| IrregularSpecError::Prefix(s.to_string()))?,
            None => return Err(IrregularSpecError::Prefix(s.to_string())),
        };
        let mut spec = IrregularSpec::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in rest.split(',').filter(|i| !i.trim().is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| IrregularSpecError::Item(item.to_string()))?;
            let (k, v) = (k.trim(), v.trim());
            if seen.contains(&k) {
                return Err(IrregularSpecError::DuplicateKey(k.to_string()));
            }
            let bad = || IrregularSpecError::Value {
                key: k.to_string(),
                value: v.to_string(),
            };
            match k {
                "switches" => spec.switches = v.parse().map_err(|_| bad())?,
                "ports" => spec.ports = v.parse().map_err(|_| bad())?,
                "nodes" => spec.nodes = v.parse().map_err(|_| bad())?,
                "connectivity" => {
                    let c: f64 = v.parse().map_err(|_| bad())?;
                    if !c.is_finite() {
                        return Err(bad());
                    }
                    spec.connectivity = c;
                }
                "seed" => spec.seed = v.parse().map_err(|_| bad())?,
                "root" => spec.root = Some(v.parse().map_err(|_| bad())?),
                _ => return Err(IrregularSpecError::UnknownKey(k.to_string())),
            }
            seen.push(k);
        }
        Ok(spec)
    }
}

impl fmt::Display for IrregularSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "irregular:switches={},ports={},nodes={},connectivity={},seed={}",
            self.switches, self.ports, self.nodes, self.connectivity, self.seed
        )?;
        if let Some(r) = self.root {
            write!(f, ",root={r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        let s: IrregularSpec = "irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=7"
            .parse()
            .unwrap();
        assert_eq!(s.seed, 7);
        assert_eq!(s.root, None);
        let r: IrregularSpec = s.to_string().parse().unwrap();
        assert_eq!(r, s);
        let t: IrregularSpec = "irregular:seed=3,root=2".parse().unwrap();
        assert_eq!((t.switches, t.seed, t.root), (8, 3, Some(2)));
        assert_eq!(t.to_string().parse::<IrregularSpec>().unwrap(), t);
        assert!("irregular".parse::<IrregularSpec>().is_ok());
        assert!(matches!(
            "torus:4x4".parse::<IrregularSpec>(),
            Err(IrregularSpecError::Prefix(_))
        ));
        assert!(matches!(
            "irregularx".parse::<IrregularSpec>(),
            Err(IrregularSpecError::Prefix(_))
        ));
        assert!(matches!(
            "irregular:foo=1".parse::<IrregularSpec>(),
            Err(IrregularSpecError::UnknownKey(_))
        ));
        assert!(matches!(
            "irregular:seed=1,seed=2".parse::<IrregularSpec>(),
            Err(IrregularSpecError::DuplicateKey(_))
        ));
        assert!(matches!(
            "irregular:seed".parse::<IrregularSpec>(),
            Err(IrregularSpecError::Item(_))
        ));
        assert!(matches!(
            "irregular:nodes=-1".parse::<IrregularSpec>(),
            Err(IrregularSpecError::Value { .. })
        ));
        assert!(matches!(
            "irregular:connectivity=NaN".parse::<IrregularSpec>(),
            Err(IrregularSpecError::Value { .. })
        ));
    }

    #[test]
    fn validation() {
        let d = IrregularSpec::default();
        assert_eq!(d.link_ports(), 26);
        assert!(matches!(
            IrregularSpec { nodes: 65, ..d }.validate(),
            Err(GenError::TooManyNodes { .. })
        ));
        assert!(matches!(
            IrregularSpec {
                connectivity: 1.5,
                ..d
            }
            .validate(),
            Err(GenError::Connectivity(_))
        ));
        assert!(matches!(
            IrregularSpec {
                connectivity: 0.1,
                ..d
            }
            .validate(),
            Err(GenError::TooFewLinks { .. })
        ));
        assert!(matches!(
            IrregularSpec { root: Some(8), ..d }.validate(),
            Err(GenError::NoSuchRoot { .. })
        ));
        assert!(IrregularSpec { switches: 0, ..d }.validate().is_err());
        assert!(IrregularSpec {
            switches: usize::MAX,
            ..d
        }
        .validate()
        .is_err());
    }

    #[test]
    fn deterministic_connected_draws() {
        for seed in 0..10 {
            let spec = IrregularSpec {
                seed,
                ..IrregularSpec::default()
            };
            let a = spec.generate().unwrap();
            assert_eq!(a, spec.generate().unwrap());
            assert_eq!(a.node_count(), 32);
            assert_eq!(a.links().len(), 13);
        }
        let one = IrregularSpec {
            switches: 1,
            ports: 4,
            nodes: 4,
            ..IrregularSpec::default()
        };
        assert_eq!(one.generate().unwrap().node_count(), 4);
    }
}
