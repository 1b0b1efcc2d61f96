//! The fabric (topology + up*/down* tables + reachability strings) and the
//! pure switch-side decisions the emulator's switch engine calls: given a
//! switch, the input port and a header, the output ports with the header each
//! copy carries. [`SwitchNetwork::trace`] follows every copy of one injected worm
//! through the network with these same decisions.

use std::collections::VecDeque;

use super::generate::{GenError, IrregularSpec};
use super::header::{
    BitStringHeader, IdForm, MultiDropHeader, PortMask, RouteHeader, SsrHeader, UnicastHeader,
};
use super::reach::Reachability;
use super::topology::{NodeId, PortConn, PortId, SwitchId, SwitchTopology};
use super::updown::{UpDown, UpDownDir, UpDownError};

/// An irregular network ready for routing: the topology, its up*/down*
/// routing tables and its Fig 18 reachability strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchNetwork {
    topo: SwitchTopology,
    ud: UpDown,
    reach: Reachability,
}

/// A switch could not route a header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// The switch does not exist.
    #[error("switch {0} does not exist")]
    NoSuchSwitch(SwitchId),
    /// The input or output port does not exist or is open.
    #[error("switch {switch} has no connected port {port}")]
    BadPort {
        /// The switch.
        switch: SwitchId,
        /// The port.
        port: PortId,
    },
    /// A header names a node that does not exist.
    #[error("node {0} does not exist")]
    NoSuchNode(u64),
    /// A header names a switch that does not exist.
    #[error("target switch {0} does not exist")]
    NoSuchTarget(u64),
    /// A port string whose length is not the switch's port count.
    #[error("port string has {got} bits, switches have {expected} ports")]
    MaskLength {
        /// Ports per switch.
        expected: usize,
        /// Bits in the string.
        got: usize,
    },
    /// A port string marks a port that does not lead to a host.
    #[error("port string marks port {port} of switch {switch}, which is not a host port")]
    NotHostPort {
        /// The switch.
        switch: SwitchId,
        /// The port.
        port: PortId,
    },
    /// A bit-string whose length is not the node count.
    #[error("bit-string has {got} bits, the network has {expected} nodes")]
    Universe {
        /// Nodes in the network.
        expected: usize,
        /// Bits in the header.
        got: usize,
    },
    /// A down-travelling tree worm names nodes this switch cannot reach.
    #[error("switch {0} cannot reach every destination of a down-phase tree worm")]
    Unreachable(SwitchId),
    /// An up-phase tree worm at a switch with no up port (cannot happen on a
    /// well-formed header: the root reaches every node).
    #[error("switch {0} has no up port")]
    NoUpPort(SwitchId),
    /// No legal minimal route for the packet's state.
    #[error(transparent)]
    Route(#[from] UpDownError),
    /// A trace exceeded its hop or copy budget.
    #[error("trace exceeded its budget (hop or copy limit)")]
    Budget,
}

/// One copy a switch emits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output<H> {
    /// The output port.
    pub port: PortId,
    /// The header this copy carries (rewritten where the scheme says so).
    pub header: H,
}

/// What a switch does with one arriving header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchDecision<H> {
    /// The copies to send, in port order for replications.
    pub outputs: Vec<Output<H>>,
    /// Whether the switch itself consumes the packet (SSR switch-id form with
    /// tag 0).
    pub consume: bool,
}

impl<H> SwitchDecision<H> {
    fn forward(port: PortId, header: H) -> Self {
        SwitchDecision {
            outputs: vec![Output { port, header }],
            consume: false,
        }
    }
}

/// Options of [`SwitchNetwork::trace_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WormTraceOptions {
    /// Index among the minimal next hops (or up ports) a switch takes; 0 =
    /// lowest port.
    pub pick: usize,
    /// Rewrite tree-worm headers per copy (the paper's fix). `false` only to
    /// demonstrate the Fig 17(b) duplicate.
    pub rewrite: bool,
}

impl Default for WormTraceOptions {
    fn default() -> Self {
        WormTraceOptions {
            pick: 0,
            rewrite: true,
        }
    }
}

/// Everything one injected worm does in the network.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WormTrace {
    /// Nodes that received a copy, in the order of the trace (a node appears
    /// once per copy it receives).
    pub delivered: Vec<NodeId>,
    /// Switches that consumed the packet.
    pub consumed: Vec<SwitchId>,
    /// The switch path of every branch, from the injection switch to a switch
    /// where the branch ends (emits no copy to another switch).
    pub branches: Vec<Vec<SwitchId>>,
    /// For a tree worm: the up-phase path, from the injection switch to the
    /// switch where the worm turned down. Empty for other headers.
    pub up_path: Vec<SwitchId>,
}

impl SwitchNetwork {
    /// Set up routing on `topo` with BFS root `root` (default: switch 0).
    ///
    /// # Errors
    /// [`UpDownError::NoSuchRoot`].
    pub fn new(topo: SwitchTopology, root: Option<SwitchId>) -> Result<SwitchNetwork, UpDownError> {
        let ud = UpDown::new(&topo, root)?;
        let reach = Reachability::new(&topo, &ud);
        Ok(SwitchNetwork { topo, ud, reach })
    }

    /// Generate the network of `spec` and set up routing.
    ///
    /// # Errors
    /// Any [`GenError`].
    pub fn from_spec(spec: &IrregularSpec) -> Result<SwitchNetwork, GenError> {
        let topo = spec.generate()?;
        SwitchNetwork::new(topo, spec.root).map_err(|_| GenError::NoSuchRoot {
            root: spec.root.unwrap_or(0),
            switches: spec.switches,
        })
    }

    /// The topology.
    pub fn topology(&self) -> &SwitchTopology {
        &self.topo
    }

    /// The up*/down* routing state.
    pub fn updown(&self) -> &UpDown {
        &self.ud
    }

    /// The reachability strings.
    pub fn reachability(&self) -> &Reachability {
        &self.reach
    }

    /// Check a recorded route with the up*/down* legality oracle.
    ///
    /// # Errors
    /// The first violation.
    pub fn check_route(&self, route: &[SwitchId]) -> Result<(), UpDownError> {
        self.ud.check_route(&self.topo, route)
    }

    fn check_in(&self, switch: SwitchId, in_port: PortId) -> Result<(), SwitchError> {
        if switch >= self.topo.switch_count() {
            return Err(SwitchError::NoSuchSwitch(switch));
        }
        match self.topo.port(switch, in_port) {
            None | Some(PortConn::Open) => Err(SwitchError::BadPort {
                switch,
                port: in_port,
            }),
            _ => Ok(()),
        }
    }

    fn node_switch(&self, node: u32) -> Result<(SwitchId, PortId), SwitchError> {
        self.topo
            .host_location(node as usize)
            .ok_or(SwitchError::NoSuchNode(node as u64))
    }

    fn target_switch(&self, form: IdForm, id: u32) -> Result<SwitchId, SwitchError> {
        match form {
            IdForm::Node => Ok(self.node_switch(id)?.0),
            IdForm::Switch if (id as usize) < self.topo.switch_count() => Ok(id as usize),
            IdForm::Switch => Err(SwitchError::NoSuchTarget(id as u64)),
        }
    }

    /// The output port toward `target` for a packet that entered `switch`
    /// through `in_port`: minimal legal next hop number `pick` (mod count).
    fn toward(
        &self,
        switch: SwitchId,
        in_port: PortId,
        target: SwitchId,
        pick: usize,
    ) -> Result<PortId, SwitchError> {
        let phase = self.ud.phase_after(&self.topo, switch, in_port);
        let hops = self.ud.next_hops(&self.topo, switch, phase, target);
        match hops.get(pick % hops.len().max(1)) {
            Some(&(port, _, _)) => Ok(port),
            None => Err(UpDownError::Unroutable {
                from: switch,
                phase,
                to: target,
            }
            .into()),
        }
    }

    fn replicate_ports(
        &self,
        switch: SwitchId,
        mask: &PortMask,
    ) -> Result<Vec<PortId>, SwitchError> {
        let k = self.topo.ports_per_switch();
        if mask.len() != k {
            return Err(SwitchError::MaskLength {
                expected: k,
                got: mask.len(),
            });
        }
        mask.ports()
            .map(|port| match self.topo.port(switch, port) {
                Some(PortConn::Host(_)) => Ok(port),
                _ => Err(SwitchError::NotHostPort { switch, port }),
            })
            .collect()
    }

    /// Unicast: deliver on the host port if the node is attached here, else
    /// forward on a minimal legal next hop toward its switch.
    ///
    /// # Errors
    /// Bad switch/port, unknown node, or no legal route.
    pub fn decide_unicast(
        &self,
        switch: SwitchId,
        in_port: PortId,
        h: &UnicastHeader,
        pick: usize,
    ) -> Result<SwitchDecision<UnicastHeader>, SwitchError> {
        self.check_in(switch, in_port)?;
        let (tsw, tport) = self.node_switch(h.dest)?;
        let port = if tsw == switch {
            tport
        } else {
            self.toward(switch, in_port, tsw, pick)?
        };
        Ok(SwitchDecision::forward(port, *h))
    }

    /// SSR (both forms, paper §5.2.3): away from the target switch, route like
    /// a unicast toward it; at the target, replicate to the marked host ports
    /// (tag 1), consume (switch form, tag 0) or deliver to the node (node
    /// form, tag 0). Every copy carries the header unchanged.
    ///
    /// # Errors
    /// Bad switch/port, unknown node or switch, a port string of the wrong
    /// length or marking a non-host port, or no legal route.
    pub fn decide_ssr(
        &self,
        switch: SwitchId,
        in_port: PortId,
        h: &SsrHeader,
        pick: usize,
    ) -> Result<SwitchDecision<SsrHeader>, SwitchError> {
        self.check_in(switch, in_port)?;
        let target = self.target_switch(h.form, h.id)?;
        if target != switch {
            let port = self.toward(switch, in_port, target, pick)?;
            return Ok(SwitchDecision::forward(port, h.clone()));
        }
        match (h.multidest, h.form) {
            (true, _) => Ok(SwitchDecision {
                outputs: self
                    .replicate_ports(switch, &h.ports)?
                    .into_iter()
                    .map(|port| Output {
                        port,
                        header: h.clone(),
                    })
                    .collect(),
                consume: false,
            }),
            (false, IdForm::Switch) => Ok(SwitchDecision {
                outputs: Vec::new(),
                consume: true,
            }),
            (false, IdForm::Node) => Ok(SwitchDecision::forward(
                self.node_switch(h.id)?.1,
                h.clone(),
            )),
        }
    }

    /// Multi-drop ([Sivaram 1998, §5.2.2], our reading): while the first pair names this switch,
    /// replicate to its host ports and strip it; then forward one copy with
    /// the remaining pairs on a minimal legal next hop toward the next pair's
    /// switch (the single switch-bound output of Definition 3). Host copies
    /// carry the header as it arrived.
    ///
    /// # Errors
    /// As [`SwitchNetwork::decide_ssr`].
    pub fn decide_multidrop(
        &self,
        switch: SwitchId,
        in_port: PortId,
        h: &MultiDropHeader,
        pick: usize,
    ) -> Result<SwitchDecision<MultiDropHeader>, SwitchError> {
        self.check_in(switch, in_port)?;
        let mut outputs = Vec::new();
        let mut cur = Some(h.clone());
        while let Some(hd) = cur.take() {
            let (id, mask) = &hd.pairs()[0];
            let target = self.target_switch(hd.form(), *id)?;
            if target != switch {
                let port = self.toward(switch, in_port, target, pick)?;
                outputs.push(Output { port, header: hd });
                break;
            }
            for port in self.replicate_ports(switch, mask)? {
                outputs.push(Output {
                    port,
                    header: h.clone(),
                });
            }
            cur = hd.stripped();
        }
        Ok(SwitchDecision {
            outputs,
            consume: false,
        })
    }

    /// Bit-string tree worm (paper §5.3.3). Up bit set: if the total
    /// reachability string covers the header, clear the bit and go down;
    /// otherwise forward unchanged on up port number `pick` (mod the number of
    /// up ports). Down: for every down port j (host ports included) with
    /// X = H ∧ r_ij ≠ 0, send a copy whose header is X (the per-copy rewrite
    /// that prevents the Fig 17(b) duplicate).
    ///
    /// # Errors
    /// Bad switch/port, a bit-string of the wrong length, or a down-phase
    /// header this switch cannot fully reach.
    pub fn decide_bitstring(
        &self,
        switch: SwitchId,
        in_port: PortId,
        h: &BitStringHeader,
        pick: usize,
    ) -> Result<SwitchDecision<BitStringHeader>, SwitchError> {
        self.bitstring(switch, in_port, h, pick, true)
    }

    /// [`SwitchNetwork::decide_bitstring`] **without** the header rewrite: every
    /// copy keeps the whole header. Only for demonstrating the Fig 17(b)
    /// duplicate; never use it to route.
    ///
    /// # Errors
    /// As [`SwitchNetwork::decide_bitstring`], without the reachability check.
    pub fn decide_bitstring_unrewritten(
        &self,
        switch: SwitchId,
        in_port: PortId,
        h: &BitStringHeader,
        pick: usize,
    ) -> Result<SwitchDecision<BitStringHeader>, SwitchError> {
        self.bitstring(switch, in_port, h, pick, false)
    }

    fn bitstring(
        &self,
        switch: SwitchId,
        in_port: PortId,
        h: &BitStringHeader,
        pick: usize,
        rewrite: bool,
    ) -> Result<SwitchDecision<BitStringHeader>, SwitchError> {
        self.check_in(switch, in_port)?;
        let n = self.topo.node_count();
        if h.dests().universe() != n {
            return Err(SwitchError::Universe {
                expected: n,
                got: h.dests().universe(),
            });
        }
        let covered = self
            .reach
            .total(switch)
            .is_some_and(|r| h.dests().is_subset(r));
        if h.up() && !covered {
            let ups: Vec<PortId> = self
                .topo
                .links_of(switch)
                .filter(|&(_, peer, _)| self.ud.dir(switch, peer) == UpDownDir::Up)
                .map(|(p, _, _)| p)
                .collect();
            return match ups.get(pick % ups.len().max(1)) {
                Some(&port) => Ok(SwitchDecision::forward(port, h.clone())),
                None => Err(SwitchError::NoUpPort(switch)),
            };
        }
        if rewrite && !covered {
            return Err(SwitchError::Unreachable(switch));
        }
        let outputs = self
            .reach
            .down_ports(switch)
            .filter_map(|(port, r)| {
                let x = h.dests().and(r);
                (!x.is_empty()).then(|| Output {
                    port,
                    header: h.down_with(if rewrite { x } else { h.dests().clone() }),
                })
            })
            .collect();
        Ok(SwitchDecision {
            outputs,
            consume: false,
        })
    }

    /// The decision for any header (bit-string headers are rewritten).
    ///
    /// # Errors
    /// As the per-kind decisions.
    pub fn decide(
        &self,
        switch: SwitchId,
        in_port: PortId,
        h: &RouteHeader,
        pick: usize,
    ) -> Result<SwitchDecision<RouteHeader>, SwitchError> {
        self.decide_opts(switch, in_port, h, pick, true)
    }

    fn decide_opts(
        &self,
        switch: SwitchId,
        in_port: PortId,
        h: &RouteHeader,
        pick: usize,
        rewrite: bool,
    ) -> Result<SwitchDecision<RouteHeader>, SwitchError> {
        fn wrap<H>(d: SwitchDecision<H>, f: fn(H) -> RouteHeader) -> SwitchDecision<RouteHeader> {
            SwitchDecision {
                outputs: d
                    .outputs
                    .into_iter()
                    .map(|o| Output {
                        port: o.port,
                        header: f(o.header),
                    })
                    .collect(),
                consume: d.consume,
            }
        }
        Ok(match h {
            RouteHeader::Unicast(u) => wrap(
                self.decide_unicast(switch, in_port, u, pick)?,
                RouteHeader::Unicast,
            ),
            RouteHeader::Ssr(s) => {
                wrap(self.decide_ssr(switch, in_port, s, pick)?, RouteHeader::Ssr)
            }
            RouteHeader::MultiDrop(m) => wrap(
                self.decide_multidrop(switch, in_port, m, pick)?,
                RouteHeader::MultiDrop,
            ),
            RouteHeader::BitString(b) => wrap(
                self.bitstring(switch, in_port, b, pick, rewrite)?,
                RouteHeader::BitString,
            ),
        })
    }

    /// Inject `header` from node `sender` and follow every copy with the
    /// switch decisions (lowest-port choices, rewriting tree headers).
    ///
    /// # Errors
    /// Any [`SwitchError`] a switch raises, or [`SwitchError::Budget`].
    pub fn trace(&self, sender: NodeId, header: &RouteHeader) -> Result<WormTrace, SwitchError> {
        self.trace_with(sender, header, WormTraceOptions::default())
    }

    /// [`SwitchNetwork::trace`] with explicit options.
    ///
    /// # Errors
    /// As [`SwitchNetwork::trace`]. Each copy may take at most 2·switches + 2 hops,
    /// and the trace at most 64·(switches·ports + nodes) + 1024 copies.
    pub fn trace_with(
        &self,
        sender: NodeId,
        header: &RouteHeader,
        opts: WormTraceOptions,
    ) -> Result<WormTrace, SwitchError> {
        let (sw, port) = self
            .topo
            .host_location(sender)
            .ok_or(SwitchError::NoSuchNode(sender as u64))?;
        let max_hops = 2 * self.topo.switch_count() + 2;
        let mut budget = 64
            * (self.topo.switch_count() * self.topo.ports_per_switch() + self.topo.node_count())
            + 1024;
        let mut trace = WormTrace::default();
        let mut queue = VecDeque::from([(sw, port, header.clone(), vec![sw])]);
        while let Some((sw, in_port, h, path)) = queue.pop_front() {
            budget = budget.checked_sub(1).ok_or(SwitchError::Budget)?;
            let d = self.decide_opts(sw, in_port, &h, opts.pick, opts.rewrite)?;
            if d.consume {
                trace.consumed.push(sw);
            }
            let was_up = matches!(&h, RouteHeader::BitString(b) if b.up());
            let mut onward = 0;
            for o in d.outputs {
                if was_up && trace.up_path.is_empty() {
                    if let RouteHeader::BitString(b) = &o.header {
                        if !b.up() {
                            trace.up_path = path.clone();
                        }
                    }
                }
                match self.topo.port(sw, o.port) {
                    Some(PortConn::Host(n)) => trace.delivered.push(n),
                    Some(PortConn::Link { peer, peer_port }) => {
                        if path.len() > max_hops {
                            return Err(SwitchError::Budget);
                        }
                        let mut p = path.clone();
                        p.push(peer);
                        queue.push_back((peer, peer_port, o.header, p));
                        onward += 1;
                    }
                    _ => {
                        return Err(SwitchError::BadPort {
                            switch: sw,
                            port: o.port,
                        })
                    }
                }
            }
            if onward == 0 {
                trace.branches.push(path);
            }
        }
        Ok(trace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::irregular::examples::{paper_network, paper_node, paper_switch};
    use crate::irregular::nodeset::NodeSet;

    fn mask(ports: &[usize]) -> PortMask {
        PortMask::from_ports(8, ports.iter().copied()).unwrap()
    }

    #[test]
    fn unicast_and_ssr_decisions() {
        let f = paper_network(false).unwrap();
        let (s10, s4, s5) = (paper_switch(10), paper_switch(4), paper_switch(5));
        // Unicast from p10,1 to p5,2: 10 -> 4 (port 2), then 4 -> 5, then host port 1.
        let u = UnicastHeader {
            dest: paper_node(5, 2) as u32,
        };
        assert_eq!(f.decide_unicast(s10, 0, &u, 0).unwrap().outputs[0].port, 2);
        // Second minimal choice: 10 -> 2 (port 3), also legal.
        assert_eq!(f.decide_unicast(s10, 0, &u, 1).unwrap().outputs[0].port, 3);
        assert_eq!(f.decide_unicast(s5, 3, &u, 0).unwrap().outputs[0].port, 1);
        // Switch-id SSR: forward until the target, then replicate or consume.
        let mut h = SsrHeader {
            form: IdForm::Switch,
            multidest: true,
            id: s5 as u32,
            ports: mask(&[0, 1]),
        };
        assert_eq!(f.decide_ssr(s4, 0, &h, 0).unwrap().outputs[0].port, 4);
        let d = f.decide_ssr(s5, 3, &h, 0).unwrap();
        assert_eq!(
            d.outputs.iter().map(|o| o.port).collect::<Vec<_>>(),
            vec![0, 1]
        );
        h.multidest = false;
        assert!(f.decide_ssr(s5, 3, &h, 0).unwrap().consume);
        // Node-id form, tag 0: a unicast to that node.
        let n = SsrHeader {
            form: IdForm::Node,
            multidest: false,
            id: paper_node(5, 2) as u32,
            ports: mask(&[]),
        };
        assert_eq!(f.decide_ssr(s5, 3, &n, 0).unwrap().outputs[0].port, 1);
        // Errors: mask over a link port, wrong mask length, unknown ids, bad ports.
        let bad = SsrHeader {
            ports: mask(&[2]),
            multidest: true,
            ..h.clone()
        };
        assert_eq!(
            f.decide_ssr(s5, 3, &bad, 0),
            Err(SwitchError::NotHostPort {
                switch: s5,
                port: 2
            })
        );
        let short = SsrHeader {
            ports: PortMask::new(4).unwrap(),
            multidest: true,
            ..h.clone()
        };
        assert!(matches!(
            f.decide_ssr(s5, 3, &short, 0),
            Err(SwitchError::MaskLength { .. })
        ));
        let far = SsrHeader {
            id: 99,
            ..h.clone()
        };
        assert_eq!(
            f.decide_ssr(s5, 3, &far, 0),
            Err(SwitchError::NoSuchTarget(99))
        );
        assert!(matches!(
            f.decide_ssr(s5, 7, &h, 0),
            Err(SwitchError::BadPort { .. })
        ));
        assert_eq!(
            f.decide_ssr(42, 0, &h, 0),
            Err(SwitchError::NoSuchSwitch(42))
        );
    }

    #[test]
    fn multidrop_and_bitstring_decisions() {
        let f = paper_network(false).unwrap();
        let (s3, s5, s9) = (paper_switch(3), paper_switch(5), paper_switch(9));
        let h = MultiDropHeader::new(
            IdForm::Switch,
            vec![
                (s5 as u32, mask(&[0, 1])),
                (s3 as u32, mask(&[0])),
                (s9 as u32, mask(&[1])),
            ],
        )
        .unwrap();
        // At 5: drop to both hosts, strip, one copy toward 3 (port 5).
        let d = f.decide_multidrop(s5, 3, &h, 0).unwrap();
        assert_eq!(
            d.outputs.iter().map(|o| o.port).collect::<Vec<_>>(),
            vec![0, 1, 5]
        );
        assert_eq!(d.outputs[2].header.pairs().len(), 2);
        // A down-travelling copy that cannot go back up: unroutable.
        let back = MultiDropHeader::new(IdForm::Switch, vec![(paper_switch(6) as u32, mask(&[0]))])
            .unwrap();
        assert!(matches!(
            f.decide_multidrop(s3, 2, &back, 0),
            Err(SwitchError::Route(UpDownError::Unroutable { .. }))
        ));
        // Bit-string: wrong universe, and a down worm naming unreachable nodes.
        let b = BitStringHeader::new(false, NodeSet::from_nodes(5, [1])).unwrap();
        assert!(matches!(
            f.decide_bitstring(s5, 0, &b, 0),
            Err(SwitchError::Universe { .. })
        ));
        let b = BitStringHeader::new(false, NodeSet::from_nodes(20, [paper_node(1, 1)])).unwrap();
        assert_eq!(
            f.decide_bitstring(s5, 0, &b, 0),
            Err(SwitchError::Unreachable(s5))
        );
        assert!(f.decide_bitstring_unrewritten(s5, 0, &b, 0).is_ok());
        // Unknown sender in a trace.
        assert_eq!(
            f.trace(99, &RouteHeader::BitString(b)),
            Err(SwitchError::NoSuchNode(99))
        );
    }
}
