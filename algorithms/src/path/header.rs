//! Byte codecs for the path worm's destination list
//! [Robinson 1994, §5.6, Figs 5.9–5.11; §6.5, Fig 6.2]: the simple header of Fig 5.9 and the compound header of Fig 6.2.
//!
//! Every address is a little-endian `u32` node id (one flit each in the
//! thesis).
//!
//! * **Simple** (Fig 5.9): `u_1 u_2 … u_{m−1} u_{m−1}` — the last address
//!   duplicated as the terminator. There is no length field.
//! * **Compound** (Fig 6.2, [R] layout): for each destination `u_i` the
//!   address, a count `ω_i`, then the `ω_i` addresses of Φ̃^{u_i} (the rest
//!   of the sub-H-cycle `u_i` becomes responsible for); after the last list
//!   the last destination is repeated as the terminator. The thesis does not
//!   say where the duplicate goes relative to the last list; this codec puts
//!   it after the list (an open choice, recorded).
//!
//! Decoders read a header at the start of a buffer (a worm's body follows
//! it) and return what they consumed. They never panic, and they never
//! allocate from a count they have not checked against the bytes present:
//! a list grows only as addresses are actually read.

/// A malformed path header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathHeaderError {
    /// An empty destination list cannot be encoded (a worm has at least one
    /// destination).
    #[error("a path header needs at least one destination")]
    NoDestinations,
    /// The bytes end inside the header (no terminator yet, or inside a
    /// word or a list).
    #[error("path header truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes needed at least.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// An address that is not a node of the fabric.
    #[error("address {addr} is not a node (the fabric has {nodes})")]
    BadAddress {
        /// The address.
        addr: u32,
        /// The number of nodes.
        nodes: usize,
    },
    /// A destination that occurs twice (other than as the terminator).
    #[error("destination {0} occurs twice in the header")]
    Repeated(u32),
    /// A compound count larger than the bytes left.
    #[error("count {count} at byte {at} exceeds the {left} bytes left")]
    BadCount {
        /// The count.
        count: u32,
        /// Its byte offset.
        at: usize,
        /// Bytes left after it.
        left: usize,
    },
    /// A node id that does not fit a `u32` address.
    #[error("node {0} does not fit a 32-bit address")]
    TooLarge(usize),
    /// Bytes after the header where none were expected.
    #[error("{0} trailing bytes after the header")]
    Trailing(usize),
}

fn addr(n: usize) -> Result<u32, PathHeaderError> {
    u32::try_from(n).map_err(|_| PathHeaderError::TooLarge(n))
}

fn word(bytes: &[u8], at: usize) -> Result<u32, PathHeaderError> {
    match bytes.get(at..at + 4) {
        Some(w) => Ok(u32::from_le_bytes([w[0], w[1], w[2], w[3]])),
        None => Err(PathHeaderError::Truncated {
            need: at + 4,
            have: bytes.len(),
        }),
    }
}

fn valid(a: u32, nodes: usize) -> Result<usize, PathHeaderError> {
    let n = a as usize;
    if n < nodes {
        Ok(n)
    } else {
        Err(PathHeaderError::BadAddress { addr: a, nodes })
    }
}

/// Encode the simple header of Fig 5.9 for `dests` (in visiting order).
///
/// # Errors
/// [`PathHeaderError::NoDestinations`]; [`PathHeaderError::TooLarge`].
pub fn encode_simple(dests: &[usize]) -> Result<Vec<u8>, PathHeaderError> {
    let last = *dests.last().ok_or(PathHeaderError::NoDestinations)?;
    let mut out = Vec::with_capacity(4 * (dests.len() + 1));
    for &d in dests.iter().chain(std::iter::once(&last)) {
        out.extend_from_slice(&addr(d)?.to_le_bytes());
    }
    Ok(out)
}

/// Decode a simple header at the start of `bytes`: the destinations in
/// order and the number of bytes the header took. Addresses must be below
/// `nodes` and distinct.
///
/// # Errors
/// [`PathHeaderError::Truncated`] (no terminator), [`PathHeaderError::BadAddress`],
/// [`PathHeaderError::Repeated`].
pub fn decode_simple(bytes: &[u8], nodes: usize) -> Result<(Vec<usize>, usize), PathHeaderError> {
    let mut out: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut at = 0;
    loop {
        let a = word(bytes, at)?;
        at += 4;
        let n = valid(a, nodes)?;
        if out.last() == Some(&n) {
            return Ok((out, at));
        }
        if !seen.insert(n) {
            return Err(PathHeaderError::Repeated(a));
        }
        out.push(n);
    }
}

/// One entry of a compound header: a destination and the rest of the
/// sub-H-cycle it becomes responsible for (Φ̃, itself excluded).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CompoundEntry {
    /// The destination.
    pub dest: usize,
    /// Φ̃^{dest}, in H-cycle order.
    pub rest: Vec<usize>,
}

/// Encode the compound header of Fig 6.2.
///
/// # Errors
/// [`PathHeaderError::NoDestinations`]; [`PathHeaderError::TooLarge`].
pub fn encode_compound(entries: &[CompoundEntry]) -> Result<Vec<u8>, PathHeaderError> {
    let last = entries.last().ok_or(PathHeaderError::NoDestinations)?.dest;
    let words: usize = entries.iter().map(|e| 2 + e.rest.len()).sum::<usize>() + 1;
    let mut out = Vec::with_capacity(4 * words);
    for e in entries {
        out.extend_from_slice(&addr(e.dest)?.to_le_bytes());
        out.extend_from_slice(&addr(e.rest.len())?.to_le_bytes());
        for &r in &e.rest {
            out.extend_from_slice(&addr(r)?.to_le_bytes());
        }
    }
    out.extend_from_slice(&addr(last)?.to_le_bytes());
    Ok(out)
}

/// Decode a compound header at the start of `bytes`: the entries and the
/// number of bytes taken. Every address must be below `nodes`, and no node
/// may occur twice in the whole header (other than the terminator).
///
/// # Errors
/// [`PathHeaderError::Truncated`], [`PathHeaderError::BadCount`],
/// [`PathHeaderError::BadAddress`], [`PathHeaderError::Repeated`].
pub fn decode_compound(
    bytes: &[u8],
    nodes: usize,
) -> Result<(Vec<CompoundEntry>, usize), PathHeaderError> {
    let mut out: Vec<CompoundEntry> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut at = 0;
    loop {
        let a = word(bytes, at)?;
        at += 4;
        let dest = valid(a, nodes)?;
        if out.last().map(|e| e.dest) == Some(dest) {
            return Ok((out, at));
        }
        if !seen.insert(dest) {
            return Err(PathHeaderError::Repeated(a));
        }
        let count = word(bytes, at)?;
        at += 4;
        let left = bytes.len() - at;
        // Check the count against the bytes present before reserving.
        let fits = match (count as usize).checked_mul(4) {
            Some(need) => need <= left,
            None => false,
        };
        if !fits {
            return Err(PathHeaderError::BadCount {
                count,
                at: at - 4,
                left,
            });
        }
        let mut rest = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let a = word(bytes, at)?;
            at += 4;
            let n = valid(a, nodes)?;
            if !seen.insert(n) {
                return Err(PathHeaderError::Repeated(a));
            }
            rest.push(n);
        }
        out.push(CompoundEntry { dest, rest });
    }
}

/// [`decode_simple`] of a buffer that holds exactly one header.
///
/// # Errors
/// As [`decode_simple`]; [`PathHeaderError::Trailing`].
pub fn decode_simple_exact(bytes: &[u8], nodes: usize) -> Result<Vec<usize>, PathHeaderError> {
    let (d, used) = decode_simple(bytes, nodes)?;
    match bytes.len() - used {
        0 => Ok(d),
        extra => Err(PathHeaderError::Trailing(extra)),
    }
}
