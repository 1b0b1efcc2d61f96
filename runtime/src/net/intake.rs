//! One intake for every packet a link hands over, whatever the transport.
//!
//! A reader first has the header checked ([`Intake::check`]: this job, a
//! rank of it, and on a per-peer connection the peer the connection belongs
//! to), once, as soon as it has the header; then it hands the whole packet to
//! [`Intake::dispatch`], which takes heartbeats, goodbyes and control
//! messages itself and gives a data packet to the reader's own last step
//! (opening a shared-memory descriptor, charging model time), which passes it
//! on to the engine through [`Host`].
//!
//! The driver implements [`Host`] (defined with the seam in `link`); this
//! module and the transports know it only by that trait, so no transport
//! imports the driver.
//!
//! Heartbeat and Bye packets are built here too ([`signal`]), the only place.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

pub(crate) use super::link::Host;
use crate::inbox::Inbox;
use crate::wire::{Header, Kind, Packet, Route};

/// Checks and dispatches the packets of one job.
#[derive(Clone)]
pub(crate) struct Intake {
    host: Arc<dyn Host>,
    job: u32,
    size: usize,
}

impl Intake {
    pub(crate) fn new(host: Arc<dyn Host>, job: u32, size: usize) -> Intake {
        Intake { host, job, size }
    }

    pub(crate) fn inbox(&self) -> &Inbox {
        self.host.inbox()
    }

    /// Check a header before anything else of its packet is read: returns
    /// the sending rank. `peer` is the rank a per-peer connection belongs to
    /// (`None` on a link that carries every peer's packets).
    pub(crate) fn check(&self, h: &Header, peer: Option<usize>) -> Result<usize, String> {
        let from = h.source as usize;
        match peer {
            Some(peer) if h.job != self.job || from != peer => Err(format!(
                "header of job {:#x} from rank {} on rank {peer}'s connection",
                h.job, h.source
            )),
            None if h.job != self.job || from >= self.size => Err(format!(
                "a packet of job {:#x} from rank {from} (this is job {:#x} of {} ranks)",
                h.job, self.job, self.size
            )),
            _ => Ok(from),
        }
    }

    /// Take a checked packet from rank `from`: heartbeats and goodbyes are
    /// noted, control messages go to the host memory, and a data packet goes
    /// through `data` (the reader's last step, which ends in
    /// [`Host::engine_in`] or [`Host::deliver`]). Returns the packet's kind;
    /// `Err` says how the sender broke the protocol.
    pub(crate) fn dispatch(
        &self,
        from: usize,
        p: Packet,
        data: impl FnOnce(&dyn Host, Packet) -> Result<(), String>,
    ) -> Result<Kind, String> {
        let kind = p.header.kind;
        match kind {
            Kind::Heartbeat => {}
            Kind::Bye => self.inbox().mark_bye(from),
            Kind::Control => self.host.control_in(from, &p.payload)?,
            Kind::Bcast | Kind::Multicast | Kind::P2p => data(&*self.host, p)?,
        }
        Ok(kind)
    }
}

/// The encoded Heartbeat or Bye packet of rank `me` in job `job`.
pub(crate) fn signal(kind: Kind, job: u32, me: usize) -> Bytes {
    debug_assert!(matches!(kind, Kind::Heartbeat | Kind::Bye));
    let p = Packet {
        header: Header::new(kind, job, 0, me as u32, me as u32, 0),
        route: Route::None,
        payload: Bytes::new(),
    };
    let mut b = BytesMut::new();
    p.encode_head(&mut b);
    b.freeze()
}
