//! The irregular switch network [Sivaram 1998, §2.1]: switches with `k` ports each,
//! every port either attached to one host (node), linked to a port of another
//! switch (parallel links between two switches allowed), or open.
//!
//! Switch ids are `0..switches`, node ids `0..nodes`, port ids `0..k`.

use std::collections::VecDeque;

use serde::Serialize;

/// A switch id (`0..switch_count()`).
pub type SwitchId = usize;
/// A node (host) id (`0..node_count()`).
pub type NodeId = usize;
/// A port number on a switch (`0..ports_per_switch()`).
pub type PortId = usize;

/// Upper bound on switches accepted by the builder (keeps the routing tables,
/// which are quadratic in the switch count, bounded).
pub const MAX_SWITCHES: usize = 4096;
/// Upper bound on ports per switch (port strings are encoded with a u16 count).
pub const MAX_PORTS: usize = 4096;

/// What one switch port is connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PortConn {
    /// Nothing: an open port.
    Open,
    /// A host (processing node).
    Host(NodeId),
    /// One end of a bidirectional inter-switch link.
    Link {
        /// The switch at the other end.
        peer: SwitchId,
        /// The port of `peer` the link arrives on.
        peer_port: PortId,
    },
}

/// A topology that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchTopologyError {
    /// Zero switches, or more than [`MAX_SWITCHES`].
    #[error("switch count {0} out of range 1..={MAX_SWITCHES}")]
    SwitchCount(usize),
    /// Zero ports, or more than [`MAX_PORTS`].
    #[error("ports per switch {0} out of range 1..={MAX_PORTS}")]
    PortCount(usize),
    /// A switch id out of range.
    #[error("switch {0} does not exist")]
    NoSuchSwitch(SwitchId),
    /// A port id out of range.
    #[error("switch {switch} has no port {port}")]
    NoSuchPort {
        /// The switch.
        switch: SwitchId,
        /// The port.
        port: PortId,
    },
    /// A port is already connected.
    #[error("port {port} of switch {switch} is already in use")]
    PortInUse {
        /// The switch.
        switch: SwitchId,
        /// The port.
        port: PortId,
    },
    /// No free port is left on a switch.
    #[error("switch {0} has no free port")]
    NoFreePort(SwitchId),
    /// A link between two ports of the same switch (not allowed, [Sivaram 1998, §6.3]).
    #[error("link from switch {0} to itself")]
    SelfLink(SwitchId),
    /// The switch graph is not connected.
    #[error("the switch graph is not connected")]
    Disconnected,
}

/// An irregular network of switches, hosts and links. Immutable once built
/// (see [`SwitchTopologyBuilder`]); always connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchTopology {
    ports: usize,
    conns: Vec<Vec<PortConn>>,
    hosts: Vec<(SwitchId, PortId)>,
}

impl SwitchTopology {
    /// The number of switches.
    pub fn switch_count(&self) -> usize {
        self.conns.len()
    }

    /// Ports per switch (k).
    pub fn ports_per_switch(&self) -> usize {
        self.ports
    }

    /// The number of nodes (hosts).
    pub fn node_count(&self) -> usize {
        self.hosts.len()
    }

    /// What `port` of `switch` connects to; `None` if either is out of range.
    pub fn port(&self, switch: SwitchId, port: PortId) -> Option<PortConn> {
        self.conns.get(switch)?.get(port).copied()
    }

    /// All ports of `switch` in port order (empty if out of range).
    pub fn ports(&self, switch: SwitchId) -> &[PortConn] {
        self.conns.get(switch).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The (switch, port) a node is attached to.
    pub fn host_location(&self, node: NodeId) -> Option<(SwitchId, PortId)> {
        self.hosts.get(node).copied()
    }

    /// The switch a node is attached to.
    pub fn switch_of(&self, node: NodeId) -> Option<SwitchId> {
        self.hosts.get(node).map(|&(s, _)| s)
    }

    /// The (port, node) pairs of the hosts on `switch`, in port order.
    pub fn hosts_on(&self, switch: SwitchId) -> impl Iterator<Item = (PortId, NodeId)> + '_ {
        self.ports(switch)
            .iter()
            .enumerate()
            .filter_map(|(p, c)| match c {
                PortConn::Host(n) => Some((p, *n)),
                _ => None,
            })
    }

    /// The inter-switch link ends of `switch`: (port, peer, peer port), in
    /// port order (parallel links appear once per link).
    pub fn links_of(
        &self,
        switch: SwitchId,
    ) -> impl Iterator<Item = (PortId, SwitchId, PortId)> + '_ {
        self.ports(switch)
            .iter()
            .enumerate()
            .filter_map(|(p, c)| match c {
                PortConn::Link { peer, peer_port } => Some((p, *peer, *peer_port)),
                _ => None,
            })
    }

    /// Every link once, as ((a, port), (b, port)) with a < b, or a == b never.
    pub fn links(&self) -> Vec<((SwitchId, PortId), (SwitchId, PortId))> {
        let mut v = Vec::new();
        for s in 0..self.switch_count() {
            for (p, peer, pp) in self.links_of(s) {
                if (s, p) < (peer, pp) {
                    v.push(((s, p), (peer, pp)));
                }
            }
        }
        v
    }

    /// Whether switches `a` and `b` share at least one link.
    pub fn adjacent(&self, a: SwitchId, b: SwitchId) -> bool {
        self.links_of(a).any(|(_, peer, _)| peer == b)
    }

    fn connected(conns: &[Vec<PortConn>]) -> bool {
        let n = conns.len();
        let mut seen = vec![false; n];
        let mut q = VecDeque::from([0usize]);
        seen[0] = true;
        let mut count = 1;
        while let Some(s) = q.pop_front() {
            for c in &conns[s] {
                if let PortConn::Link { peer, .. } = *c {
                    if !seen[peer] {
                        seen[peer] = true;
                        count += 1;
                        q.push_back(peer);
                    }
                }
            }
        }
        count == n
    }
}

/// Builds a [`SwitchTopology`]. Nodes get ids in the order they are added.
#[derive(Debug, Clone)]
pub struct SwitchTopologyBuilder {
    ports: usize,
    conns: Vec<Vec<PortConn>>,
    hosts: Vec<(SwitchId, PortId)>,
}

impl SwitchTopologyBuilder {
    /// `switches` switches with `ports` ports each, all open.
    ///
    /// # Errors
    /// [`SwitchTopologyError::SwitchCount`] or [`SwitchTopologyError::PortCount`].
    pub fn new(switches: usize, ports: usize) -> Result<Self, SwitchTopologyError> {
        if switches == 0 || switches > MAX_SWITCHES {
            return Err(SwitchTopologyError::SwitchCount(switches));
        }
        if ports == 0 || ports > MAX_PORTS {
            return Err(SwitchTopologyError::PortCount(ports));
        }
        Ok(SwitchTopologyBuilder {
            ports,
            conns: vec![vec![PortConn::Open; ports]; switches],
            hosts: Vec::new(),
        })
    }

    fn check_free(&self, switch: SwitchId, port: PortId) -> Result<(), SwitchTopologyError> {
        let ports = self
            .conns
            .get(switch)
            .ok_or(SwitchTopologyError::NoSuchSwitch(switch))?;
        match ports.get(port) {
            None => Err(SwitchTopologyError::NoSuchPort { switch, port }),
            Some(PortConn::Open) => Ok(()),
            Some(_) => Err(SwitchTopologyError::PortInUse { switch, port }),
        }
    }

    fn free_port(&self, switch: SwitchId) -> Result<PortId, SwitchTopologyError> {
        let ports = self
            .conns
            .get(switch)
            .ok_or(SwitchTopologyError::NoSuchSwitch(switch))?;
        ports
            .iter()
            .position(|c| *c == PortConn::Open)
            .ok_or(SwitchTopologyError::NoFreePort(switch))
    }

    /// Attach a new node to `port` of `switch`; returns its node id.
    ///
    /// # Errors
    /// The switch or port does not exist or the port is in use.
    pub fn host_at(
        &mut self,
        switch: SwitchId,
        port: PortId,
    ) -> Result<NodeId, SwitchTopologyError> {
        self.check_free(switch, port)?;
        let id = self.hosts.len();
        self.conns[switch][port] = PortConn::Host(id);
        self.hosts.push((switch, port));
        Ok(id)
    }

    /// Attach a new node to the lowest free port of `switch`.
    ///
    /// # Errors
    /// As [`SwitchTopologyBuilder::host_at`], or [`SwitchTopologyError::NoFreePort`].
    pub fn add_host(&mut self, switch: SwitchId) -> Result<NodeId, SwitchTopologyError> {
        let p = self.free_port(switch)?;
        self.host_at(switch, p)
    }

    /// Link `port_a` of `a` with `port_b` of `b`.
    ///
    /// # Errors
    /// A missing switch or port, a port in use, or `a == b`.
    pub fn link_at(
        &mut self,
        a: SwitchId,
        port_a: PortId,
        b: SwitchId,
        port_b: PortId,
    ) -> Result<(), SwitchTopologyError> {
        self.check_free(a, port_a)?;
        self.check_free(b, port_b)?;
        if a == b {
            return Err(SwitchTopologyError::SelfLink(a));
        }
        self.conns[a][port_a] = PortConn::Link {
            peer: b,
            peer_port: port_b,
        };
        self.conns[b][port_b] = PortConn::Link {
            peer: a,
            peer_port: port_a,
        };
        Ok(())
    }

    /// Link the lowest free ports of `a` and `b`; returns (port on a, port on b).
    ///
    /// # Errors
    /// As [`SwitchTopologyBuilder::link_at`], or [`SwitchTopologyError::NoFreePort`].
    pub fn add_link(
        &mut self,
        a: SwitchId,
        b: SwitchId,
    ) -> Result<(PortId, PortId), SwitchTopologyError> {
        if a == b {
            self.free_port(a)?;
            return Err(SwitchTopologyError::SelfLink(a));
        }
        let pa = self.free_port(a)?;
        let pb = self.free_port(b)?;
        self.link_at(a, pa, b, pb)?;
        Ok((pa, pb))
    }

    /// Finish the topology.
    ///
    /// # Errors
    /// [`SwitchTopologyError::Disconnected`] if the switch graph is not connected.
    pub fn build(self) -> Result<SwitchTopology, SwitchTopologyError> {
        if !SwitchTopology::connected(&self.conns) {
            return Err(SwitchTopologyError::Disconnected);
        }
        Ok(SwitchTopology {
            ports: self.ports,
            conns: self.conns,
            hosts: self.hosts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_rules() {
        assert_eq!(
            SwitchTopologyBuilder::new(0, 4).unwrap_err(),
            SwitchTopologyError::SwitchCount(0)
        );
        assert_eq!(
            SwitchTopologyBuilder::new(2, 0).unwrap_err(),
            SwitchTopologyError::PortCount(0)
        );
        let mut b = SwitchTopologyBuilder::new(3, 2).unwrap();
        assert_eq!(b.add_host(0), Ok(0));
        assert_eq!(b.add_link(0, 1), Ok((1, 0)));
        assert_eq!(b.add_link(0, 2), Err(SwitchTopologyError::NoFreePort(0)));
        assert_eq!(b.add_link(1, 1), Err(SwitchTopologyError::SelfLink(1)));
        assert_eq!(
            b.host_at(1, 0),
            Err(SwitchTopologyError::PortInUse { switch: 1, port: 0 })
        );
        assert_eq!(
            b.host_at(1, 9),
            Err(SwitchTopologyError::NoSuchPort { switch: 1, port: 9 })
        );
        assert_eq!(b.add_host(7), Err(SwitchTopologyError::NoSuchSwitch(7)));
        assert_eq!(b.clone().build(), Err(SwitchTopologyError::Disconnected));
        b.add_link(1, 2).unwrap();
        let t = b.build().unwrap();
        assert_eq!(t.switch_count(), 3);
        assert_eq!(t.node_count(), 1);
        assert_eq!(t.switch_of(0), Some(0));
        assert_eq!(t.links().len(), 2);
        assert!(t.adjacent(1, 2) && !t.adjacent(0, 2));
        assert_eq!(t.port(9, 0), None);
    }

    #[test]
    fn parallel_links() {
        let mut b = SwitchTopologyBuilder::new(2, 4).unwrap();
        b.add_link(0, 1).unwrap();
        b.add_link(0, 1).unwrap();
        let t = b.build().unwrap();
        assert_eq!(t.links_of(0).count(), 2);
    }
}
