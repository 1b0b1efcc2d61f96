//! Path worms on unidirectional tori (thesis ch. 5): the header state a
//! router sees and Fig 5.10's routing decision (R_UTPR with intermediate
//! reception), used by [`DirectRouting`].

use mcast_algorithms::path::Utpr;
use mcast_algorithms::topo::Vc;

use super::{DirectRouting, Out, SwitchHeader, SwitchRouteError};

/// The state of a path worm's header at a router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathHeader {
    /// The destinations in delivery order (the decoded Fig 5.9 header).
    pub dests: std::sync::Arc<[u32]>,
    /// The next destination's index (the addresses before it are stripped).
    pub pos: u16,
    /// The worm arrived on an h-channel (else p, or injected by the host).
    pub on_h: bool,
}

impl DirectRouting {
    /// Fig 5.10's routing decision for a path worm at `x`: absorb (a branch
    /// to the host) if `x` is the next destination, and forward towards the
    /// one after it by R_UTPR (the VC set of the arriving channel decides
    /// between p and h).
    pub(super) fn route_path(
        &self,
        x: usize,
        h: &PathHeader,
        out: &mut Vec<Out>,
    ) -> Result<(), SwitchRouteError> {
        let utpr = Utpr::new(&self.topo).map_err(|_| SwitchRouteError::Unsupported)?;
        let mut pos = h.pos as usize;
        let Some(&first) = h.dests.get(pos) else {
            return Err(SwitchRouteError::NoOutput);
        };
        if first as usize == x {
            out.push(Out {
                port: 0,
                class: 0,
                header: SwitchHeader::Path(Box::new(PathHeader {
                    dests: h.dests.clone(),
                    pos: pos as u16,
                    on_h: h.on_h,
                })),
            });
            pos += 1;
            if pos == h.dests.len() {
                return Ok(());
            }
        }
        let next = h.dests[pos] as usize;
        let alpha = if h.on_h { Vc::H } else { Vc::P };
        let c = utpr
            .next(x, alpha, next)
            .map_err(|_| SwitchRouteError::BadDest(next as u64))?
            .ok_or(SwitchRouteError::NoOutput)?;
        out.push(Out {
            port: DirectRouting::port_of(c.dim, c.dir) as u16,
            class: u8::from(self.dateline && c.vc == Vc::H),
            header: SwitchHeader::Path(Box::new(PathHeader {
                dests: h.dests.clone(),
                pos: pos as u16,
                on_h: c.vc == Vc::H,
            })),
        });
        Ok(())
    }
}
