//! Multidestination worms routed by R_UTPR
//! [Robinson 1994, §5.3; §5.4, Fig 5.8; §5.5, Theorem 5.1; §5.3.1, Fig 5.6; §5.1, §5.4, Figs 5.1, 5.7]: a worm is a source and an ordered destination list; its route is
//! every channel it takes, with the VC set of each hop, and the nodes it
//! delivers to on the way, in delivery order.

use serde::Serialize;

use super::utpr::Utpr;
use super::PathError;
use crate::topo::{Channel, Vc};

/// A multidestination worm: the source and the destinations in the order
/// the worm visits them (the header of Fig 5.9 without the terminator).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PathWorm {
    /// The injecting node.
    pub source: usize,
    /// The destinations in visiting order.
    pub dests: Vec<usize>,
}

/// The route of a worm.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct WormRoute {
    /// The injecting node.
    pub source: usize,
    /// Every channel taken, in order; `vc` is the VC set of the hop
    /// ([`Vc::P`] before the boundary, [`Vc::H`] on and after it).
    pub hops: Vec<Channel>,
    /// The destinations in delivery order.
    pub delivers: Vec<usize>,
    /// For each destination (same order), the number of hops from the source
    /// at which the worm's head reaches it.
    pub reached_at: Vec<usize>,
    /// The number of boundary channels crossed.
    pub boundaries: usize,
}

impl WormRoute {
    /// The number of hops (link visits of this worm).
    pub fn len(&self) -> usize {
        self.hops.len()
    }

    /// Whether the worm takes no hop (never true for a worm with a
    /// destination).
    pub fn is_empty(&self) -> bool {
        self.hops.is_empty()
    }

    /// The nodes visited, the source first and then the head of every hop.
    pub fn nodes(&self, utpr: &Utpr<'_>) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.hops.len() + 1);
        out.push(self.source);
        out.extend(self.hops.iter().map(|c| utpr.up(c.node, c.dim)));
        out
    }
}

impl PathWorm {
    /// A worm visiting `dests` in the given order. Nothing about the order
    /// is checked here; [`PathWorm::route`] counts the boundaries it crosses.
    ///
    /// # Errors
    /// [`PathError::Topo`], [`PathError::SourceIsDestination`],
    /// [`PathError::DuplicateDestination`], [`PathError::NoDestinations`].
    pub fn new(utpr: &Utpr<'_>, source: usize, dests: &[usize]) -> Result<PathWorm, PathError> {
        super::check_set(utpr, source, dests)?;
        if dests.is_empty() {
            return Err(PathError::NoDestinations);
        }
        Ok(PathWorm {
            source,
            dests: dests.to_vec(),
        })
    }

    /// The **restrictive** worm [Robinson 1994, §5.3; §5.3.1, Fig 5.6]: every destination
    /// follows the source on H, in increasing label order (an H-chain), so
    /// the worm crosses no boundary and stays on p-channels.
    ///
    /// # Errors
    /// As [`PathWorm::new`]; [`PathError::NotHChain`] when the labels of
    /// source, dests are not strictly increasing.
    pub fn restrictive(
        utpr: &Utpr<'_>,
        source: usize,
        dests: &[usize],
    ) -> Result<PathWorm, PathError> {
        let w = PathWorm::new(utpr, source, dests)?;
        let mut prev = utpr.label(source);
        for &d in dests {
            let l = utpr.label(d);
            if l <= prev {
                return Err(PathError::NotHChain(d));
            }
            prev = l;
        }
        Ok(w)
    }

    /// The **general** worm [Robinson 1994, §5.4, Fig 5.8; §5.1, §5.4, Figs 5.1, 5.7]: the message
    /// preparation of Fig 5.8 orders the destinations as an H-cycle with
    /// respect to the source, so the worm crosses at most one boundary.
    ///
    /// # Errors
    /// As [`PathWorm::new`].
    pub fn prepare(utpr: &Utpr<'_>, source: usize, dests: &[usize]) -> Result<PathWorm, PathError> {
        if dests.is_empty() {
            return Err(PathError::NoDestinations);
        }
        let cycle = utpr.h_cycle(source, dests)?;
        Ok(PathWorm {
            source,
            dests: cycle[1..].to_vec(),
        })
    }

    /// Route the worm by R_UTPR, destination after destination; the VC set
    /// carries over across intermediate destinations (once h, always h).
    ///
    /// # Errors
    /// [`PathError::Topo`] when a node is outside the torus (a worm built by
    /// hand with wrong ids).
    pub fn route(&self, utpr: &Utpr<'_>) -> Result<WormRoute, PathError> {
        utpr.check(self.source)?;
        for &d in &self.dests {
            utpr.check(d)?;
        }
        Ok(self.route_unchecked(utpr))
    }

    pub(crate) fn route_unchecked(&self, utpr: &Utpr<'_>) -> WormRoute {
        let mut hops = Vec::new();
        let mut reached_at = Vec::with_capacity(self.dests.len());
        let mut at = self.source;
        let mut alpha = Vc::P;
        for &d in &self.dests {
            alpha = utpr.segment_into(at, alpha, d, &mut hops);
            reached_at.push(hops.len());
            at = d;
        }
        let boundaries = hops.iter().filter(|c| utpr.boundary(c.node, c.dim)).count();
        WormRoute {
            source: self.source,
            hops,
            delivers: self.dests.clone(),
            reached_at,
            boundaries,
        }
    }
}
