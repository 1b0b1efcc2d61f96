//! The fixed 64-byte header and the shared-memory descriptor.

use bytes::BytesMut;

use super::WIRE_VERSION;
use super::{u32_at, u64_at, WireError, FLAG_SHM, HEADER_LEN, MAGIC, MAX_PAYLOAD, MAX_ROUTE};

/// A payload left in a shared-memory arena of the host: `len` bytes at
/// offset `data` of rank `owner`'s arena, inside the slot at offset `slot`.
/// Encoded as 24 bytes: u32 owner, u32 len, u64 slot, u64 data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmDesc {
    pub owner: u32,
    pub len: u32,
    pub slot: u64,
    pub data: u64,
}

impl ShmDesc {
    /// Encoded size.
    pub const LEN: usize = 24;

    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&self.owner.to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.slot.to_le_bytes());
        b[16..24].copy_from_slice(&self.data.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<ShmDesc, WireError> {
        let b: &[u8; Self::LEN] = b.try_into().map_err(|_| {
            WireError::Field(format!("shared-memory descriptor of {} bytes", b.len()))
        })?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(x)
        };
        let d = ShmDesc {
            owner: u32_at(0),
            len: u32_at(4),
            slot: u64_at(8),
            data: u64_at(16),
        };
        if d.len as usize > MAX_PAYLOAD {
            return Err(WireError::Field(format!(
                "shared-memory payload of {} bytes",
                d.len
            )));
        }
        Ok(d)
    }
}

/// Bits of a sequence number below its communicator id: every numbered
/// stream (collectives, multicasts, messages) is counted per communicator,
/// and `seq >> COMM_SHIFT` is the communicator that counts it (2^40 calls
/// per communicator, 2^24 communicators).
pub const COMM_SHIFT: u32 = 40;

/// The communicator id a sequence number belongs to.
pub fn comm_of(seq: u64) -> u32 {
    (seq >> COMM_SHIFT) as u32
}

/// The first sequence number of communicator `comm`.
pub fn comm_base(comm: u32) -> u64 {
    u64::from(comm) << COMM_SHIFT
}

/// What a packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Bcast = 1,
    Multicast = 2,
    P2p = 3,
    Bye = 4,
    /// Rank-to-rank control: mismatch probes and notices (see `control`).
    Control = 5,
    /// "Still alive": sent on an otherwise idle connection.
    Heartbeat = 6,
    /// The user's point-to-point message (`Comm::send`), straight to its
    /// destination: `seq` numbers the source's sends to that destination.
    Msg = 7,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Bcast,
            2 => Kind::Multicast,
            3 => Kind::P2p,
            4 => Kind::Bye,
            5 => Kind::Control,
            6 => Kind::Heartbeat,
            7 => Kind::Msg,
            _ => return None,
        })
    }
}

/// The fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub job: u32,
    pub comm: u32,
    pub seq: u64,
    pub source: u32,
    pub root: u32,
    pub msg_len: u64,
    pub offset: u64,
    pub pkt_idx: u32,
    pub pkt_count: u32,
    pub payload_len: u32,
    pub route_kind: u8,
    pub route_len: u32,
}

impl Header {
    /// The header of a one-packet message of `msg_len` bytes (offset 0; route
    /// and payload lengths are filled in when the packet is encoded).
    pub fn new(kind: Kind, job: u32, seq: u64, source: u32, root: u32, msg_len: u64) -> Header {
        Header {
            kind,
            job,
            comm: comm_of(seq),
            seq,
            source,
            root,
            msg_len,
            offset: 0,
            pkt_idx: 0,
            pkt_count: 1,
            payload_len: 0,
            route_kind: 0,
            route_len: 0,
        }
    }

    /// Encode into `out` (exactly [`HEADER_LEN`] bytes): built on the stack
    /// and appended at once (a `put_*` per field cost a capacity check and
    /// a call each: about 750 instructions a header).
    pub fn encode(&self, out: &mut BytesMut) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The encoding as an array.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = WIRE_VERSION;
        b[5] = self.kind as u8;
        b[6] = self.route_kind;
        b[7] = 0;
        b[8..12].copy_from_slice(&self.job.to_le_bytes());
        b[12..16].copy_from_slice(&self.comm.to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..28].copy_from_slice(&self.source.to_le_bytes());
        b[28..32].copy_from_slice(&self.root.to_le_bytes());
        b[32..40].copy_from_slice(&self.msg_len.to_le_bytes());
        b[40..48].copy_from_slice(&self.offset.to_le_bytes());
        b[48..52].copy_from_slice(&self.pkt_idx.to_le_bytes());
        b[52..56].copy_from_slice(&self.pkt_count.to_le_bytes());
        b[56..60].copy_from_slice(&self.payload_len.to_le_bytes());
        b[60..64].copy_from_slice(&self.route_len.to_le_bytes());
        b
    }

    /// Decode and validate a fixed header from the first [`HEADER_LEN`] bytes.
    /// Decode a header that may carry [`FLAG_SHM`]; returns the flags too.
    /// (`decode` itself accepts only flags 0.)
    pub fn decode_flagged(b: &[u8]) -> Result<(Header, u8), WireError> {
        if b.len() >= HEADER_LEN && b[7] == FLAG_SHM {
            let mut copy = [0u8; HEADER_LEN];
            copy.copy_from_slice(&b[..HEADER_LEN]);
            copy[7] = 0;
            let h = Header::decode(&copy)?;
            if h.payload_len as usize != ShmDesc::LEN {
                return Err(WireError::Field(format!(
                    "shared-memory descriptor of {} bytes",
                    h.payload_len
                )));
            }
            return Ok((h, FLAG_SHM));
        }
        Header::decode(b).map(|h| (h, 0))
    }

    pub fn decode(b: &[u8]) -> Result<Header, WireError> {
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated {
                need: HEADER_LEN,
                have: b.len(),
            });
        }
        let magic = [b[0], b[1], b[2], b[3]];
        if magic != MAGIC {
            return Err(WireError::BadMagic(magic));
        }
        if b[4] != WIRE_VERSION {
            return Err(WireError::Version(b[4]));
        }
        let kind = Kind::from_u8(b[5]).ok_or(WireError::Kind(b[5]))?;
        // Reserved bytes must be zero, so every accepted header has exactly
        // one encoding (the fuzzers check re-encoding byte for byte).
        if b[7] != 0 {
            return Err(WireError::Field(format!("reserved flags {:#04x}", b[7])));
        }
        let route_kind = b[6];
        if route_kind > 2 {
            return Err(WireError::RouteKind(route_kind));
        }
        let h = Header {
            kind,
            route_kind,
            job: u32_at(b, 8),
            comm: u32_at(b, 12),
            seq: u64_at(b, 16),
            source: u32_at(b, 24),
            root: u32_at(b, 28),
            msg_len: u64_at(b, 32),
            offset: u64_at(b, 40),
            pkt_idx: u32_at(b, 48),
            pkt_count: u32_at(b, 52),
            payload_len: u32_at(b, 56),
            route_len: u32_at(b, 60),
        };
        if h.comm != comm_of(h.seq) {
            return Err(WireError::Field(format!(
                "communicator {} with sequence number {:#x} (of communicator {})",
                h.comm,
                h.seq,
                comm_of(h.seq)
            )));
        }
        if h.payload_len as usize > MAX_PAYLOAD {
            return Err(WireError::Field(format!(
                "payload_len {} exceeds {MAX_PAYLOAD}",
                h.payload_len
            )));
        }
        if h.route_len as usize > MAX_ROUTE {
            return Err(WireError::Field(format!(
                "route_len {} exceeds {MAX_ROUTE}",
                h.route_len
            )));
        }
        if !matches!(h.kind, Kind::Bye | Kind::Heartbeat)
            && (h.pkt_count == 0 || h.pkt_idx >= h.pkt_count)
        {
            return Err(WireError::Field(format!(
                "packet {} of {}",
                h.pkt_idx, h.pkt_count
            )));
        }
        match h.offset.checked_add(h.payload_len as u64) {
            Some(end) if end <= h.msg_len => {}
            _ => {
                return Err(WireError::Field(format!(
                    "payload [{}, +{}) outside message of {} bytes",
                    h.offset, h.payload_len, h.msg_len
                )))
            }
        }
        Ok(h)
    }
}
