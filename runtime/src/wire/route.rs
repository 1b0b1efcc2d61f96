//! Route headers: a chain range (bcast) or a member list (multicast and
//! topology-aware trees).

use bytes::BytesMut;
use mcast_algorithms::Shape;

use super::{u16_at, u32_at, WireError};
use crate::tree_kind::{shape_code, shape_of_code, tree_code, tree_of_code, BadTree, TreeKind};

/// One entry of a list route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Member {
    pub rank: u32,
    pub ordinal: u32,
}

/// A route header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    None,
    Range {
        shape: Shape,
        size: u32,
        lo: u32,
        hi: u32,
    },
    /// The receiver first, then every other rank it is responsible for (the
    /// thesis's address field D [Robinson 1994, §3.3]): its *covers*.
    List {
        tree: TreeKind,
        covers: Vec<Member>,
    },
}

impl From<BadTree> for WireError {
    fn from(e: BadTree) -> WireError {
        match e {
            BadTree::Code(c) => WireError::Shape(c),
            BadTree::K(s) => WireError::Field(s),
        }
    }
}

fn decode_tree(code: u8, k: u16) -> Result<TreeKind, WireError> {
    Ok(tree_of_code(code, k)?)
}

fn decode_shape(code: u8, k: u16) -> Result<Shape, WireError> {
    Ok(shape_of_code(code, k)?)
}

/// A route's first 8 bytes: its code, 0, k, and a count (the chain's size
/// for a range, the members for a list).
fn route_head(code: u8, k: u16, n: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[0] = code;
    b[2..4].copy_from_slice(&k.to_le_bytes());
    b[4..8].copy_from_slice(&n.to_le_bytes());
    b
}

/// Two 32-bit words (a range's bounds, a member's rank and ordinal).
fn pair(x: u32, y: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[0..4].copy_from_slice(&x.to_le_bytes());
    b[4..8].copy_from_slice(&y.to_le_bytes());
    b
}

impl Route {
    /// The (code, k) of the tree this route carries, if any.
    pub fn tree_code(&self) -> Option<(u8, u16)> {
        match self {
            Route::None => None,
            Route::Range { shape, .. } => Some(shape_code(*shape)),
            Route::List { tree, .. } => Some(tree_code(*tree)),
        }
    }

    /// The route kind byte for the fixed header.
    pub fn kind_byte(&self) -> u8 {
        match self {
            Route::None => 0,
            Route::Range { .. } => 1,
            Route::List { .. } => 2,
        }
    }

    /// Encoded length in bytes.
    pub fn encoded_len(&self) -> usize {
        match self {
            Route::None => 0,
            Route::Range { .. } => 16,
            Route::List {
                covers: members, ..
            } => 8 + 8 * members.len(),
        }
    }

    /// The encoding of a range route as an array (`None` for the other
    /// kinds: no route encodes to nothing, a list to a variable length).
    pub fn fixed_bytes(&self) -> Option<[u8; 16]> {
        let Route::Range {
            shape,
            size,
            lo,
            hi,
        } = self
        else {
            return None;
        };
        let (code, k) = shape_code(*shape);
        let mut b = [0u8; 16];
        b[0..8].copy_from_slice(&route_head(code, k, *size));
        b[8..16].copy_from_slice(&pair(*lo, *hi));
        Some(b)
    }

    /// Append the encoding to `out` (each part built on the stack and
    /// appended at once, as [`super::Header::encode`] does).
    pub fn encode(&self, out: &mut BytesMut) {
        out.reserve(self.encoded_len());
        match self {
            Route::None => {}
            Route::Range { .. } => {
                if let Some(b) = self.fixed_bytes() {
                    out.extend_from_slice(&b);
                }
            }
            Route::List {
                tree,
                covers: members,
            } => {
                let (code, k) = tree_code(*tree);
                out.extend_from_slice(&route_head(code, k, members.len() as u32));
                for m in members {
                    out.extend_from_slice(&pair(m.rank, m.ordinal));
                }
            }
        }
    }

    /// Decode a route header of the given kind from exactly `b`.
    pub fn decode(kind: u8, b: &[u8]) -> Result<Route, WireError> {
        match kind {
            0 if b.is_empty() => Ok(Route::None),
            0 => Err(WireError::Field(format!(
                "route kind none with {} bytes",
                b.len()
            ))),
            1 => {
                if b.len() != 16 {
                    return Err(WireError::Field(format!(
                        "range route of {} bytes",
                        b.len()
                    )));
                }
                if b[1] != 0 {
                    return Err(WireError::Field("reserved route byte set".into()));
                }
                let shape = decode_shape(b[0], u16_at(b, 2))?;
                let (size, lo, hi) = (u32_at(b, 4), u32_at(b, 8), u32_at(b, 12));
                if !(lo <= hi && hi < size) {
                    return Err(WireError::Field(format!(
                        "range [{lo}, {hi}] outside chain of {size}"
                    )));
                }
                Ok(Route::Range {
                    shape,
                    size,
                    lo,
                    hi,
                })
            }
            2 => {
                if b.len() < 8 {
                    return Err(WireError::Truncated {
                        need: 8,
                        have: b.len(),
                    });
                }
                if b[1] != 0 {
                    return Err(WireError::Field("reserved route byte set".into()));
                }
                let tree = decode_tree(b[0], u16_at(b, 2))?;
                let count = u32_at(b, 4) as usize;
                let need = count
                    .checked_mul(8)
                    .and_then(|n| n.checked_add(8))
                    .ok_or_else(|| WireError::Field("member count overflows".into()))?;
                if count == 0 || need != b.len() {
                    return Err(WireError::Field(format!(
                        "list route of {} bytes claims {count} members",
                        b.len()
                    )));
                }
                let members = b[8..]
                    .chunks_exact(8)
                    .map(|c| Member {
                        rank: u32_at(c, 0),
                        ordinal: u32_at(c, 4),
                    })
                    .collect();
                Ok(Route::List {
                    tree,
                    covers: members,
                })
            }
            other => Err(WireError::RouteKind(other)),
        }
    }
}
