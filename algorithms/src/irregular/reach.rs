//! Reachability strings for the tree-based bit-string worm
//! [Sivaram 1998, §5.3.2, Fig 18]: per switch i a total string r_i (nodes reachable through all its
//! down ports, host ports included) and per down port j a restricted string
//! r_ij, made mutually exclusive by giving each node to the highest-numbered
//! down port that reaches it.
//!
//! Step 1 of Fig 18 walks levels bottom-up but leaves the order within a level
//! open; same-level links are down from the lower id to the higher id, so this
//! implementation walks switches in decreasing (level, id), a reverse
//! topological order of the down-link DAG ([Sivaram 1998, §5.3.2, Fig 18], our choice).

use super::nodeset::NodeSet;
use super::topology::{PortConn, PortId, SwitchId, SwitchTopology};
use super::updown::{UpDown, UpDownDir};

/// The Fig 18 reachability strings of a whole network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reachability {
    total: Vec<NodeSet>,
    /// restricted[switch][port]: Some for down ports (host ports and down
    /// links), None for up links and open ports.
    restricted: Vec<Vec<Option<NodeSet>>>,
}

impl Reachability {
    /// Run Fig 18 on `topo` with the up*/down* directions of `ud`.
    pub fn new(topo: &SwitchTopology, ud: &UpDown) -> Reachability {
        let n = topo.switch_count();
        let nodes = topo.node_count();
        let mut order: Vec<SwitchId> = (0..n).collect();
        order.sort_by_key(|&s| std::cmp::Reverse((ud.level(s).unwrap_or(0), s)));
        let mut total = vec![NodeSet::new(nodes); n];
        let mut unrestricted: Vec<Vec<Option<NodeSet>>> = vec![Vec::new(); n];
        // Step 1: total and per-port (unrestricted) strings, bottom-up.
        for &s in &order {
            let mut ports = Vec::with_capacity(topo.ports_per_switch());
            let mut r_i = NodeSet::new(nodes);
            for c in topo.ports(s) {
                let r_ij = match *c {
                    PortConn::Host(node) => Some(NodeSet::from_nodes(nodes, [node])),
                    PortConn::Link { peer, .. } if ud.dir(s, peer) == UpDownDir::Down => {
                        Some(total[peer].clone())
                    }
                    _ => None,
                };
                if let Some(r) = &r_ij {
                    r_i.union_with(r);
                }
                ports.push(r_ij);
            }
            total[s] = r_i;
            unrestricted[s] = ports;
        }
        // Step 2: r_ij &= !r_ik for every down port k > j (original strings).
        let restricted = unrestricted
            .into_iter()
            .map(|ports| {
                let mut out = ports.clone();
                let mut later = NodeSet::new(nodes);
                for j in (0..ports.len()).rev() {
                    if let Some(r) = &ports[j] {
                        let mut x = r.clone();
                        x.subtract(&later);
                        later.union_with(r);
                        out[j] = Some(x);
                    }
                }
                out
            })
            .collect();
        Reachability { total, restricted }
    }

    /// The total reachability string r_i of `switch` (`None` if out of range).
    pub fn total(&self, switch: SwitchId) -> Option<&NodeSet> {
        self.total.get(switch)
    }

    /// The restricted string r_ij of a down port (host port or down link);
    /// `None` for up links, open ports and ids out of range.
    pub fn restricted(&self, switch: SwitchId, port: PortId) -> Option<&NodeSet> {
        self.restricted.get(switch)?.get(port)?.as_ref()
    }

    /// The down ports of `switch` with their restricted strings, port order.
    pub fn down_ports(&self, switch: SwitchId) -> impl Iterator<Item = (PortId, &NodeSet)> + '_ {
        self.restricted
            .get(switch)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(p, r)| r.as_ref().map(|r| (p, r)))
    }
}
