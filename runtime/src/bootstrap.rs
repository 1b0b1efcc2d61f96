//! Control plane between ranks and mclaunch's rendezvous: postcard messages in
//! length-prefixed frames (u32 little-endian length, then the postcard bytes).
//!
//! Protocol: each rank connects to `MCAST_RENDEZVOUS`, sends [`Hello`], and reads
//! one [`RendezvousReply`]. The rendezvous answers every rank once all `size`
//! ranks have said hello with the right token, or with `Failed` (naming the
//! missing ranks) when its deadline passes.

use std::io::{Read, Write};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::error::Error;

/// Version of the control and data protocols. Bumped on any incompatible change.
pub const PROTOCOL_VERSION: u16 = 2;

/// Largest control frame accepted (an address table for many thousands of ranks).
pub const MAX_CONTROL_FRAME: usize = 16 * 1024 * 1024;

/// A rank announcing itself to the rendezvous.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u16,
    pub token: String,
    pub rank: u32,
    pub size: u32,
    /// `ip:port` this rank accepts peer connections on.
    pub data_addr: String,
    pub pid: u32,
}

/// The rendezvous's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RendezvousReply {
    /// Everyone is here: `addrs[r]` is rank r's data address. `job` is an id
    /// shared by the whole job (carried in every data packet header).
    Table { job: u32, addrs: Vec<String> },
    /// The job cannot start; the message says why.
    Failed { reason: String },
}

/// The first frame on every peer-to-peer data connection, sent by both ends.
/// A connection whose token is not this job's is closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerHello {
    pub version: u16,
    pub token: String,
    pub rank: u32,
}

/// Write one length-prefixed postcard frame.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), Error> {
    let bytes = postcard::to_stdvec(msg)
        .map_err(|e| Error::Protocol(format!("cannot encode control message: {e}")))?;
    let len = u32::try_from(bytes.len())
        .map_err(|_| Error::Protocol("control message too large".into()))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&bytes)?;
    w.flush()?;
    Ok(())
}

/// Read one length-prefixed postcard frame. Never panics on malformed input.
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<T, Error> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_CONTROL_FRAME {
        return Err(Error::Protocol(format!(
            "control frame of {len} bytes exceeds the {MAX_CONTROL_FRAME}-byte limit"
        )));
    }
    // Grow with the bytes that actually arrive, so a hostile length prefix
    // costs nothing until the peer really sends that much.
    let mut buf = Vec::new();
    r.take(len as u64).read_to_end(&mut buf)?;
    if buf.len() < len {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("control frame cut short: {} of {len} bytes", buf.len()),
        )));
    }
    postcard::from_bytes(&buf).map_err(|e| Error::Protocol(format!("bad control message: {e}")))
}

/// Derive the 32-bit job id carried in packet headers from the job token.
/// (FNV-1a; the token itself is what authenticates, this only tags packets.)
pub fn job_id_from_token(token: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in token.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Compare two tokens in time independent of where they first differ.
pub fn tokens_equal(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let h = Hello {
            version: PROTOCOL_VERSION,
            token: "t".into(),
            rank: 3,
            size: 8,
            data_addr: "127.0.0.1:5".into(),
            pid: 42,
        };
        let mut buf = Vec::new();
        write_frame(&mut buf, &h).unwrap();
        let back: Hello = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!(back, h);
    }

    proptest::proptest! {
        #[test]
        fn every_frame_round_trips(
            version: u16, token: String, rank: u32, size: u32, addr: String, pid: u32,
            job: u32, addrs: Vec<String>, reason: String,
        ) {
            let h = Hello { version, token: token.clone(), rank, size, data_addr: addr, pid };
            let mut buf = Vec::new();
            write_frame(&mut buf, &h).unwrap();
            proptest::prop_assert_eq!(read_frame::<_, Hello>(&mut buf.as_slice()).unwrap(), h);
            for r in [RendezvousReply::Table { job, addrs: addrs.clone() }, RendezvousReply::Failed { reason: reason.clone() }] {
                let mut buf = Vec::new();
                write_frame(&mut buf, &r).unwrap();
                proptest::prop_assert_eq!(read_frame::<_, RendezvousReply>(&mut buf.as_slice()).unwrap(), r);
            }
            let p = PeerHello { version, token, rank };
            let mut buf = Vec::new();
            write_frame(&mut buf, &p).unwrap();
            proptest::prop_assert_eq!(read_frame::<_, PeerHello>(&mut buf.as_slice()).unwrap(), p);
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = read_frame::<_, Hello>(&mut b.as_slice());
            let _ = read_frame::<_, RendezvousReply>(&mut b.as_slice());
            let _ = read_frame::<_, PeerHello>(&mut b.as_slice());
        }
    }

    #[test]
    fn a_huge_length_prefix_allocates_nothing() {
        // 16 MiB claimed, 3 bytes sent: refused as cut short.
        let mut b = (16u32 << 20).to_le_bytes().to_vec();
        b.extend_from_slice(b"abc");
        assert!(read_frame::<_, Hello>(&mut b.as_slice()).is_err());
    }

    #[test]
    fn malformed_frames_are_errors() {
        // Truncated length, oversize length, garbage body.
        assert!(read_frame::<_, Hello>(&mut [1u8, 0].as_slice()).is_err());
        assert!(read_frame::<_, Hello>(&mut [0xff, 0xff, 0xff, 0xff].as_slice()).is_err());
        assert!(read_frame::<_, Hello>(&mut [2, 0, 0, 0, 0xff, 0xff].as_slice()).is_err());
    }
}
