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
//! Heartbeat and Bye packets are built here too ([`signal`], [`bye`]), the
//! only place, and every goodbye, from a peer or relayed by the fabric, is
//! taken here ([`Intake::goodbye`]): a finalized rank closes in order; a
//! rank that left without `finalize` is lost from the collective it left
//! at; a peer that expelled this rank cuts it off (README "Failure
//! semantics").

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

pub(crate) use super::link::Host;
use crate::error::Error;
use crate::inbox::Inbox;
use crate::wire::{Goodbye, Header, Kind, Packet, Route};

/// Why a rank that departed without `finalize` is lost.
pub(crate) const LEFT_WITHOUT_FINALIZE: &str =
    "left without finalize (it dropped its communicator or returned from main)";

/// Checks and dispatches the packets of one job.
#[derive(Clone)]
pub(crate) struct Intake {
    host: Arc<dyn Host>,
    job: u32,
    size: usize,
    /// This rank.
    me: usize,
}

impl Intake {
    pub(crate) fn new(host: Arc<dyn Host>, job: u32, size: usize, me: usize) -> Intake {
        Intake {
            host,
            job,
            size,
            me,
        }
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
            Kind::Bye => {
                let g =
                    Goodbye::decode(&p.payload).map_err(|e| format!("malformed goodbye: {e}"))?;
                self.goodbye(from, g);
            }
            Kind::Control => self.host.control_in(from, &p.payload)?,
            Kind::Bcast | Kind::Multicast | Kind::P2p | Kind::Msg => data(&*self.host, p)?,
        }
        Ok(kind)
    }
}

impl Intake {
    /// Rank `from` said goodbye (on its connection, or through the fabric).
    pub(crate) fn goodbye(&self, from: usize, g: Goodbye) {
        let inbox = self.inbox();
        match &g {
            Goodbye::Finalized => inbox.mark_bye(from),
            Goodbye::Departed { next, cause, .. } => {
                // What made it leave, first: the error then names the rank
                // that failed, not the one that left because of it.
                if let Some(c) = cause.map(|c| c as usize).filter(|&c| c < self.size) {
                    let why = format!("reported lost by rank {from}, which then left");
                    inbox.departed(c, next, 0, why);
                }
                let sent = g.sent_to(self.me);
                inbox.departed(from, next, sent, LEFT_WITHOUT_FINALIZE.into());
                inbox.mark_bye(from);
            }
            Goodbye::Expelled { reason } => {
                // Not a loss of `from` (which is alive and well): this rank
                // is the one gone, as far as the job is concerned.
                inbox.mark_bye(from);
                inbox.fatal(expelled(&format!("rank {from}"), reason));
            }
        }
    }
}

/// The error of a rank that `who` declared lost for `reason`.
pub(crate) fn expelled(who: &str, reason: &str) -> Error {
    Error::Stopped(format!(
        "{who} declared this rank lost ({reason}); it is cut off from the job"
    ))
}

/// The encoded Heartbeat packet of rank `me` in job `job`.
pub(crate) fn signal(kind: Kind, job: u32, me: usize) -> Bytes {
    debug_assert!(matches!(kind, Kind::Heartbeat));
    encoded(kind, job, me, Bytes::new())
}

/// The encoded Bye packet of rank `me` in job `job`, saying `g`.
pub(crate) fn bye(job: u32, me: usize, g: &Goodbye) -> Bytes {
    encoded(Kind::Bye, job, me, Bytes::from(g.encode()))
}

fn encoded(kind: Kind, job: u32, me: usize, payload: Bytes) -> Bytes {
    let p = Packet {
        header: Header::new(kind, job, 0, me as u32, me as u32, payload.len() as u64),
        route: Route::None,
        payload,
    };
    let mut b = BytesMut::new();
    p.encode_head(&mut b);
    b.extend_from_slice(&p.payload);
    b.freeze()
}

/// A driver for tests that records the data packets that reach it.
#[cfg(test)]
pub(super) mod probe {
    use std::sync::Mutex;

    use super::Host;
    use crate::inbox::{Inbox, Stamp};
    use crate::net::link::Ambient;
    use crate::wire::Packet;

    pub(crate) struct Probe {
        pub(crate) inbox: Inbox,
        pub(crate) got: Mutex<Vec<(usize, Packet)>>,
    }

    impl Probe {
        pub(crate) fn new() -> Probe {
            Probe {
                inbox: Inbox::new(0, 1 << 20),
                got: Mutex::new(Vec::new()),
            }
        }
    }

    impl Host for Probe {
        fn inbox(&self) -> &Inbox {
            &self.inbox
        }
        fn control_in(&self, _from: usize, _payload: &[u8]) -> Result<(), String> {
            Err("no control here".into())
        }
        fn engine_in(&self, from: usize, p: Packet, _amb: Ambient) -> Result<(), String> {
            crate::sync::lock(&self.got).push((from, p));
            Ok(())
        }
        fn deliver(&self, _p: Packet, _stamp: Option<Stamp>) {}
    }
}

#[cfg(test)]
mod tests {
    use super::probe::Probe;
    use super::*;
    use crate::net::link::Ambient;

    fn intake() -> (Arc<Probe>, Intake) {
        let probe = Arc::new(Probe::new());
        (probe.clone(), Intake::new(probe, 7, 4, 0))
    }

    fn packet(kind: Kind, job: u32, source: u32) -> Packet {
        Packet {
            header: Header::new(kind, job, 0, source, source, 0),
            route: Route::None,
            payload: Bytes::new(),
        }
    }

    #[test]
    fn headers_are_checked_for_job_source_and_connection() {
        let (_, i) = intake();
        let h = |job, src| packet(Kind::P2p, job, src).header;
        assert_eq!(i.check(&h(7, 2), Some(2)), Ok(2));
        assert!(i.check(&h(7, 2), Some(3)).is_err());
        assert!(i.check(&h(8, 2), Some(2)).is_err());
        assert_eq!(i.check(&h(7, 3), None), Ok(3));
        assert!(i.check(&h(7, 4), None).is_err());
        assert!(i.check(&h(6, 1), None).is_err());
    }

    #[test]
    fn each_kind_is_dispatched_once_to_its_place() {
        let (probe, i) = intake();
        let data = |host: &dyn Host, p: Packet| host.engine_in(1, p, Ambient::Idle);
        assert_eq!(
            i.dispatch(1, packet(Kind::Heartbeat, 7, 1), data),
            Ok(Kind::Heartbeat)
        );
        assert!(!probe.inbox.said_bye(1));
        assert!(i.dispatch(1, packet(Kind::Bye, 7, 1), data).is_err());
        let fin = Packet::decode(&bye(7, 1, &Goodbye::Finalized)).unwrap();
        assert_eq!(i.dispatch(1, fin, data), Ok(Kind::Bye));
        assert!(probe.inbox.said_bye(1));
        assert!(probe.inbox.lost_ranks().is_empty());
        assert!(i.dispatch(1, packet(Kind::Control, 7, 1), data).is_err());
        assert_eq!(i.dispatch(1, packet(Kind::P2p, 7, 1), data), Ok(Kind::P2p));
        let got = probe.got.lock().unwrap();
        let kinds: Vec<(usize, Kind)> = got.iter().map(|(f, p)| (*f, p.header.kind)).collect();
        assert_eq!(kinds, vec![(1, Kind::P2p)]);
    }

    #[test]
    fn heartbeat_and_bye_packets_decode_as_sent() {
        let p = Packet::decode(&signal(Kind::Heartbeat, 7, 3)).unwrap();
        assert_eq!(p.header.kind, Kind::Heartbeat);
        assert_eq!((p.header.job, p.header.source, p.header.root), (7, 3, 3));
        assert!(p.payload.is_empty() && p.route == Route::None);
        let g = Goodbye::departed([12], [(0, 3)], None);
        let p = Packet::decode(&bye(7, 3, &g)).unwrap();
        assert_eq!(p.header.kind, Kind::Bye);
        assert_eq!(Goodbye::decode(&p.payload), Ok(g));
    }

    #[test]
    fn a_departure_fails_collectives_from_where_it_left_and_an_expulsion_everything() {
        let (probe, i) = intake();
        let g = |x| Packet::decode(&bye(7, 2, &x)).unwrap();
        let data = |host: &dyn Host, p: Packet| host.engine_in(2, p, Ambient::Idle);
        i.dispatch(2, g(Goodbye::departed([5], [], None)), data)
            .unwrap();
        assert_eq!(probe.inbox.lost_ranks(), vec![2]);
        let fp = crate::control::Fingerprint::barrier();
        assert!(probe.inbox.begin(4, fp).is_ok());
        let e = probe.inbox.begin(5, fp).map_err(|e| e.0).unwrap_err();
        assert_eq!(e.rank(), Some(2));
        assert!(e.to_string().contains("left without finalize"), "{e}");
        assert!(probe.inbox.check_dests(&[2]).is_err());
        let reason = "no data and no heartbeat for 1.8s".to_string();
        i.dispatch(1, g(Goodbye::Expelled { reason }), data)
            .unwrap();
        let e = probe.inbox.check_dests(&[3]).unwrap_err();
        assert!(
            e.to_string()
                .contains("rank 1 declared this rank lost (no data"),
            "{e}"
        );
    }
}
