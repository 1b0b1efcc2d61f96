//! The flit-forwarding rule of a router with intermediate reception
//! [Robinson 1994, §5.6.2, Fig 5.10] as a sans-IO state machine: one
//! [`Forwarder`] per worm arriving at a node, fed the worm's flits in order.
//!
//! The header is the simple one of Fig 5.9: destination addresses, the last
//! one duplicated. A router:
//! * that is not a destination ([`Disposition::ForwardOnly`]) looks at the
//!   first flit only, routes towards it by R_UTPR and forwards every flit;
//! * that is a destination but not the last ([`Disposition::AbsorbAndForward`])
//!   strips its own address, forwards the rest of the header, then copies
//!   every body flit to its host **while** forwarding it;
//! * that is the last destination ([`Disposition::AbsorbOnly`]) strips its
//!   address and the terminator and copies the body to its host.
//!
//! Flits are 64-bit words; a header flit holds a node id. The end of the
//! message is signalled out of band (the tail), as in the thesis.

use super::utpr::Utpr;
use crate::topo::{Channel, Vc};

/// What a router does with a worm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Disposition {
    /// A destination that is not the last: copy the body to the host and
    /// forward the worm.
    AbsorbAndForward,
    /// The last destination: copy the body to the host only.
    AbsorbOnly,
    /// Not a destination: forward everything.
    ForwardOnly,
}

/// The disposition of a worm whose first two flits are `first`, `second`
/// (`second` is needed only when `first` is this node) at `node`.
pub fn disposition(node: u64, first: u64, second: Option<u64>) -> Option<Disposition> {
    if first != node {
        return Some(Disposition::ForwardOnly);
    }
    match second {
        None => None,
        Some(s) if s == first => Some(Disposition::AbsorbOnly),
        Some(_) => Some(Disposition::AbsorbAndForward),
    }
}

/// What to do with one arriving flit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlitOut {
    /// Send this flit on the output channel ([`Forwarder::out_channel`]).
    pub forward: Option<u64>,
    /// Hand this flit to the local host.
    pub local: Option<u64>,
}

/// A header flit that is not a node of the fabric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForwardError {
    /// The address is not a node.
    #[error("header flit {0} is not a node of the fabric")]
    BadAddress(u64),
    /// The forwarder was given a node outside the fabric or a VC set other
    /// than p or h.
    #[error("bad forwarder setup: {0}")]
    Setup(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the first flit.
    First,
    /// This node is the first address; waiting for the second.
    Second,
    /// A destination forwarding the rest of the header; `prev` is the last
    /// header flit seen.
    Header { prev: u64 },
    /// Body flits.
    Body,
}

/// Fig 5.10 for one worm at one node.
#[derive(Debug, Clone)]
pub struct Forwarder<'a> {
    utpr: Utpr<'a>,
    node: usize,
    alpha: Vc,
    state: State,
    disposition: Option<Disposition>,
    out: Option<Channel>,
}

impl<'a> Forwarder<'a> {
    /// A forwarder at `node` for a worm arriving on VC set `alpha_in`
    /// ([`Vc::P`] for a worm injected by the local host).
    ///
    /// # Errors
    /// [`ForwardError::Setup`].
    pub fn new(utpr: Utpr<'a>, node: usize, alpha_in: Vc) -> Result<Forwarder<'a>, ForwardError> {
        if utpr.check(node).is_err() {
            return Err(ForwardError::Setup("node outside the fabric"));
        }
        if !matches!(alpha_in, Vc::P | Vc::H) {
            return Err(ForwardError::Setup("the VC set must be p or h"));
        }
        Ok(Forwarder {
            utpr,
            node,
            alpha: alpha_in,
            state: State::First,
            disposition: None,
            out: None,
        })
    }

    /// The disposition, once the header flits that decide it have arrived.
    pub fn disposition(&self) -> Option<Disposition> {
        self.disposition
    }

    /// The output channel (R_UTPR towards the next destination), once known;
    /// `None` for the last destination.
    pub fn out_channel(&self) -> Option<Channel> {
        self.out
    }

    fn address(&self, flit: u64) -> Result<usize, ForwardError> {
        usize::try_from(flit)
            .ok()
            .filter(|&n| n < self.utpr.topology().nodes())
            .ok_or(ForwardError::BadAddress(flit))
    }

    fn route_to(&mut self, next: u64) -> Result<(), ForwardError> {
        let v = self.address(next)?;
        self.out = self.utpr.next_unchecked(self.node, self.alpha, v);
        Ok(())
    }

    /// Feed the next flit of the worm.
    ///
    /// # Errors
    /// [`ForwardError::BadAddress`] when a header flit the router must route
    /// on is not a node.
    pub fn on_flit(&mut self, flit: u64) -> Result<FlitOut, ForwardError> {
        let me = self.node as u64;
        let mut out = FlitOut::default();
        match self.state {
            State::First => {
                if flit == me {
                    self.state = State::Second;
                } else {
                    self.disposition = Some(Disposition::ForwardOnly);
                    self.route_to(flit)?;
                    out.forward = Some(flit);
                    self.state = State::Body;
                }
            }
            State::Second => {
                if flit == me {
                    self.disposition = Some(Disposition::AbsorbOnly);
                    self.state = State::Body;
                } else {
                    self.disposition = Some(Disposition::AbsorbAndForward);
                    self.route_to(flit)?;
                    out.forward = Some(flit);
                    self.state = State::Header { prev: flit };
                }
            }
            State::Header { prev } => {
                out.forward = Some(flit);
                self.state = if flit == prev {
                    State::Body
                } else {
                    State::Header { prev: flit }
                };
            }
            State::Body => match self.disposition {
                Some(Disposition::ForwardOnly) => out.forward = Some(flit),
                Some(Disposition::AbsorbOnly) => out.local = Some(flit),
                _ => {
                    out.forward = Some(flit);
                    out.local = Some(flit);
                }
            },
        }
        Ok(out)
    }
}

/// Run a worm through the routers of the fabric flit by flit with
/// [`Forwarder`]s, starting at `source` with the simple header `header`
/// (addresses, last duplicated) followed by `body`. Returns the channels
/// taken and, per node that absorbed the body, what it absorbed, in order.
/// A reference for the emulator's switch engine and for tests.
///
/// # Errors
/// [`ForwardError`] from any router.
#[allow(clippy::type_complexity)]
pub fn run_worm(
    utpr: Utpr<'_>,
    source: usize,
    header: &[u64],
    body: &[u64],
) -> Result<(Vec<Channel>, Vec<(usize, Vec<u64>)>), ForwardError> {
    // The source's own router routes on the first flit (locally injected: p).
    let mut flits: Vec<u64> = header.iter().chain(body).copied().collect();
    let mut at = source;
    let mut alpha = Vc::P;
    let mut hops = Vec::new();
    let mut absorbed = Vec::new();
    let mut injected = true;
    let limit = utpr.topology().nodes() * 2 + 2;
    loop {
        let mut fw = Forwarder::new(utpr, at, alpha)?;
        if injected {
            // The injecting host is not a destination of its own worm.
            injected = false;
            if flits.first() == Some(&(at as u64)) {
                return Err(ForwardError::Setup("the source is in its own header"));
            }
        }
        let mut next = Vec::with_capacity(flits.len());
        let mut local = Vec::new();
        for &f in &flits {
            let o = fw.on_flit(f)?;
            next.extend(o.forward);
            local.extend(o.local);
        }
        if matches!(
            fw.disposition(),
            Some(Disposition::AbsorbOnly | Disposition::AbsorbAndForward)
        ) {
            absorbed.push((at, local));
        }
        match fw.out_channel() {
            Some(c) if !next.is_empty() => {
                hops.push(c);
                if hops.len() > limit {
                    return Err(ForwardError::Setup("the worm does not terminate"));
                }
                alpha = c.vc;
                at = utpr.up(c.node, c.dim);
                flits = next;
            }
            _ => return Ok((hops, absorbed)),
        }
    }
}
