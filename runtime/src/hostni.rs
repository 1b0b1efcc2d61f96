//! One host/NI cost model [Sivaram 1998, §6.2], shared by the simulator
//! (`mcsim run`) and the runtime's fabric link.
//!
//! Sans-IO in quinn-proto's style: [`HostNiCosts`] owns no clock and no
//! resource; every call takes the model times it needs and the resource it
//! uses, and returns the model time the use ends. The resources are the
//! caller's, behind the [`Resource`] trait: the simulator, whose events come
//! in model-time order, uses [`BusyUntil`]; the fabric link, whose events
//! come in wall-clock order, uses [`crate::fabric::Timeline`] (each use takes
//! the earliest gap at or after its ready time).
//!
//! # The model (cycles)
//! * Host send: a message of `m` packets posted when the host clock reads
//!   `c` costs the host `t_hs` (a worm scheme pays it per worm); its packets
//!   are DMA'd to the NI one after another from `c + t_hs` (or when the DMA
//!   engine is free): packet `j` is in NI memory at `start + (j+1)·dma`
//!   ([`HostNiCosts::post`], [`Posted::in_ni`]).
//! * NI: one processor for sends and receives: `t_ns` per copy sent, from
//!   when its packet is in NI memory (or was received, when forwarding)
//!   ([`HostNiCosts::send`]), and `t_nr` per packet received, from its
//!   arrival ([`HostNiCosts::receive`]).
//! * Host receive: a delivered packet is DMA'd to host memory after the
//!   previous one ([`HostNiCosts::to_host`]); a message completes `t_hr`
//!   after its last packet is in ([`HostNiCosts::complete`]).
//!
//! Which DMA engine a host uses for each direction is the caller's choice:
//! the simulator has one per host for both directions, the fabric link one
//! per direction.

use crate::fabric::{FabricWelcome, Timeline};

/// A resource used for intervals of model time (a DMA engine, an NI
/// processor).
pub trait Resource {
    /// Use the resource for `dur` from the earliest time at or after `ready`
    /// it allows; returns when the use ends.
    fn take(&mut self, ready: u64, dur: u64) -> u64;
}

/// A resource whose uses come in model-time order: busy until `.0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BusyUntil(pub u64);

impl Resource for BusyUntil {
    fn take(&mut self, ready: u64, dur: u64) -> u64 {
        self.0 = self.0.max(ready) + dur;
        self.0
    }
}

impl Resource for Timeline {
    fn take(&mut self, ready: u64, dur: u64) -> u64 {
        Timeline::take(self, ready, dur)
    }
}

/// The host's and NI's costs, in cycles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostNiCosts {
    /// Host send overhead, once per message (per worm for worm schemes).
    pub t_hs: u64,
    /// Host ↔ NI DMA of one packet.
    pub dma: u64,
    /// NI send overhead, per copy.
    pub t_ns: u64,
    /// NI receive overhead, per packet.
    pub t_nr: u64,
    /// Host receive overhead, once per message.
    pub t_hr: u64,
}

impl From<&FabricWelcome> for HostNiCosts {
    fn from(w: &FabricWelcome) -> HostNiCosts {
        HostNiCosts {
            t_hs: w.t_hs,
            dma: w.dma,
            t_ns: w.t_ns,
            t_nr: w.t_nr,
            t_hr: w.t_hr,
        }
    }
}

/// A posted message's packets on their way to NI memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posted {
    /// The host clock after the post (`c + t_hs`).
    pub host: u64,
    /// When the DMA of the first packet started.
    pub start: u64,
    /// DMA time per packet.
    pub dma: u64,
}

impl Posted {
    /// When packet `j` (0-based) is in NI memory.
    pub fn in_ni(&self, j: usize) -> u64 {
        self.start + (j as u64 + 1) * self.dma
    }
}

impl HostNiCosts {
    /// The host posts `m` packets when its clock reads `host`: it pays
    /// `t_hs`, then `dma_out` carries the packets to the NI back to back.
    pub fn post(&self, dma_out: &mut impl Resource, host: u64, m: usize) -> Posted {
        let h = host + self.t_hs;
        let dur = m as u64 * self.dma;
        let start = dma_out.take(h, dur) - dur;
        Posted {
            host: h,
            start,
            dma: self.dma,
        }
    }

    /// The NI sends one copy of a packet it has from `avail`: when the copy
    /// leaves the NI (its injection time).
    pub fn send(&self, ni: &mut impl Resource, avail: u64) -> u64 {
        ni.take(avail, self.t_ns)
    }

    /// A packet's tail reached the NI at `arrival`: when the NI is done
    /// receiving it (and may forward it or hand it to the host).
    pub fn receive(&self, ni: &mut impl Resource, arrival: u64) -> u64 {
        ni.take(arrival, self.t_nr)
    }

    /// A packet the NI has from `ready` goes to the host by `dma_in`: when it
    /// is in host memory.
    pub fn to_host(&self, dma_in: &mut impl Resource, ready: u64) -> u64 {
        dma_in.take(ready, self.dma)
    }

    /// A message whose last packet is in host memory at `in_host` completes
    /// at the returned time.
    pub fn complete(&self, in_host: u64) -> u64 {
        in_host + self.t_hr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: HostNiCosts = HostNiCosts {
        t_hs: 10,
        dma: 3,
        t_ns: 2,
        t_nr: 4,
        t_hr: 7,
    };

    /// A post, its sends, a receive and the delivery, on busy-until
    /// resources and on timelines used in time order: the same times.
    #[test]
    fn busy_until_and_timeline_agree_in_time_order() {
        fn walk<R: Resource + Default>() -> Vec<u64> {
            let (mut dma, mut ni) = (R::default(), R::default());
            let p = C.post(&mut dma, 5, 3);
            let mut out = vec![p.host, p.start];
            for j in 0..3 {
                out.push(C.send(&mut ni, p.in_ni(j)));
            }
            let r = C.receive(&mut ni, 40);
            out.push(r);
            out.push(C.complete(C.to_host(&mut dma, r)));
            out
        }
        let busy = walk::<BusyUntil>();
        assert_eq!(busy, vec![15, 15, 20, 23, 26, 44, 54]);
        assert_eq!(walk::<Timeline>(), busy);
    }

    /// On a timeline a use earlier in model time that comes later fits in a
    /// gap before later uses; busy-until queues it behind them.
    #[test]
    fn timeline_backfills() {
        let mut t = Timeline::default();
        assert_eq!(C.receive(&mut t, 100), 104);
        assert_eq!(C.receive(&mut t, 10), 14);
        let mut b = BusyUntil::default();
        assert_eq!(C.receive(&mut b, 100), 104);
        assert_eq!(C.receive(&mut b, 10), 108);
    }
}
