//! A whole packet: header, route and payload.

use bytes::{Bytes, BytesMut};

use super::{Header, Route, ShmDesc, WireError, FLAG_SHM, HEADER_LEN};

/// A whole packet: header, route and payload (shared, zero-copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub header: Header,
    pub route: Route,
    pub payload: Bytes,
}

/// Encode the header and route of a packet with `header`, `route` and a
/// payload of `payload_len` bytes (see [`Packet::encode_head`]; also for a
/// packet whose payload is still the caller's slice).
pub fn encode_head(header: Header, route: &Route, payload_len: usize, out: &mut BytesMut) {
    sized(header, route, payload_len).encode(out);
    route.encode(out);
}

/// `header` with the kind and length of `route` and the payload's length.
fn sized(header: Header, route: &Route, payload_len: usize) -> Header {
    let mut h = header;
    h.route_kind = route.kind_byte();
    h.route_len = route.encoded_len() as u32;
    h.payload_len = payload_len as u32;
    h
}

/// Longest head [`encode_head_array`] builds: a header and a range route.
pub const FIXED_HEAD_MAX: usize = HEADER_LEN + 16;

/// [`encode_head`] on the stack, for a packet without a route or with a
/// range route (`None` for a list route, whose length varies): the bytes
/// and how many of them are the head.
pub fn encode_head_array(
    header: Header,
    route: &Route,
    payload_len: usize,
) -> Option<([u8; FIXED_HEAD_MAX], usize)> {
    let mut b = [0u8; FIXED_HEAD_MAX];
    b[..HEADER_LEN].copy_from_slice(&sized(header, route, payload_len).to_bytes());
    match route {
        Route::None => Some((b, HEADER_LEN)),
        _ => {
            b[HEADER_LEN..].copy_from_slice(&route.fixed_bytes()?);
            Some((b, FIXED_HEAD_MAX))
        }
    }
}

impl Packet {
    /// Encode the header and route (the payload is written separately, so a
    /// vectored write sends it without copying). Fills in route_kind, route_len
    /// and payload_len.
    pub fn encode_head(&self, out: &mut BytesMut) {
        encode_head(self.header, &self.route, self.payload.len(), out);
    }

    /// Encode the packet with the descriptor `d` in place of its payload:
    /// header (flagged), route, then the 24 descriptor bytes.
    pub fn encode_head_shm(&self, out: &mut BytesMut, d: &ShmDesc) {
        let start = out.len();
        sized(self.header, &self.route, ShmDesc::LEN).encode(out);
        out[start + 7] = FLAG_SHM;
        self.route.encode(out);
        out.extend_from_slice(&d.encode());
    }

    /// Decode a whole packet from one contiguous buffer (used by tests and fuzzing;
    /// the TCP driver reads the three parts separately).
    pub fn decode(b: &Bytes) -> Result<Packet, WireError> {
        let header = Header::decode(b)?;
        let rl = header.route_len as usize;
        let pl = header.payload_len as usize;
        let need = HEADER_LEN + rl + pl;
        if b.len() != need {
            return Err(WireError::Field(format!(
                "packet of {} bytes, header says {need}",
                b.len()
            )));
        }
        let route = Route::decode(header.route_kind, &b[HEADER_LEN..HEADER_LEN + rl])?;
        Ok(Packet {
            header,
            route,
            payload: b.slice(HEADER_LEN + rl..),
        })
    }
}
