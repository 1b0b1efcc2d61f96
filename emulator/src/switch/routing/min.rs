//! The wrap-around MIN of 2×2 replicating switching elements, routed by
//! Park & Yoon's region headers.

use mcast_algorithms::min::{self as minnet, Min, RegionHeader};

use super::{Out, PortLink, Routing, SwitchHeader, SwitchRouteError};

/// The wrap-around MIN of 2^n nodes and n stages of 2x2 replicating
/// switching elements [Park 1996, §2.1]: switch `stage * 2^(n-1) + se`; ports 0
/// (upper) and 1 (lower) in and out. A host injects into stage n-1 (the
/// network's input link) and receives from stage 0, so every packet crosses
/// n switches. The SE decision is [`mcast_algorithms::min::decide`] on the
/// region header; a unicast header is the region (d, d).
#[derive(Debug, Clone, Copy)]
pub struct MinRouting {
    net: Min,
}

impl MinRouting {
    /// Wrap a MIN.
    pub fn new(net: Min) -> MinRouting {
        MinRouting { net }
    }

    /// The network.
    pub fn net(&self) -> &Min {
        &self.net
    }

    fn half(&self) -> usize {
        1usize << (self.net.stages() - 1)
    }
}

impl Routing for MinRouting {
    fn switches(&self) -> usize {
        self.net.stages() as usize * self.half()
    }
    fn ports(&self) -> usize {
        2
    }
    fn nodes(&self) -> usize {
        self.net.nodes() as usize
    }
    fn vc_classes(&self) -> usize {
        1
    }
    fn link(&self, switch: usize, port: usize) -> PortLink {
        let half = self.half();
        let (stage, se) = (switch / half, switch % half);
        if port > 1 || stage >= self.net.stages() as usize {
            return PortLink::Open;
        }
        let out = ((se << 1) | port) as u32;
        if stage == 0 {
            return PortLink::Host(out as usize);
        }
        let l = self.net.next_link(stage as u32, out) as usize;
        PortLink::Switch {
            switch: (stage - 1) * half + (l >> 1),
            port: l & 1,
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        let l = self.net.inject_link(node as u32) as usize;
        let top = self.net.stages() as usize - 1;
        (top * self.half() + (l >> 1), l & 1)
    }
    fn route(
        &self,
        switch: usize,
        _in_port: usize,
        header: &SwitchHeader,
        out: &mut Vec<Out>,
    ) -> Result<(), SwitchRouteError> {
        let n = self.net.stages();
        let h = match header {
            SwitchHeader::Min(h) => *h,
            SwitchHeader::Unicast { dest } => RegionHeader::unicast(n, *dest)?,
            _ => return Err(SwitchRouteError::Unsupported),
        };
        let stage = (switch / self.half()) as u32;
        for (port, h2) in minnet::decide(h, stage)?.outputs() {
            out.push(Out {
                port: port as u16,
                class: 0,
                header: match header {
                    SwitchHeader::Unicast { .. } => header.clone(),
                    _ => SwitchHeader::Min(h2),
                },
            });
        }
        Ok(())
    }
    fn switch_hops(&self, _from: usize, _to: usize) -> Option<usize> {
        Some(self.net.stages() as usize)
    }
}
