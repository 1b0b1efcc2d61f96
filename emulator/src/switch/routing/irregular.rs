//! Irregular networks with up*/down* routing: every header kind (unicast,
//! SSR, multi-drop, bit-string) is decoded by
//! [`mcast_algorithms::irregular::SwitchNetwork::decide`].

use mcast_algorithms::irregular::{PortConn, RouteHeader, SwitchNetwork, UnicastHeader};

use super::{Out, PortLink, Routing, SwitchHeader, SwitchRouteError};

/// Irregular networks (up*/down*).
#[derive(Debug)]
pub struct IrregularRouting {
    fabric: SwitchNetwork,
}

impl IrregularRouting {
    /// Wrap a fabric.
    pub fn new(fabric: SwitchNetwork) -> IrregularRouting {
        IrregularRouting { fabric }
    }

    /// The fabric.
    pub fn fabric(&self) -> &SwitchNetwork {
        &self.fabric
    }
}

impl Routing for IrregularRouting {
    fn switches(&self) -> usize {
        self.fabric.topology().switch_count()
    }
    fn ports(&self) -> usize {
        self.fabric.topology().ports_per_switch()
    }
    fn nodes(&self) -> usize {
        self.fabric.topology().node_count()
    }
    fn vc_classes(&self) -> usize {
        1
    }
    fn link(&self, switch: usize, port: usize) -> PortLink {
        match self.fabric.topology().port(switch, port) {
            Some(PortConn::Host(n)) => PortLink::Host(n),
            Some(PortConn::Link { peer, peer_port }) => PortLink::Switch {
                switch: peer,
                port: peer_port,
            },
            _ => PortLink::Open,
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        self.fabric
            .topology()
            .host_location(node)
            .unwrap_or((usize::MAX, usize::MAX))
    }
    fn route(
        &self,
        switch: usize,
        in_port: usize,
        header: &SwitchHeader,
        out: &mut Vec<Out>,
    ) -> Result<(), SwitchRouteError> {
        let d = match header {
            SwitchHeader::Unicast { dest } => {
                let d = self.fabric.decide_unicast(
                    switch,
                    in_port,
                    &UnicastHeader { dest: *dest },
                    0,
                )?;
                for o in d.outputs {
                    out.push(Out {
                        port: o.port as u16,
                        class: 0,
                        header: header.clone(),
                    });
                }
                return Ok(());
            }
            SwitchHeader::Irregular(h) => self.fabric.decide(switch, in_port, h, 0)?,
            SwitchHeader::Consumed
            | SwitchHeader::Path(_)
            | SwitchHeader::Min(_)
            | SwitchHeader::Source(_) => return Err(SwitchRouteError::Unsupported),
        };
        for o in d.outputs {
            out.push(Out {
                port: o.port as u16,
                class: 0,
                header: SwitchHeader::Irregular(Box::new(o.header)),
            });
        }
        Ok(())
    }
    fn switch_hops(&self, from: usize, to: usize) -> Option<usize> {
        let t = self
            .fabric
            .trace(
                from,
                &RouteHeader::Unicast(UnicastHeader { dest: to as u32 }),
            )
            .ok()?;
        t.branches.first().map(Vec::len)
    }
}
