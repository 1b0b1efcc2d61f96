//! Fabric specs for the simulator: the `mcsim plan` grammar (torus, mesh,
//! hypercube, irregular) plus `crossbar:N` (one switch, N hosts).
//! and `min:N[:omega]` (the MIN of `mcsim plan`).

use std::sync::Arc;

use mcast_algorithms::irregular::{IrregularSpec, SwitchNetwork};
use mcast_algorithms::topo::Topology;

use super::SimulatorError;
use crate::switch::routing::{CrossbarRouting, DirectRouting, IrregularRouting, MinRouting};
use crate::switch::Routing;

/// A parsed fabric.
#[derive(Clone)]
pub enum SimFabric {
    /// Torus, mesh or hypercube.
    Direct(Arc<DirectRouting>),
    /// Irregular network.
    Irregular(Arc<IrregularRouting>),
    /// One switch.
    Crossbar(Arc<CrossbarRouting>),
    /// A wrap-around MIN.
    Min(Arc<MinRouting>),
}

impl std::fmt::Debug for SimFabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimFabric::Direct(d) => write!(f, "Direct({})", d.topology()),
            SimFabric::Irregular(_) => write!(f, "Irregular"),
            SimFabric::Crossbar(c) => write!(f, "{c:?}"),
            SimFabric::Min(m) => write!(f, "Min({} stages)", m.net().stages()),
        }
    }
}

/// Split `SPEC@key=value,key=value` into the fabric spec and the cost
/// knobs it carries (so a fabric spec alone, as `mclaunch --fabric` takes
/// it, can set every knob), and apply them to `cost`.
///
/// # Errors
/// A knob without `=`, or one the cost model refuses.
pub fn split_spec<'a>(
    text: &'a str,
    cost: &mut crate::cost::FabricCostModel,
) -> Result<&'a str, SimulatorError> {
    let Some((spec, knobs)) = text.split_once('@') else {
        return Ok(text);
    };
    for kv in knobs.split(',').filter(|k| !k.trim().is_empty()) {
        cost.set_pair(kv)
            .map_err(|e| SimulatorError::Input(format!("fabric spec knob `{kv}`: {e}")))?;
    }
    Ok(spec)
}

impl SimFabric {
    /// Parse a spec; `dateline` is the cost model's knob.
    ///
    /// # Errors
    /// [`SimulatorError::Input`].
    pub fn parse(text: &str, dateline: bool) -> Result<SimFabric, SimulatorError> {
        let t = text.trim();
        let bad = |e: String| SimulatorError::Input(format!("bad fabric `{t}`: {e}"));
        if let Some(n) = t.strip_prefix("crossbar:") {
            let n: usize = n
                .parse()
                .map_err(|_| bad("crossbar:N needs a number of hosts".into()))?;
            if !(2..=4096).contains(&n) {
                return Err(bad("crossbar:N needs 2 <= N <= 4096".into()));
            }
            return Ok(SimFabric::Crossbar(Arc::new(CrossbarRouting::new(n))));
        }
        if let Some(net) = crate::plan::mesh::parse_min_fabric(t) {
            let net = net.map_err(|e| SimulatorError::Input(e.to_string()))?;
            return Ok(SimFabric::Min(Arc::new(MinRouting::new(net))));
        }
        if t == "irregular" || t.starts_with("irregular:") {
            let spec: IrregularSpec = t.parse().map_err(|e| bad(format!("{e}")))?;
            spec.validate().map_err(|e| bad(format!("{e}")))?;
            let fabric = SwitchNetwork::from_spec(&spec).map_err(|e| bad(format!("{e}")))?;
            return Ok(SimFabric::Irregular(Arc::new(IrregularRouting::new(
                fabric,
            ))));
        }
        let topo: Topology = t.parse().map_err(|e| bad(format!("{e}")))?;
        Ok(SimFabric::Direct(Arc::new(DirectRouting::new(
            topo, dateline,
        ))))
    }

    /// The routing function.
    pub fn routing(&self) -> Arc<dyn Routing> {
        match self {
            SimFabric::Direct(d) => d.clone(),
            SimFabric::Irregular(i) => i.clone(),
            SimFabric::Crossbar(c) => c.clone(),
            SimFabric::Min(m) => m.clone(),
        }
    }

    /// The direct topology, if any.
    pub fn topology(&self) -> Option<&Topology> {
        match self {
            SimFabric::Direct(d) => Some(d.topology()),
            _ => None,
        }
    }

    /// Number of hosts.
    pub fn nodes(&self) -> usize {
        self.routing().nodes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::FabricCostModel;

    #[test]
    fn knobs_ride_on_the_fabric_spec() {
        let mut c = FabricCostModel::default();
        let spec = split_spec("torus:8x8@num_vcs=4, packet_flits=8,dateline=0", &mut c).unwrap();
        assert_eq!(spec, "torus:8x8");
        assert_eq!((c.num_vcs, c.packet_flits, c.dateline), (4, 8, false));
        let mut d = FabricCostModel::default();
        assert_eq!(split_spec("hypercube:3", &mut d).unwrap(), "hypercube:3");
        assert_eq!(d, FabricCostModel::default());
        assert!(split_spec("torus:4x4@bogus=1", &mut d).is_err());
        assert!(split_spec("torus:4x4@num_vcs", &mut d).is_err());
    }
}
