//! Frames on the links of an emulated switch fabric (`mclaunch --fabric`).
//!
//! In fabric mode a rank has one connection, to its host port of the switch
//! emulator (`mcast-emulator`'s socket fabric), instead of a connection per
//! peer; every packet crosses emulated switches and links. The same frames
//! run between the emulated switches, so every link is a real socket.
//!
//! # Frame layout
//! Every frame is `len: u32` (little-endian, the bytes after it), then a tag
//! byte, then the body (all integers little-endian):
//!
//! | tag | frame | body |
//! |---:|---|---|
//! | 1 | [`Frame::Packet`] | `vc: u16, stamp: u64, post: u64, route_kind: u8, route_len: u16, route, data` |
//! | 2 | [`Frame::Credit`] | `vc: u16, flits: u32, at: u64` |
//! | 3 | [`Frame::Hello`] | postcard [`FabricHello`] |
//! | 4 | [`Frame::Welcome`] | postcard [`FabricWelcome`] |
//! | 5 | [`Frame::Lost`] | `rank: u32`, then the reason (UTF-8) |
//! | 6 | [`Frame::Bye`] | `rank: u32`, then a [`Goodbye`] (`wire::Goodbye`) |
//! | 7 | [`Frame::Heartbeat`] | nothing |
//! | 8 | [`Frame::Refused`] | the reason (UTF-8) |
//!
//! A packet's `data` is an mcast wire packet (`wire::Packet`: header, route
//! and payload) that the fabric does not read; `route` tells the switches
//! where it goes ([`route_kind`]). Times are virtual, in cycles of the
//! fabric's cost model:
//! * rank → fabric: `stamp` is when the sending NI is done with the packet
//!   (host overhead, DMA and the NI's send overhead paid: the rank models
//!   its NI processor, since its engine decides what is forwarded when),
//!   `post` when the message was posted at its source;
//! * fabric → rank: `stamp` is when the packet's tail reached the receiving
//!   NI, `post` is carried through unchanged;
//! * between switches: `stamp` is when the head arrives, `vc` the VC.
//!
//! Decoding never panics: a short, long or malformed frame is a
//! [`FabricWireError`].
//!
//! Model time on the rank's side lives in [`Timeline`] (a resource reserved
//! in virtual time) and [`ModelLatency`] (what the API reports).

use bytes::{BufMut, Bytes, BytesMut};
use serde::{Deserialize, Serialize};

pub use crate::wire::Goodbye;

mod timeline;
pub use timeline::{ModelLatency, Timeline};

/// Version of the fabric link protocol.
pub const FABRIC_VERSION: u16 = 4;

/// Largest frame body accepted (a packet of the largest payload, its route
/// and its mcast header, with room to spare).
pub const MAX_FRAME: usize = crate::wire::MAX_PAYLOAD + crate::wire::MAX_ROUTE + 4096;

/// Route kinds a rank may put on a packet it sends into the fabric.
pub mod route_kind {
    /// Unicast: `dest: u32`.
    pub const UNICAST: u8 = 0;
    /// An irregular-network header (`mcast_algorithms::irregular::RouteHeader`
    /// bytes: unicast, SSR, multi-drop or bit-string).
    pub const IRREGULAR: u8 = 1;
    /// A path worm on a unidirectional torus: the thesis's Fig 5.9 header
    /// (`mcast_algorithms::path::header::encode_simple`).
    pub const PATH: u8 = 2;
    /// A MIN region header (`mcast_algorithms::min::RegionHeader` bytes).
    pub const MIN: u8 = 3;
    /// Kinds from this one up are private to the fabric (the header state
    /// of a worm between two switches).
    pub const FABRIC_PRIVATE: u8 = 0x80;
}

/// A rank's first frame on its fabric link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricHello {
    /// [`FABRIC_VERSION`].
    pub version: u16,
    /// The job's token (the fabric refuses any other).
    pub token: String,
    /// The rank, which must equal the host port it connects to.
    pub rank: u32,
}

/// The fabric's answer: what a rank needs to stamp its packets and to plan
/// worms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FabricWelcome {
    /// [`FABRIC_VERSION`].
    pub version: u16,
    /// This rank's host port (= its rank).
    pub node: u32,
    /// Host ports of the fabric (the job may use fewer).
    pub nodes: u32,
    /// The fabric spec, without cost knobs (`torus:4x4`, `irregular:...`).
    pub spec: String,
    /// Nanoseconds per cycle.
    pub cycle_ns: f64,
    /// Host send overhead per message (cycles).
    pub t_hs: u64,
    /// Host receive overhead per message (cycles).
    pub t_hr: u64,
    /// Host <-> NI DMA per packet (cycles).
    pub dma: u64,
    /// NI overhead per packet copy sent (cycles; the rank models its NI).
    pub t_ns: u64,
    /// NI overhead per packet received (cycles).
    pub t_nr: u64,
    /// Payload bytes per packet: the model's packet (flits × bytes per flit).
    pub packet_bytes: u32,
}

/// One frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A packet.
    Packet {
        /// Virtual channel (between switches; 0 on host links).
        vc: u16,
        /// Virtual time, see the module docs.
        stamp: u64,
        /// When the message was posted at its source.
        post: u64,
        /// How `route` reads ([`route_kind`]).
        route_kind: u8,
        /// The route.
        route: Bytes,
        /// The mcast wire packet.
        data: Bytes,
    },
    /// Credits returned upstream for a VC.
    Credit {
        /// The VC.
        vc: u16,
        /// Flits.
        flits: u32,
        /// When the space became free.
        at: u64,
    },
    /// Rank → fabric, first frame.
    Hello(FabricHello),
    /// Fabric → rank, the answer to a good hello.
    Welcome(FabricWelcome),
    /// Fabric → rank: a rank's link ended without goodbye, or went silent.
    /// Sent to the lost rank itself too (`rank` is then its own), so that
    /// a rank that was stopped learns it was cut off as soon as it resumes.
    Lost {
        /// The rank.
        rank: u32,
        /// Why.
        reason: String,
    },
    /// Rank → fabric: this rank is leaving, and why; fabric → rank: `rank`
    /// left (its packets sent before it have all been delivered).
    Bye {
        /// The rank.
        rank: u32,
        /// Finalized, or departed without `finalize` (never `Expelled`
        /// from a rank; the fabric expels with [`Frame::Lost`]).
        goodbye: Goodbye,
    },
    /// Keeps an idle link alive.
    Heartbeat,
    /// Fabric → rank: the hello was refused.
    Refused(String),
}

/// A frame that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FabricWireError {
    /// The length prefix is too large.
    #[error("fabric frame of {0} bytes exceeds the limit of {MAX_FRAME}")]
    TooLong(usize),
    /// Fewer bytes than the frame needs.
    #[error("fabric frame truncated: {0}")]
    Truncated(&'static str),
    /// Bytes left after the frame's fields.
    #[error("{0} stray bytes after a fabric frame")]
    Trailing(usize),
    /// An unknown tag.
    #[error("unknown fabric frame tag {0}")]
    Tag(u8),
    /// A postcard body that does not decode.
    #[error("malformed fabric {what}: {detail}")]
    Body {
        /// Which frame.
        what: &'static str,
        /// The decoder's complaint.
        detail: String,
    },
}

mod tag {
    pub const PACKET: u8 = 1;
    pub const CREDIT: u8 = 2;
    pub const HELLO: u8 = 3;
    pub const WELCOME: u8 = 4;
    pub const LOST: u8 = 5;
    pub const BYE: u8 = 6;
    pub const HEARTBEAT: u8 = 7;
    pub const REFUSED: u8 = 8;
}

/// Bytes of a packet frame before its route: length, tag, vc, stamp, post,
/// route kind and route length.
pub const PACKET_PREFIX: usize = 4 + 1 + 2 + 8 + 8 + 1 + 2;

/// The prefix of a packet frame whose route and data follow: `len` covers
/// the route and `data_len` bytes of data. Lets a sender write the data
/// (an mcast packet's head and payload) without copying it into the frame.
///
/// # Errors
/// A route longer than `u16::MAX`, or a frame over [`MAX_FRAME`].
pub fn packet_prefix(
    out: &mut BytesMut,
    vc: u16,
    stamp: u64,
    post: u64,
    route_kind: u8,
    route: &[u8],
    data_len: usize,
) -> Result<(), FabricWireError> {
    let rl = u16::try_from(route.len()).map_err(|_| FabricWireError::TooLong(route.len()))?;
    let body = PACKET_PREFIX - 4 + route.len() + data_len;
    if body > MAX_FRAME {
        return Err(FabricWireError::TooLong(body));
    }
    out.reserve(PACKET_PREFIX + route.len());
    out.put_u32_le(body as u32);
    out.put_u8(tag::PACKET);
    out.put_u16_le(vc);
    out.put_u64_le(stamp);
    out.put_u64_le(post);
    out.put_u8(route_kind);
    out.put_u16_le(rl);
    out.put_slice(route);
    Ok(())
}

impl Frame {
    /// Append the whole frame, length prefix included.
    ///
    /// # Errors
    /// A frame over [`MAX_FRAME`] or a route over 64 KiB.
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), FabricWireError> {
        let body = |out: &mut BytesMut, t: u8, b: &[u8]| {
            out.put_u32_le(1 + b.len() as u32);
            out.put_u8(t);
            out.put_slice(b);
        };
        let post = |what: &'static str, r: Result<Vec<u8>, postcard::Error>| {
            r.map_err(|e| FabricWireError::Body {
                what,
                detail: e.to_string(),
            })
        };
        match self {
            Frame::Packet {
                vc,
                stamp,
                post,
                route_kind,
                route,
                data,
            } => {
                packet_prefix(out, *vc, *stamp, *post, *route_kind, route, data.len())?;
                out.put_slice(data);
            }
            Frame::Credit { vc, flits, at } => {
                let mut b = [0u8; 14];
                b[..2].copy_from_slice(&vc.to_le_bytes());
                b[2..6].copy_from_slice(&flits.to_le_bytes());
                b[6..].copy_from_slice(&at.to_le_bytes());
                body(out, tag::CREDIT, &b);
            }
            Frame::Hello(h) => body(out, tag::HELLO, &post("hello", postcard::to_stdvec(h))?),
            Frame::Welcome(w) => body(out, tag::WELCOME, &post("welcome", postcard::to_stdvec(w))?),
            Frame::Lost { rank, reason } => {
                let mut b = rank.to_le_bytes().to_vec();
                b.extend_from_slice(reason.as_bytes());
                body(out, tag::LOST, &b);
            }
            Frame::Bye { rank, goodbye } => {
                let mut b = rank.to_le_bytes().to_vec();
                b.extend_from_slice(&goodbye.encode());
                body(out, tag::BYE, &b);
            }
            Frame::Heartbeat => body(out, tag::HEARTBEAT, &[]),
            Frame::Refused(r) => body(out, tag::REFUSED, r.as_bytes()),
        }
        Ok(())
    }

    /// The frame as one buffer.
    ///
    /// # Errors
    /// As [`Frame::encode`].
    pub fn to_bytes(&self) -> Result<Bytes, FabricWireError> {
        let mut b = BytesMut::new();
        self.encode(&mut b)?;
        Ok(b.freeze())
    }

    /// Check a length prefix.
    ///
    /// # Errors
    /// [`FabricWireError::TooLong`], or a zero length (no tag).
    pub fn check_len(len: u32) -> Result<usize, FabricWireError> {
        let n = len as usize;
        if n > MAX_FRAME {
            return Err(FabricWireError::TooLong(n));
        }
        if n == 0 {
            return Err(FabricWireError::Truncated("empty frame"));
        }
        Ok(n)
    }

    /// Decode a frame body (what follows the length prefix). Packet routes
    /// and data are slices of `body`, not copies.
    ///
    /// # Errors
    /// [`FabricWireError`]; never panics.
    pub fn decode(body: Bytes) -> Result<Frame, FabricWireError> {
        let Some(&t) = body.first() else {
            return Err(FabricWireError::Truncated("empty frame"));
        };
        let b = &body[1..];
        let need = |n: usize, what: &'static str| {
            if b.len() < n {
                Err(FabricWireError::Truncated(what))
            } else {
                Ok(())
            }
        };
        let exact = |n: usize, what: &'static str| {
            need(n, what)?;
            if b.len() > n {
                return Err(FabricWireError::Trailing(b.len() - n));
            }
            Ok(())
        };
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let text = |s: &[u8], what: &'static str| {
            std::str::from_utf8(s)
                .map(str::to_owned)
                .map_err(|e| FabricWireError::Body {
                    what,
                    detail: e.to_string(),
                })
        };
        match t {
            tag::PACKET => {
                const FIXED: usize = PACKET_PREFIX - 5;
                need(FIXED, "packet fields")?;
                let rl = u16_at(19) as usize;
                need(FIXED + rl, "packet route")?;
                Ok(Frame::Packet {
                    vc: u16_at(0),
                    stamp: u64_at(2),
                    post: u64_at(10),
                    route_kind: b[18],
                    route: body.slice(1 + FIXED..1 + FIXED + rl),
                    data: body.slice(1 + FIXED + rl..),
                })
            }
            tag::CREDIT => {
                exact(14, "credit")?;
                Ok(Frame::Credit {
                    vc: u16_at(0),
                    flits: u32_at(2),
                    at: u64_at(6),
                })
            }
            tag::HELLO => {
                postcard::from_bytes(b)
                    .map(Frame::Hello)
                    .map_err(|e| FabricWireError::Body {
                        what: "hello",
                        detail: e.to_string(),
                    })
            }
            tag::WELCOME => {
                postcard::from_bytes(b)
                    .map(Frame::Welcome)
                    .map_err(|e| FabricWireError::Body {
                        what: "welcome",
                        detail: e.to_string(),
                    })
            }
            tag::LOST => {
                need(4, "lost")?;
                Ok(Frame::Lost {
                    rank: u32_at(0),
                    reason: text(&b[4..], "lost reason")?,
                })
            }
            tag::BYE => {
                need(5, "bye")?;
                let goodbye = Goodbye::decode(&b[4..]).map_err(|e| FabricWireError::Body {
                    what: "bye",
                    detail: e.to_string(),
                })?;
                Ok(Frame::Bye {
                    rank: u32_at(0),
                    goodbye,
                })
            }
            tag::HEARTBEAT => {
                exact(0, "heartbeat")?;
                Ok(Frame::Heartbeat)
            }
            tag::REFUSED => Ok(Frame::Refused(text(b, "refusal")?)),
            other => Err(FabricWireError::Tag(other)),
        }
    }

    /// Read one frame from an async stream.
    ///
    /// # Errors
    /// I/O errors, and malformed frames as `InvalidData`.
    pub async fn read<R: tokio::io::AsyncRead + Unpin>(r: &mut R) -> std::io::Result<Frame> {
        use tokio::io::AsyncReadExt;
        let mut len = [0u8; 4];
        r.read_exact(&mut len).await?;
        let n = Frame::check_len(u32::from_le_bytes(len)).map_err(invalid)?;
        let mut body = BytesMut::with_capacity(n);
        while body.len() < n {
            let want = n - body.len();
            if r.read_buf(&mut (&mut body).limit(want)).await? == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
        }
        Frame::decode(body.freeze()).map_err(invalid)
    }
}

fn invalid(e: FabricWireError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

/// The unicast route to `dest`.
pub fn unicast_route(dest: u32) -> Bytes {
    Bytes::copy_from_slice(&dest.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(f: Frame) {
        let b = f.to_bytes().unwrap();
        let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!(Frame::check_len(len).unwrap(), b.len() - 4);
        assert_eq!(Frame::decode(b.slice(4..)).unwrap(), f);
    }

    fn samples() -> Vec<Frame> {
        vec![
            Frame::Packet {
                vc: 3,
                stamp: 1 << 40,
                post: 17,
                route_kind: route_kind::IRREGULAR,
                route: Bytes::from_static(&[1, 2, 3]),
                data: Bytes::from_static(b"MCST..."),
            },
            Frame::Packet {
                vc: 0,
                stamp: 0,
                post: 0,
                route_kind: route_kind::UNICAST,
                route: unicast_route(9),
                data: Bytes::new(),
            },
            Frame::Credit {
                vc: 1,
                flits: 128,
                at: 99,
            },
            Frame::Hello(FabricHello {
                version: FABRIC_VERSION,
                token: "tok".into(),
                rank: 4,
            }),
            Frame::Welcome(FabricWelcome {
                version: FABRIC_VERSION,
                node: 2,
                nodes: 16,
                spec: "torus:4x4".into(),
                cycle_ns: 5.0,
                t_hs: 1000,
                t_hr: 1000,
                dma: 97,
                t_ns: 1000,
                t_nr: 1000,
                packet_bytes: 128,
            }),
            Frame::Lost {
                rank: 3,
                reason: "connection closed".into(),
            },
            Frame::Bye {
                rank: 7,
                goodbye: Goodbye::Finalized,
            },
            Frame::Bye {
                rank: 2,
                goodbye: Goodbye::departed([41, (2 << 40) + 3], [(0, 2), (5, 1)], Some(3)),
            },
            Frame::Heartbeat,
            Frame::Refused("wrong token".into()),
        ]
    }

    #[test]
    fn every_frame_round_trips() {
        for f in samples() {
            round_trip(f);
        }
    }

    #[test]
    fn bad_frames_are_errors() {
        assert!(Frame::check_len(0).is_err());
        assert!(Frame::check_len(u32::MAX).is_err());
        assert_eq!(
            Frame::decode(Bytes::from_static(&[99])),
            Err(FabricWireError::Tag(99))
        );
        assert!(Frame::decode(Bytes::new()).is_err());
        // A credit one byte short and one byte long.
        let c = Frame::Credit {
            vc: 1,
            flits: 2,
            at: 3,
        }
        .to_bytes()
        .unwrap();
        assert!(Frame::decode(c.slice(4..c.len() - 1)).is_err());
        let mut long = BytesMut::from(&c[4..]);
        long.put_u8(0);
        assert_eq!(
            Frame::decode(long.freeze()),
            Err(FabricWireError::Trailing(1))
        );
        // A packet whose route length runs past the end.
        let mut p = BytesMut::new();
        packet_prefix(&mut p, 0, 0, 0, 0, &[1, 2, 3, 4], 0).unwrap();
        assert!(Frame::decode(p.freeze().slice(4..7 + 20)).is_err());
    }

    proptest::proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = Frame::decode(Bytes::from(b));
        }
    }

    #[tokio::test]
    async fn frames_read_from_a_stream() {
        let mut buf = BytesMut::new();
        for f in samples() {
            f.encode(&mut buf).unwrap();
        }
        let mut r: &[u8] = &buf;
        for f in samples() {
            assert_eq!(Frame::read(&mut r).await.unwrap(), f);
        }
        assert!(Frame::read(&mut r).await.is_err());
    }
}
