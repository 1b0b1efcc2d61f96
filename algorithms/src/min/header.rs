//! The fixed-size region header [Park 1996, §2.2, Fig 2]: two n-bit
//! addresses `min ≤ max` naming the consecutive destinations `min..=max`. A
//! unicast is `min = max`.
//!
//! # Bit and byte layout
//!
//! The header is exactly 2n bits: bits `0..n` hold `min`, bits `n..2n` hold
//! `max` (each LSB first). On the wire it is the little-endian byte string of
//! that 2n-bit number, ⌈2n/8⌉ bytes long; the unused high bits of the last
//! byte must be zero. For n = 7 that is 14 bits in 2 bytes.
//!
//! Decoding never panics: a wrong length, nonzero padding, `min > max` or an
//! unsupported n is a [`MinHeaderError`].

use serde::Serialize;

/// The largest n (stages) a [`RegionHeader`] supports: 2n bits fit a `u64`.
pub const MAX_STAGES: u32 = 31;

/// A malformed region header or a header that does not fit the network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MinHeaderError {
    /// n outside `1..=MAX_STAGES`.
    #[error("a MIN has 1..={max} stages, not {0}", max = MAX_STAGES)]
    Stages(u32),
    /// An address with bits at or above bit n.
    #[error("address {addr} does not fit in {n} bits")]
    AddressTooWide {
        /// The address.
        addr: u64,
        /// The number of address bits.
        n: u32,
    },
    /// `min > max`.
    #[error("empty region: min {min} > max {max}")]
    Empty {
        /// The lower bound.
        min: u32,
        /// The upper bound.
        max: u32,
    },
    /// The byte string has the wrong length.
    #[error("a {n}-stage region header is {need} bytes, got {got}")]
    Length {
        /// Stages.
        n: u32,
        /// Bytes expected.
        need: usize,
        /// Bytes given.
        got: usize,
    },
    /// Nonzero bits above bit 2n.
    #[error("nonzero padding bits above bit {0}")]
    Padding(u32),
    /// The invariant m_{i'} = M_{i'} for i' > i does not hold at stage i, or
    /// the region bit pair is (1, 0): the header cannot be at this stage.
    #[error(
        "header [{min}, {max}] cannot arrive at stage {stage} (prefix above bit {stage} differs)"
    )]
    Invariant {
        /// The stage.
        stage: u32,
        /// The lower bound.
        min: u32,
        /// The upper bound.
        max: u32,
    },
    /// A stage number ≥ n.
    #[error("stage {stage} is outside a {n}-stage MIN")]
    Stage {
        /// The stage.
        stage: u32,
        /// Stages.
        n: u32,
    },
}

/// A region header of an n-stage MIN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct RegionHeader {
    n: u32,
    min: u32,
    max: u32,
}

fn check_n(n: u32) -> Result<(), MinHeaderError> {
    if (1..=MAX_STAGES).contains(&n) {
        Ok(())
    } else {
        Err(MinHeaderError::Stages(n))
    }
}

impl RegionHeader {
    /// The region `min..=max` of an n-stage MIN.
    ///
    /// # Errors
    /// [`MinHeaderError::Stages`], [`MinHeaderError::AddressTooWide`],
    /// [`MinHeaderError::Empty`].
    pub fn new(n: u32, min: u32, max: u32) -> Result<RegionHeader, MinHeaderError> {
        check_n(n)?;
        for a in [min, max] {
            if u64::from(a) >> n != 0 {
                return Err(MinHeaderError::AddressTooWide {
                    addr: u64::from(a),
                    n,
                });
            }
        }
        if min > max {
            return Err(MinHeaderError::Empty { min, max });
        }
        Ok(RegionHeader { n, min, max })
    }

    /// A unicast to `dst` (`min = max = dst`).
    ///
    /// # Errors
    /// As [`RegionHeader::new`].
    pub fn unicast(n: u32, dst: u32) -> Result<RegionHeader, MinHeaderError> {
        Self::new(n, dst, dst)
    }

    /// The number of stages (address bits).
    pub fn stages(&self) -> u32 {
        self.n
    }

    /// The lower bound.
    pub fn min(&self) -> u32 {
        self.min
    }

    /// The upper bound.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// The number of destinations, `max − min + 1`.
    pub fn fanout(&self) -> u32 {
        self.max - self.min + 1
    }

    /// Whether this is a unicast.
    pub fn is_unicast(&self) -> bool {
        self.min == self.max
    }

    /// The header as its 2n-bit number (`min | max << n`).
    pub fn to_bits(&self) -> u64 {
        u64::from(self.min) | (u64::from(self.max) << self.n)
    }

    /// The header from its 2n-bit number.
    ///
    /// # Errors
    /// [`MinHeaderError::Stages`], [`MinHeaderError::Padding`],
    /// [`MinHeaderError::Empty`].
    pub fn from_bits(n: u32, bits: u64) -> Result<RegionHeader, MinHeaderError> {
        check_n(n)?;
        if bits >> (2 * n) != 0 {
            return Err(MinHeaderError::Padding(2 * n));
        }
        let mask = (1u64 << n) - 1;
        // Both halves are < 2^31, so the casts are exact.
        let min = (bits & mask) as u32;
        let max = ((bits >> n) & mask) as u32;
        Self::new(n, min, max)
    }

    /// The number of bytes of an n-stage header, ⌈2n/8⌉.
    pub fn encoded_len(n: u32) -> usize {
        (2 * n as usize).div_ceil(8)
    }

    /// The wire bytes (see the module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let len = Self::encoded_len(self.n);
        self.to_bits().to_le_bytes()[..len].to_vec()
    }

    /// Decode the wire bytes of an n-stage header.
    ///
    /// # Errors
    /// [`MinHeaderError::Stages`], [`MinHeaderError::Length`],
    /// [`MinHeaderError::Padding`], [`MinHeaderError::Empty`].
    pub fn decode(n: u32, bytes: &[u8]) -> Result<RegionHeader, MinHeaderError> {
        check_n(n)?;
        let need = Self::encoded_len(n);
        if bytes.len() != need {
            return Err(MinHeaderError::Length {
                n,
                need,
                got: bytes.len(),
            });
        }
        let mut raw = [0u8; 8];
        raw[..need].copy_from_slice(bytes);
        Self::from_bits(n, u64::from_le_bytes(raw))
    }
}

/// The switch's decision for one header at one stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SeDecision {
    /// Forward the unchanged header on this output port (0 = upper).
    Forward(u32, RegionHeader),
    /// Replicate: port 0 gets the first header, port 1 the second.
    Replicate(RegionHeader, RegionHeader),
}

impl SeDecision {
    /// The output ports requested, as a 2-bit set (bit p = port p).
    pub fn ports(&self) -> u8 {
        match self {
            SeDecision::Forward(p, _) => 1 << p,
            SeDecision::Replicate(..) => 0b11,
        }
    }

    /// The (port, header) pairs, port 0 first.
    pub fn outputs(&self) -> Vec<(u32, RegionHeader)> {
        match *self {
            SeDecision::Forward(p, h) => vec![(p, h)],
            SeDecision::Replicate(a, b) => vec![(0, a), (1, b)],
        }
    }
}

/// The paper's SE rule at stage `stage` (§2.2): (m_i, M_i) = (0,0) → port 0,
/// (1,1) → port 1, (0,1) → replicate with port 0 getting
/// max := M_{n−1}…M_{i+1} 0 1…1 and port 1 getting min := m_{n−1}…m_{i+1} 1 0…0.
///
/// # Errors
/// [`MinHeaderError::Stage`] for a stage ≥ n; [`MinHeaderError::Invariant`]
/// when the bits above `stage` of min and max differ (the header cannot be at
/// this stage; this also excludes (m_i, M_i) = (1, 0)).
pub fn decide(h: RegionHeader, stage: u32) -> Result<SeDecision, MinHeaderError> {
    if stage >= h.n {
        return Err(MinHeaderError::Stage { stage, n: h.n });
    }
    let (lo, hi) = (u64::from(h.min), u64::from(h.max));
    if lo >> (stage + 1) != hi >> (stage + 1) {
        return Err(MinHeaderError::Invariant {
            stage,
            min: h.min,
            max: h.max,
        });
    }
    let (a, b) = ((lo >> stage) & 1, (hi >> stage) & 1);
    if a == b {
        return Ok(SeDecision::Forward(a as u32, h));
    }
    // a = 0, b = 1 (a = 1, b = 0 would mean min > max with an equal prefix).
    let ones = (1u64 << stage) - 1;
    let hi0 = ((hi >> (stage + 1)) << (stage + 1)) | ones;
    let lo1 = ((lo >> (stage + 1)) << (stage + 1)) | (1 << stage);
    Ok(SeDecision::Replicate(
        RegionHeader {
            n: h.n,
            min: h.min,
            max: hi0 as u32,
        },
        RegionHeader {
            n: h.n,
            min: lo1 as u32,
            max: h.max,
        },
    ))
}
