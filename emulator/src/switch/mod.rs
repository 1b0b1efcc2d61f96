//! The sans-IO switch engine: one [`SwitchEngine`] per emulated switch.
//!
//! # Model
//! Input-buffered, cut-through, at **packet-train granularity** (virtual
//! cut-through): every input port has `vcs` virtual-channel FIFOs of
//! `buf` flits; a packet's head is routed `t_r` cycles after it reaches the
//! front of its FIFO (the routing of the next head overlaps the previous
//! tail); an output port sends one packet at a time and holds its link for
//! `ser = ceil(L/b)` cycles; a packet may start on an output VC only when
//! that downstream VC buffer has credits for the whole packet. Credits for a
//! packet go back upstream when its tail has left the buffer.
//!
//! **Replication** is asynchronous [Sivaram 1998, §5.1.2, §6.2]: the routing function
//! may return several branches; each branch waits for its own output port
//! and VC, independently of the others, so a blocked branch does not stall
//! the rest. The packet's chunk counter is its number of unsent branches;
//! the buffer space is freed (and credits returned) when the last branch
//! has read the tail.
//!
//! **VC classes**: the routing function names a class per branch; the
//! engine maps class `c` of `C` to the VCs `[c·V/C, (c+1)·V/C)`. Tori with
//! the dateline have two classes (p before the wrap; h or l after it,
//! [Robinson 1994, §4.2.1, Fig 4.2; §4.2.2, Fig 4.3]); other fabrics one.
//!
//! # Events and actions
//! Events in: [`SwitchEngine::packet_in`] (a head arrived on port p, VC v,
//! at virtual time t), [`SwitchEngine::credit_in`] (credits returned for an
//! output VC), [`SwitchEngine::timer`] (a timer the engine asked for).
//! Actions out ([`SwAction`]): send on a port and VC at a time (the driver
//! adds the link delay), deliver to a host port at a time, return credits
//! upstream on an input port, arm a timer, drop a packet whose header does
//! not route. The discrete-event simulator ([`crate::sim`]) runs these
//! engines in one process; a socket driver can run the same engines with
//! timestamps carried in the packets.

mod engine;
mod params;
pub mod routing;

pub use engine::{SwitchEngine, WormNote};
pub use params::{link_tables, SwitchParams, Switching};
pub use routing::{Out, PortLink, Routing, SwitchHeader, SwitchRouteError};

/// Virtual time in cycles.
pub type Time = u64;

/// A packet in the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchPacket {
    /// The driver's identifier (copies of a replicated packet keep it).
    pub id: u64,
    /// Where it goes.
    pub header: SwitchHeader,
}

/// What the engine asks its driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwAction {
    /// The head of `packet` leaves on `port`, output VC `vc`, at `at`; the
    /// tail follows `ser` cycles later.
    Send {
        /// Output port.
        port: u16,
        /// Downstream VC.
        vc: u16,
        /// Departure of the head.
        at: Time,
        /// The copy.
        packet: SwitchPacket,
    },
    /// The head of `packet` leaves for the host on `port` at `at`.
    Deliver {
        /// Host port.
        port: u16,
        /// Departure of the head.
        at: Time,
        /// The copy.
        packet: SwitchPacket,
    },
    /// `flits` credits for input `port`, VC `vc` go upstream at `at`.
    Credit {
        /// Input port.
        port: u16,
        /// Its VC.
        vc: u16,
        /// Credits.
        flits: u32,
        /// When the tail left.
        at: Time,
    },
    /// Call [`SwitchEngine::timer`] with `token` at `at`.
    Timer {
        /// When.
        at: Time,
        /// What.
        token: u32,
    },
    /// The header could not be routed; the packet is dropped.
    Drop {
        /// The packet.
        packet: SwitchPacket,
        /// Why.
        error: SwitchRouteError,
    },
}

/// A blocked channel, for the deadlock report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Blocked {
    /// The switch.
    pub switch: usize,
    /// The input port.
    pub in_port: u16,
    /// The input VC.
    pub in_vc: u16,
    /// The output port the head waits for.
    pub out_port: u16,
    /// The VC class it needs there.
    pub class: u8,
}

/// Drop a header. Every variant is named: the ones that own heap memory
/// hand it to the drop glue; the others own nothing (checked below), so
/// nothing runs for them (the drop glue of [`SwitchHeader`] would otherwise be an
/// out-of-line call on every hop). A new variant does not compile until it
/// is added here.
#[inline(always)]
fn drop_header(h: SwitchHeader) {
    match h {
        SwitchHeader::Irregular(b) => drop(b),
        SwitchHeader::Path(b) => drop(b),
        SwitchHeader::Unicast { dest: _ } | SwitchHeader::Min(_) | SwitchHeader::Consumed => {}
    }
}

// The variants `drop_header` does not drop own nothing.
const _: () = assert!(!std::mem::needs_drop::<mcast_algorithms::min::RegionHeader>());
