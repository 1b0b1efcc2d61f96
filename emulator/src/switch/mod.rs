//! The sans-IO switch engine: one [`SwitchEngine`] per emulated switch.
//!
//! # Model
//! Input-buffered, cut-through, at **packet-train granularity**: virtual
//! cut-through by default, wormhole with `switching = wormhole` (below).
//! Under VCT every input port has `vcs` virtual-channel FIFOs of
//! `buf` flits; a packet's head is routed `t_r` cycles after it reaches the
//! front of its FIFO (the routing of the next head overlaps the previous
//! tail); an output port sends one packet at a time and holds its link for
//! `ser = ceil(L/b)` cycles; a packet may start on an output VC only when
//! that downstream VC buffer has credits for the whole packet. Credits for a
//! packet go back upstream when its tail has left the buffer.
//!
//! **Replication** is asynchronous [Sivaram 1998, §5.1.2, §6.2]: the routing function
//! may return several branches; each branch waits for its own output port
//! and VC, independently of the others, so under VCT a blocked branch does
//! not stall the rest (for wormhole see below). The packet's chunk counter is its number of unsent branches;
//! the buffer space is freed (and credits returned) when the last branch
//! has read the tail.
//!
//! **VC classes**: the routing function names a class per branch; the
//! engine maps class `c` of `C` to the VCs `[c·V/C, (c+1)·V/C)`. Tori with
//! the dateline have two classes (p before the wrap; h or l after it,
//! [Robinson 1994, §4.2.1, Fig 4.2; §4.2.2, Fig 4.3]); other fabrics one.
//!
//! # Wormhole (`switching = wormhole`)
//! Wormhole switching [Robinson 1994, §2.2.2; Al-Dubai 2009, §4.2]: the
//! header flit leads and the rest follow in a pipeline; if the header
//! blocks, the worm stalls in place with a few flits per buffer and keeps
//! every channel it holds, from its head back to its tail. The buffers may
//! be smaller than a packet (`vc_buf_flits >= 1`, down to the papers'
//! single flit). The engine stays event-level (one event per packet per
//! hop); the flits are arithmetic. The rules:
//!
//! * **VC ownership (atomic allocation).** A head may take a downstream VC
//!   only when that VC's buffer is empty and its credits are all back:
//!   the packet takes `min(L, B)` credits ([`SwitchParams::need`]), i.e.
//!   the whole buffer when `B < L`, so a VC holds one packet from its head
//!   to its tail and packets never interleave on it. The head does not
//!   need room for the whole packet. (With `B >= L` a VC queues whole
//!   packets as under VCT, and the timing is VCT's.) So a single packet
//!   in an idle fabric takes VCT's time, and back-to-back packets on one
//!   VC take the time of VCT with one-packet buffers (slower than with
//!   bigger ones): the next head waits until the previous tail has left
//!   the buffer ahead and its credits are back (with more VCs it takes
//!   another).
//! * **Streaming and stalls.** A granted hop's link is charged `ceil(L/b)`
//!   cycles from the grant, as under VCT. The body follows the head at `b`
//!   flits per cycle; when the head stops, each hop behind it keeps
//!   sending until the buffer ahead holds `B` flits (flits in the link and
//!   routing pipelines, `b·(t_w + t_r)` per hop, are not charged to the
//!   buffer), then stops. So the tail leaves hop `e` (head leaving at
//!   `G_e`) at `T_e = max(G_e + ceil(L/b), G_d + ceil(r_d/b) for every
//!   hop d of the worm k hops below e with r_d = L − k·B − b·Σδ > 0,
//!   T_parent + δ)`, where `δ = t_w + t_r` (0 + t_r behind the injection
//!   link) per hop: the flits that k full buffers cannot hold must wait
//!   for the head `d` to move. An idle worm never stops (`G_d = G_e +
//!   Σδ`), so `T_e = G_e + ceil(L/b)` and the zero-load latency is VCT's,
//!   `H·(t_r + t_w) + ceil(L/b)`.
//! * **Holding.** The input buffer a worm passes is freed, and its
//!   credits go upstream, when its tail has left (at `max T` over the
//!   branches); until then its VC is unavailable to any other packet, so a
//!   blocked worm holds every channel it spans.
//! * **Replication.** Branches are still granted independently (a branch
//!   waits only for its own output), but the input buffer frees a flit
//!   only when every branch has read it: in the rule above, a branch's
//!   tail can leave no earlier than `δ` after its parent's tail has, and
//!   the parent's tail waits for every branch's head. So a blocked branch
//!   stops the others once the buffer behind it is full [Robinson 1994,
//!   §2.5: when one branch is blocked, progress on every branch is
//!   suspended], host branches (intermediate reception, deliver-and-
//!   forward) included. A host drains its ejection link at link rate (it
//!   never blocks).
//! * **Who computes the tails.** A tail depends on the head's later
//!   grants, up to the worm's span downstream, which one switch does not
//!   see. The driver tracks the worms (the simulator's tracker,
//!   `sim::worms`): the engine leaves a [`WormNote`] with every `Send`,
//!   `Deliver` and `Drop` (which input the copy came from), keeps the
//!   buffer after the last branch's grant, and frees it when the driver
//!   calls [`SwitchEngine::input_tail`]. A tail time is known before it
//!   falls due (it exceeds the grant that completes it; a packet dropped
//!   at routing is the exception, and its tail is clamped to now). The
//!   socket fabric does not track worms: it runs VCT only
//!   ([`SwitchParams::from_cost`] refuses wormhole).
//!
//! **What is exact:** every head and tail time is the closed form of the
//! rules above (a fluid model at `b` flits per cycle, in which a hop holds
//! at most `B` flits beyond its pipeline and a switch frees a flit when
//! every branch has read it); with `b = 1` the terms are whole flits. The
//! tests check the closed form against that flit recurrence solved flit by
//! flit on random worm trees (`b = 1`), and the simulator against
//! hand-derived cases (zero load on every fabric, a blocked unicast worm,
//! a blocked branch of a path worm). There is no independent
//! cycle-accurate router model here to compare with. **Approximated:** (1)
//! credits for the flits of a moving worm are not charged a round trip: a
//! worm streams at link rate with any `B` (hence the zero-load formula),
//! whereas a real router with `B` below the credit round trip throttles;
//! (2) a hop's link is charged `ceil(L/b)` cycles at the head's grant, so
//! VCs sharing a link are multiplexed packet by packet, and a stalled
//! worm's later flits take no link cycles from another VC's packet; (3)
//! with `b > 1` each term is rounded up to whole cycles; (4) VC
//! allocation is atomic (a real router may let a new head follow a tail
//! into the same buffer); (5) a packet dropped at routing frees its buffer
//! at once, as under VCT.
//!
//! **Deadlock**: a worm holding channels while its head waits is exactly
//! the channel dependency of Dally and Seitz [Robinson 1994, §2.4, Fig
//! 2.4]: one VC on a torus ring deadlocks under wormhole even with one
//! packet per node; the dateline classes do not. The watchdog
//! ([`crate::sim`]) names the waiting heads ([`SwitchEngine::blocked`]) and
//! the channels held behind them ([`SwitchEngine::held`]).
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
        SwitchHeader::Source(b) => drop(b),
        SwitchHeader::Unicast { dest: _ } | SwitchHeader::Min(_) | SwitchHeader::Consumed => {}
    }
}

// The variants `drop_header` does not drop own nothing.
const _: () = assert!(!std::mem::needs_drop::<mcast_algorithms::min::RegionHeader>());
