//! The data-plane wire format: a fixed 64-byte little-endian header, then the
//! route header, then the payload. Decoding never panics: anything malformed is a
//! [`WireError`].
//!
//! ```text
//! off size field
//!   0  4   magic        b"MCST"
//!   4  1   version      WIRE_VERSION
//!   5  1   kind         1 bcast, 2 multicast, 3 point-to-point, 4 bye (payload:
//!                       a `Goodbye`: finalized, departed at seq N, or expelled),
//!                       5 control (payload: a postcard `control::Control`),
//!                       6 heartbeat (no route, no payload), 7 message (the
//!                       user's `send`; straight to its destination)
//!   6  1   route_kind   0 none, 1 range, 2 list
//!   7  1   flags        0, or FLAG_SHM (1): the payload is a 24-byte
//!                       `ShmDesc` naming bytes in a shared-memory arena
//!                       (Unix-domain links only; see `shm`)
//!   8  4   job          job id (from the job token)
//!  12  4   comm         communicator id (0 = world); always seq >> 40
//!  16  8   seq          collective sequence number (bcast, p2p), the source's
//!                       multicast number (multicast) or its number among the
//!                       source's messages to this destination (message),
//!                       each counted per communicator: bits 40.. are the
//!                       communicator id, bits 0..40 the count
//!  24  4   source       rank that put this packet on this hop
//!  28  4   root         rank the message originates from; for p2p the
//!                       message's index among those its source sends this
//!                       destination in the collective (< size); for a
//!                       message the source
//!  32  8   msg_len      whole message length in bytes
//!  40  8   offset       byte offset of this packet's payload in the message
//!  48  4   pkt_idx      packet index, < pkt_count
//!  52  4   pkt_count    packets in the message (>= 1; an empty message is one
//!                       empty packet)
//!  56  4   payload_len  payload bytes following the route header
//!  60  4   route_len    route header bytes following this header
//! ```
//!
//! Route headers carry the receiver's responsibility (DESIGN.md idea 3):
//!
//! ```text
//! range (kind 1, 16 bytes), for bcast over a whole communicator:
//!   0 u8  shape (0 flat, 1 k-binomial)   1 u8 reserved   2 u16 k
//!   4 u32 size: chain length; chain position p is rank (root + p) mod size
//!   8 u32 lo: the receiver's position    12 u32 hi: last position it covers
//! list (kind 2, 8 + 8*count bytes), for multicast to an arbitrary set (and
//! for bcast with a topology-aware tree):
//!   0 u8 tree (0 flat, 1 k-binomial, 2 U-torus, 3 U-cube, 4 Maxport,
//!        5 Combine, 6 W-sort)  1 u8 reserved  2 u16 k (k-binomial only)
//!   4 u32 count (>= 1)
//!   then count entries of (u32 rank, u32 ordinal); entry 0 is the receiver, the
//!   rest are the ranks it is responsible for, in chain order. `ordinal` numbers
//!   the multicasts from this source to that rank (0, 1, 2, ...), so each
//!   destination can deliver one source's multicasts in the order they were sent.
//! ```
//!
//! Files: `header.rs` (the fixed header, [`Kind`], [`ShmDesc`]), `bye.rs`
//! ([`Goodbye`], the body of a goodbye), `route.rs`
//! ([`Route`], [`Member`]; tree codes come from the leaf `tree_kind`),
//! `packet.rs` ([`Packet`]). `wire` imports nothing from the crate but that
//! leaf (ARCHITECTURE.md, "Layers").

mod bye;
mod header;
mod packet;
mod route;
#[cfg(test)]
mod tests;

pub use crate::tree_kind::{tree_code, MAX_K};
pub use bye::{next_in, Goodbye};
pub use header::{comm_base, comm_of, Header, Kind, ShmDesc, COMM_SHIFT};
pub use packet::{encode_head, encode_head_array, Packet, FIXED_HEAD_MAX};
pub use route::{Member, Route};

/// Header magic.
pub const MAGIC: [u8; 4] = *b"MCST";
/// Data-plane format version.
pub const WIRE_VERSION: u8 = 7;
/// Size of the fixed header.
pub const HEADER_LEN: usize = 64;
/// Largest payload one packet may carry (the wire format's payload length is
/// u32, but anything this big defeats pipelining); `config::MAX_PACKET_BYTES`.
pub const MAX_PAYLOAD: usize = 16 * 1024 * 1024;
/// Largest route header accepted (a list of ~1M ranks).
pub const MAX_ROUTE: usize = 8 * 1024 * 1024;

/// Header flag: the payload is a shared-memory descriptor.
pub const FLAG_SHM: u8 = 1;

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("bad magic {0:02x?}")]
    BadMagic([u8; 4]),
    #[error("unsupported wire version {0} (this build speaks {WIRE_VERSION})")]
    Version(u8),
    #[error("unknown packet kind {0}")]
    Kind(u8),
    #[error("unknown route kind {0}")]
    RouteKind(u8),
    #[error("unknown tree shape {0}")]
    Shape(u8),
    #[error("invalid field: {0}")]
    Field(String),
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}
