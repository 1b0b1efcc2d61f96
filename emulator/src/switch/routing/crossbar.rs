//! One switch with `n` host ports (the unit-step model's contention-free
//! fabric).

use super::{Out, PortLink, Routing, SwitchHeader, SwitchRouteError};

/// One switch, `n` hosts.
#[derive(Debug, Clone, Copy)]
pub struct CrossbarRouting {
    n: usize,
}

impl CrossbarRouting {
    /// `n` hosts on one switch.
    pub fn new(n: usize) -> CrossbarRouting {
        CrossbarRouting { n }
    }
}

impl Routing for CrossbarRouting {
    fn switches(&self) -> usize {
        1
    }
    fn ports(&self) -> usize {
        self.n
    }
    fn nodes(&self) -> usize {
        self.n
    }
    fn vc_classes(&self) -> usize {
        1
    }
    fn link(&self, _switch: usize, port: usize) -> PortLink {
        if port < self.n {
            PortLink::Host(port)
        } else {
            PortLink::Open
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        (0, node)
    }
    fn route(
        &self,
        _switch: usize,
        _in_port: usize,
        header: &SwitchHeader,
        out: &mut Vec<Out>,
    ) -> Result<(), SwitchRouteError> {
        match header {
            SwitchHeader::Unicast { dest } if (*dest as usize) < self.n => {
                out.push(Out {
                    port: *dest as u16,
                    class: 0,
                    header: header.clone(),
                });
                Ok(())
            }
            SwitchHeader::Unicast { dest } => Err(SwitchRouteError::BadDest(u64::from(*dest))),
            _ => Err(SwitchRouteError::Unsupported),
        }
    }
    fn switch_hops(&self, _from: usize, _to: usize) -> Option<usize> {
        Some(1)
    }
}
