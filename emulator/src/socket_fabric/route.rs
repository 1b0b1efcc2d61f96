//! Route headers on fabric links: what a rank may put on a packet
//! ([`mcast::fabric::route_kind`]), and the fabric's private encoding of a
//! worm's header state between two switches.
//!
//! # Private route kinds (switch → switch)
//! Every private route starts with `origin: u32` (the host port that
//! injected the packet; the fabric uses it to order a rank's `Bye` after its
//! packets), then, by kind (all integers little-endian):
//!
//! | kind | header | after the origin |
//! |---:|---|---|
//! | `0x80` | [`SwitchHeader::Unicast`] | `dest: u32` |
//! | `0x81` | [`SwitchHeader::Irregular`] | the `RouteHeader` bytes (as rewritten by the switches) |
//! | `0x82` | [`SwitchHeader::Path`] | `pos: u16, on_h: u8`, then the destinations, `u32` each |
//! | `0x83` | [`SwitchHeader::Min`] | `n: u8` (stages), then the `RegionHeader` bytes |
//!
//! [`decode_private`] never panics; it checks destinations against the
//! fabric's size and a path header's position against its list.

use std::sync::Arc;

use mcast::fabric::route_kind;
use mcast_algorithms::irregular::RouteHeader;
use mcast_algorithms::min::RegionHeader;

use crate::switch::routing::PathHeader;
use crate::switch::SwitchHeader;

/// Private kind: a unicast.
pub const PRIVATE_UNICAST: u8 = route_kind::FABRIC_PRIVATE;
/// Private kind: an irregular-network header.
pub const PRIVATE_IRREGULAR: u8 = route_kind::FABRIC_PRIVATE + 1;
/// Private kind: a path worm's header state.
pub const PRIVATE_PATH: u8 = route_kind::FABRIC_PRIVATE + 2;
/// Private kind: a MIN region header.
pub const PRIVATE_MIN: u8 = route_kind::FABRIC_PRIVATE + 3;

/// Which header kinds a fabric accepts from ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FabricKind {
    /// Torus, mesh, hypercube (unicast; path worms on unidirectional tori).
    Direct,
    /// Irregular network (unicast; irregular headers).
    Irregular,
    /// Crossbar (unicast only).
    Crossbar,
    /// MIN with this many stages (unicast; region headers).
    Min(u32),
}

/// Why a rank's route is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteDecodeError {
    /// The kind is unknown, private, or not routable on this fabric.
    #[error("route kind {kind} is not usable on this fabric")]
    Kind {
        /// The kind.
        kind: u8,
    },
    /// The bytes do not decode.
    #[error("malformed route: {0}")]
    Malformed(String),
    /// A destination outside the fabric.
    #[error("destination {dest} is not a host of the fabric (0..{nodes})")]
    Dest {
        /// The destination.
        dest: u64,
        /// Hosts.
        nodes: usize,
    },
}

fn u32_le(b: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}

/// Decode the route a rank put on a packet.
///
/// # Errors
/// [`RouteDecodeError`]; never panics.
pub fn decode_rank_route(
    kind: u8,
    route: &[u8],
    fabric: FabricKind,
    nodes: usize,
) -> Result<SwitchHeader, RouteDecodeError> {
    let bad_kind = Err(RouteDecodeError::Kind { kind });
    match kind {
        route_kind::UNICAST => {
            if route.len() != 4 {
                return Err(RouteDecodeError::Malformed(format!(
                    "a unicast route is 4 bytes, got {}",
                    route.len()
                )));
            }
            let dest = u32_le(route).unwrap_or(u32::MAX);
            if dest as usize >= nodes {
                return Err(RouteDecodeError::Dest {
                    dest: dest.into(),
                    nodes,
                });
            }
            Ok(SwitchHeader::Unicast { dest })
        }
        route_kind::IRREGULAR => {
            if fabric != FabricKind::Irregular {
                return bad_kind;
            }
            RouteHeader::decode(route)
                .map(|h| SwitchHeader::Irregular(Box::new(h)))
                .map_err(|e| RouteDecodeError::Malformed(e.to_string()))
        }
        route_kind::PATH => {
            if fabric != FabricKind::Direct {
                return bad_kind;
            }
            let list = mcast_algorithms::path::header::decode_simple_exact(route, nodes)
                .map_err(|e| RouteDecodeError::Malformed(e.to_string()))?;
            path_header(list.iter().map(|&d| d as u64), 0, false, nodes)
        }
        route_kind::MIN => {
            let FabricKind::Min(n) = fabric else {
                return bad_kind;
            };
            RegionHeader::decode(n, route)
                .map(SwitchHeader::Min)
                .map_err(|e| RouteDecodeError::Malformed(e.to_string()))
        }
        _ => bad_kind,
    }
}

fn path_header(
    dests: impl Iterator<Item = u64>,
    pos: u16,
    on_h: bool,
    nodes: usize,
) -> Result<SwitchHeader, RouteDecodeError> {
    let mut v = Vec::new();
    for d in dests {
        if d >= nodes as u64 {
            return Err(RouteDecodeError::Dest { dest: d, nodes });
        }
        v.push(d as u32);
    }
    if v.is_empty() || v.len() > usize::from(u16::MAX) {
        return Err(RouteDecodeError::Malformed(format!(
            "a path worm needs 1..=65535 destinations, got {}",
            v.len()
        )));
    }
    if usize::from(pos) >= v.len() {
        return Err(RouteDecodeError::Malformed(format!(
            "path position {pos} past the {} destinations",
            v.len()
        )));
    }
    let dests: Arc<[u32]> = v.into();
    Ok(SwitchHeader::Path(Box::new(PathHeader {
        dests,
        pos,
        on_h,
    })))
}

/// Encode a header's state for the next switch: `(kind, route)`. `None`
/// for [`SwitchHeader::Consumed`] (never sent) and [`SwitchHeader::Source`]
/// (simulator only: no rank's route decodes to one).
pub fn encode_private(origin: u32, h: &SwitchHeader) -> Option<(u8, Vec<u8>)> {
    let mut v = origin.to_le_bytes().to_vec();
    let kind = match h {
        SwitchHeader::Unicast { dest } => {
            v.extend_from_slice(&dest.to_le_bytes());
            PRIVATE_UNICAST
        }
        SwitchHeader::Irregular(r) => {
            v.extend_from_slice(&r.encode());
            PRIVATE_IRREGULAR
        }
        SwitchHeader::Path(p) => {
            v.extend_from_slice(&p.pos.to_le_bytes());
            v.push(u8::from(p.on_h));
            for d in p.dests.iter() {
                v.extend_from_slice(&d.to_le_bytes());
            }
            PRIVATE_PATH
        }
        SwitchHeader::Min(r) => {
            v.push(r.stages() as u8);
            v.extend_from_slice(&r.encode());
            PRIVATE_MIN
        }
        SwitchHeader::Consumed | SwitchHeader::Source(_) => return None,
    };
    Some((kind, v))
}

/// Decode a private route: `(origin, header)`.
///
/// # Errors
/// [`RouteDecodeError`]; never panics.
pub fn decode_private(
    kind: u8,
    route: &[u8],
    nodes: usize,
) -> Result<(u32, SwitchHeader), RouteDecodeError> {
    let origin = u32_le(route)
        .ok_or_else(|| RouteDecodeError::Malformed("private route without origin".into()))?;
    let b = &route[4..];
    let short = || RouteDecodeError::Malformed(format!("private route kind {kind} truncated"));
    let h = match kind {
        PRIVATE_UNICAST => {
            if b.len() != 4 {
                return Err(short());
            }
            let dest = u32_le(b).ok_or_else(short)?;
            if dest as usize >= nodes {
                return Err(RouteDecodeError::Dest {
                    dest: dest.into(),
                    nodes,
                });
            }
            SwitchHeader::Unicast { dest }
        }
        PRIVATE_IRREGULAR => RouteHeader::decode(b)
            .map(|h| SwitchHeader::Irregular(Box::new(h)))
            .map_err(|e| RouteDecodeError::Malformed(e.to_string()))?,
        PRIVATE_PATH => {
            if b.len() < 3 || !(b.len() - 3).is_multiple_of(4) {
                return Err(short());
            }
            let pos = u16::from_le_bytes([b[0], b[1]]);
            let on_h = match b[2] {
                0 => false,
                1 => true,
                x => return Err(RouteDecodeError::Malformed(format!("path on_h byte {x}"))),
            };
            let dests = b[3..]
                .chunks_exact(4)
                .map(|c| u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
            path_header(dests, pos, on_h, nodes)?
        }
        PRIVATE_MIN => {
            let (&n, rest) = b.split_first().ok_or_else(short)?;
            RegionHeader::decode(u32::from(n), rest)
                .map(SwitchHeader::Min)
                .map_err(|e| RouteDecodeError::Malformed(e.to_string()))?
        }
        _ => return Err(RouteDecodeError::Kind { kind }),
    };
    Ok((origin, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_headers_round_trip() {
        let headers = [
            SwitchHeader::Unicast { dest: 7 },
            SwitchHeader::Irregular(Box::new(
                RouteHeader::decode(
                    &mcast_algorithms::irregular::UnicastHeader { dest: 3 }.encode(),
                )
                .unwrap(),
            )),
            SwitchHeader::Path(Box::new(PathHeader {
                dests: vec![1u32, 5, 9].into(),
                pos: 1,
                on_h: true,
            })),
            SwitchHeader::Min(RegionHeader::new(4, 2, 9).unwrap()),
        ];
        for h in headers {
            let (k, r) = encode_private(42, &h).unwrap();
            assert!(k >= route_kind::FABRIC_PRIVATE);
            assert_eq!(decode_private(k, &r, 16).unwrap(), (42, h));
        }
        assert!(encode_private(0, &SwitchHeader::Consumed).is_none());
        // A path position past the list, a destination out of range.
        let mut r = 0u32.to_le_bytes().to_vec();
        r.extend_from_slice(&[3, 0, 0]);
        r.extend_from_slice(&1u32.to_le_bytes());
        assert!(decode_private(PRIVATE_PATH, &r, 16).is_err());
        assert!(decode_private(PRIVATE_UNICAST, &[0, 0, 0, 0, 99, 0, 0, 0], 16).is_err());
    }

    #[test]
    fn rank_routes_are_checked_against_the_fabric() {
        let u = 3u32.to_le_bytes();
        assert_eq!(
            decode_rank_route(route_kind::UNICAST, &u, FabricKind::Direct, 16).unwrap(),
            SwitchHeader::Unicast { dest: 3 }
        );
        assert!(decode_rank_route(route_kind::UNICAST, &u, FabricKind::Direct, 3).is_err());
        assert!(decode_rank_route(route_kind::UNICAST, &u[..3], FabricKind::Direct, 16).is_err());
        assert!(decode_rank_route(route_kind::IRREGULAR, &u, FabricKind::Direct, 16).is_err());
        assert!(decode_rank_route(route_kind::MIN, &[1], FabricKind::Crossbar, 16).is_err());
        assert!(decode_rank_route(0x80, &u, FabricKind::Direct, 16).is_err());
    }

    proptest::proptest! {
        /// A rank's irregular header is untrusted: a well-formed header with
        /// arbitrary ids, port masks and destination sets must route or
        /// fail at every switch and input port, never panic (a panic would
        /// take the whole fabric down).
        #[test]
        fn untrusted_irregular_headers_route_or_fail(
            pick in 0u8..4,
            flag in proptest::prelude::any::<bool>(),
            ids in proptest::collection::vec(0u32..40, 1..4),
            len in 0usize..12,
            bits in proptest::collection::vec(0usize..48, 0..12),
        ) {
            use mcast_algorithms::irregular::{
                BitStringHeader, IdForm, MultiDropHeader, NodeSet, PortMask, SsrHeader,
                UnicastHeader,
            };
            let form = if flag { IdForm::Node } else { IdForm::Switch };
            let mask = || PortMask::from_ports(len, bits.iter().copied()).unwrap();
            let h = match pick {
                0 => RouteHeader::Unicast(UnicastHeader { dest: ids[0] }),
                1 => RouteHeader::Ssr(SsrHeader { form, multidest: !flag, id: ids[0], ports: mask() }),
                2 => RouteHeader::MultiDrop(
                    MultiDropHeader::new(form, ids.iter().map(|&i| (i, mask())).collect()).unwrap(),
                ),
                _ => RouteHeader::BitString(
                    BitStringHeader::new(flag, NodeSet::from_nodes(len * 4, bits.iter().copied().filter(|&b| b < len * 4))).unwrap(),
                ),
            };
            let f = crate::sim::spec::SimFabric::parse(
                "irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=3",
                true,
            )
            .unwrap();
            let r = f.routing();
            let bytes = h.encode();
            if let Ok(h) = decode_rank_route(route_kind::IRREGULAR, &bytes, FabricKind::Irregular, 32) {
                let mut out = Vec::new();
                for sw in 0..r.switches() {
                    for port in 0..r.ports() {
                        out.clear();
                        let _ = r.route(sw, port, &h, &mut out);
                    }
                }
            }
        }

        #[test]
        fn garbage_routes_never_panic(kind in 0u8..=255, b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let _ = decode_private(kind, &b, 16);
            for f in [FabricKind::Direct, FabricKind::Irregular, FabricKind::Crossbar, FabricKind::Min(4)] {
                let _ = decode_rank_route(kind, &b, f, 16);
            }
        }
    }
}
