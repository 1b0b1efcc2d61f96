//! What a goodbye says: why a rank closes a connection.
//!
//! Carried as the payload of a [`Kind::Bye`](super::Kind) packet on a
//! per-peer connection, and after the rank in the fabric's `Frame::Bye`.
//!
//! ```text
//! tag u8   0 finalized  nothing follows
//!          1 departed   u64 next_seq: the first collective it did not complete
//!          2 expelled   UTF-8 reason (at most MAX_REASON bytes)
//! ```
//!
//! Every accepted encoding is the only one of its value (the fuzzers
//! re-encode byte for byte); decoding never panics.

use super::{u64_at, WireError};

/// Longest reason an expelled goodbye carries.
pub const MAX_REASON: usize = 1024;

/// Why a rank closes its connection (README "Failure semantics").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Goodbye {
    /// It called `finalize`: its final barrier completed; an orderly close.
    Finalized,
    /// It dropped its communicator (or returned from main) without
    /// `finalize`. Collectives numbered `next_seq` and later cannot
    /// complete: they fail everywhere, naming it. Earlier ones it completed.
    Departed { next_seq: u64 },
    /// The sender declared the receiver lost for `reason` and closes its
    /// connection to it: the receiver is cut off from the job.
    Expelled { reason: String },
}

impl Goodbye {
    /// The encoded goodbye.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Goodbye::Finalized => vec![0],
            Goodbye::Departed { next_seq } => {
                let mut b = vec![1];
                b.extend_from_slice(&next_seq.to_le_bytes());
                b
            }
            Goodbye::Expelled { reason } => {
                let mut end = reason.len().min(MAX_REASON);
                while !reason.is_char_boundary(end) {
                    end -= 1;
                }
                let mut b = vec![2];
                b.extend_from_slice(&reason.as_bytes()[..end]);
                b
            }
        }
    }

    /// Decode a goodbye; anything else is a [`WireError`].
    pub fn decode(b: &[u8]) -> Result<Goodbye, WireError> {
        let Some((&tag, rest)) = b.split_first() else {
            return Err(WireError::Truncated { need: 1, have: 0 });
        };
        match (tag, rest.len()) {
            (0, 0) => Ok(Goodbye::Finalized),
            (1, 8) => Ok(Goodbye::Departed {
                next_seq: u64_at(rest, 0),
            }),
            (2, n) if n <= MAX_REASON => std::str::from_utf8(rest)
                .map(|r| Goodbye::Expelled {
                    reason: r.to_owned(),
                })
                .map_err(|e| WireError::Field(format!("goodbye reason: {e}"))),
            (0 | 1 | 2, n) => Err(WireError::Field(format!(
                "goodbye {tag} with {n} bytes after its tag"
            ))),
            _ => Err(WireError::Field(format!("unknown goodbye {tag}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodbyes_round_trip_and_junk_is_refused() {
        for g in [
            Goodbye::Finalized,
            Goodbye::Departed { next_seq: 0 },
            Goodbye::Departed { next_seq: u64::MAX },
            Goodbye::Expelled {
                reason: "no data and no heartbeat for 1.8s".into(),
            },
        ] {
            assert_eq!(Goodbye::decode(&g.encode()), Ok(g));
        }
        for junk in [&[][..], &[3], &[0, 0], &[1, 1, 2], &[2, 0xff, 0xfe]] {
            assert!(Goodbye::decode(junk).is_err(), "{junk:?}");
        }
        let long = Goodbye::Expelled {
            reason: "é".repeat(MAX_REASON),
        };
        let b = long.encode();
        assert!(b.len() <= MAX_REASON + 1);
        assert!(Goodbye::decode(&b).is_ok());
    }
}
