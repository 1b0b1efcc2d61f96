//! Source-routed worms with intermediate reception: the header carries the
//! output port at every switch of its route and whether the host there
//! receives a copy. The simulator's load driver builds them for the mesh
//! path-based schemes of [Al-Dubai 2009] (dual-path, multipath and the QG
//! steps routed by Lin, McKinley and Ni's label-monotone function R;
//! column-path legs dimension-ordered), so the route a planner chose is the
//! route the switches take. No rank can put one on a socket fabric (the
//! decoder never yields one).

use std::sync::Arc;

use mcast_algorithms::topo::{Dir, Topology};

use super::{DirectRouting, Out, SwitchHeader, SwitchRouteError};

/// A source-routed worm's header state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRoute {
    /// Per route position (the injecting switch first): the output port,
    /// [`SourceRoute::END`] at the last, with [`SourceRoute::DELIVER`] set
    /// where the host receives.
    pub steps: Arc<[u16]>,
    /// The position of the switch the header is at.
    pub pos: u16,
}

impl SourceRoute {
    /// The host at this position receives a copy.
    pub const DELIVER: u16 = 0x8000;
    /// No output: the route ends here.
    pub const END: u16 = 0x7fff;

    /// The header of a worm through `route` (nodes of a direct topology,
    /// the injecting node first; consecutive nodes neighbours), delivering
    /// at the positions `deliver_at` (indices into `route`).
    ///
    /// # Errors
    /// [`SwitchRouteError::NoOutput`] for a route of non-neighbours, a
    /// delivery position outside it, a route whose last node does not
    /// receive, or one longer than 32 767 hops.
    pub fn through(
        topo: &Topology,
        route: &[usize],
        deliver_at: &[usize],
    ) -> Result<SourceRoute, SwitchRouteError> {
        if route.is_empty() || route.len() > usize::from(Self::END) {
            return Err(SwitchRouteError::NoOutput);
        }
        let mut steps = Vec::with_capacity(route.len());
        for w in route.windows(2) {
            steps.push(port_towards(topo, w[0], w[1])?);
        }
        steps.push(Self::END);
        for &p in deliver_at {
            let s = steps.get_mut(p).ok_or(SwitchRouteError::NoOutput)?;
            *s |= Self::DELIVER;
        }
        if steps.last().is_some_and(|&s| s & Self::DELIVER == 0) {
            return Err(SwitchRouteError::NoOutput);
        }
        Ok(SourceRoute {
            steps: steps.into(),
            pos: 0,
        })
    }
}

/// The port of `from` whose link leads to `to`.
fn port_towards(topo: &Topology, from: usize, to: usize) -> Result<u16, SwitchRouteError> {
    for dim in 0..topo.dims() {
        for dir in [Dir::Plus, Dir::Minus] {
            if topo.neighbour(from, dim, dir).ok().flatten() == Some(to) {
                return Ok(DirectRouting::port_of(dim, dir) as u16);
            }
        }
    }
    Err(SwitchRouteError::BadDest(to as u64))
}

/// Route a source-routed header: a branch to the host where the step says
/// so, and one on to the next switch unless the route ends here.
pub(super) fn route_source(h: &SourceRoute, out: &mut Vec<Out>) -> Result<(), SwitchRouteError> {
    let step = *h
        .steps
        .get(usize::from(h.pos))
        .ok_or(SwitchRouteError::NoOutput)?;
    if step & SourceRoute::DELIVER != 0 {
        out.push(Out {
            port: 0,
            class: 0,
            header: SwitchHeader::Source(Box::new(h.clone())),
        });
    }
    let port = step & !SourceRoute::DELIVER;
    if port != SourceRoute::END {
        out.push(Out {
            port,
            class: 0,
            header: SwitchHeader::Source(Box::new(SourceRoute {
                steps: h.steps.clone(),
                pos: h.pos + 1,
            })),
        });
    } else if step & SourceRoute::DELIVER == 0 {
        return Err(SwitchRouteError::NoOutput);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::routing::{PortLink, Routing};

    /// A worm along the bottom row of a 3x3 mesh and up the last column,
    /// delivering at 1 and at 8: the ports follow the links, the host
    /// branches are where asked, and the last switch only delivers.
    #[test]
    fn source_routes_follow_the_links() {
        let topo = Topology::mesh(&[3, 3]).unwrap();
        let r = DirectRouting::new(topo.clone(), false);
        let route = [0, 1, 2, 5, 8];
        let h = SourceRoute::through(&topo, &route, &[1, 4]).unwrap();
        let mut at = 0;
        let mut hdr = h;
        let mut got = Vec::new();
        loop {
            let mut out = Vec::new();
            route_source(&hdr, &mut out).unwrap();
            let mut next = None;
            for o in out {
                if o.port == 0 {
                    got.push(route[at]);
                } else {
                    let PortLink::Switch { switch, .. } = r.link(route[at], o.port.into()) else {
                        panic!("port {} of {} leads nowhere", o.port, route[at]);
                    };
                    let SwitchHeader::Source(s) = o.header else {
                        unreachable!()
                    };
                    next = Some((switch, *s));
                }
            }
            match next {
                Some((sw, s)) => {
                    at += 1;
                    assert_eq!(sw, route[at]);
                    hdr = s;
                }
                None => break,
            }
        }
        assert_eq!(got, vec![1, 8]);
        assert_eq!(at, 4);
        // Non-neighbours, a delivery off the route, an undelivered end.
        assert!(SourceRoute::through(&topo, &[0, 2], &[1]).is_err());
        assert!(SourceRoute::through(&topo, &[0, 1], &[5]).is_err());
        assert!(SourceRoute::through(&topo, &[0, 1], &[0]).is_err());
    }
}
