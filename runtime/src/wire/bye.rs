//! What a goodbye says: why a rank closes a connection.
//!
//! Carried as the payload of a [`Kind::Bye`](super::Kind) packet on a
//! per-peer connection, and after the rank in the fabric's `Frame::Bye`.
//!
//! ```text
//! tag u8   0 finalized  nothing follows
//!          1 departed   u32 cause: the lost rank it left after (u32::MAX: none),
//!                       u32 n, then n × u64 next: per communicator (its id in
//!                       the high bits, ids increasing), the first collective
//!                       it did not complete (a communicator not listed: none),
//!                       u32 count, then count entries (u32 rank, u32 sent):
//!                       the multicasts it sent that rank, ranks increasing,
//!                       sent > 0 (on a connection to one peer, only its own)
//!          2 expelled   UTF-8 reason (at most MAX_REASON bytes)
//! ```
//!
//! Every accepted encoding is the only one of its value (the fuzzers
//! re-encode byte for byte); decoding never panics.

use super::{comm_base, comm_of, u32_at, u64_at, WireError};

/// Longest reason an expelled goodbye carries.
pub const MAX_REASON: usize = 1024;

/// Why a rank closes its connection (README "Failure semantics").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Goodbye {
    /// It called `finalize`: its final barrier completed; an orderly close.
    Finalized,
    /// It dropped its communicator (or returned from main) without
    /// `finalize`. `next`: per communicator it ever used, the first
    /// collective it did not complete (sequence numbers, the communicator
    /// in the high bits, one per communicator, increasing). That one and
    /// the later ones of the communicator cannot complete: they fail
    /// everywhere, naming it; earlier ones it completed. A communicator
    /// not listed: it completed none there.
    /// `sent`: (rank, multicasts it sent that rank), so a receiver takes
    /// them all (some may come through other forwarders, after this
    /// goodbye) before it reports the departure. `cause`: a rank it had
    /// found lost before it left (its leaving is that loss's doing), which
    /// a receiver that has not found it yet records first.
    Departed {
        next: Vec<u64>,
        sent: Vec<(u32, u32)>,
        cause: Option<u32>,
    },
    /// The sender declared the receiver lost for `reason` and closes its
    /// connection to it: the receiver is cut off from the job.
    Expelled { reason: String },
}

impl Goodbye {
    /// A departure at collectives `next` (any order; of two of one
    /// communicator the earlier holds) with the multicasts sent to each
    /// rank (any order, zeros allowed: they are dropped).
    pub fn departed(
        next: impl IntoIterator<Item = u64>,
        sent: impl IntoIterator<Item = (usize, u32)>,
        cause: Option<usize>,
    ) -> Goodbye {
        let mut next: Vec<u64> = next.into_iter().collect();
        next.sort_unstable();
        next.dedup_by_key(|s| comm_of(*s));
        let mut sent: Vec<(u32, u32)> = sent
            .into_iter()
            .filter(|e| e.1 > 0)
            .map(|(r, n)| (r as u32, n))
            .collect();
        sent.sort_unstable();
        sent.dedup_by_key(|e| e.0);
        let cause = cause.map(|c| c.min(u32::MAX as usize - 1) as u32);
        Goodbye::Departed { next, sent, cause }
    }

    /// The first collective of communicator `comm` a departure did not
    /// complete (its first one if it lists none there; `None` if this is
    /// not a departure).
    pub fn next_in(&self, comm: u32) -> Option<u64> {
        match self {
            Goodbye::Departed { next, .. } => Some(next_in(next, comm)),
            _ => None,
        }
    }

    /// This goodbye as told to rank `peer` alone (a departure keeps only
    /// its count).
    pub fn for_peer(&self, peer: usize) -> Goodbye {
        match self {
            Goodbye::Departed { next, sent, cause } => Goodbye::Departed {
                next: next.clone(),
                cause: *cause,
                sent: sent
                    .iter()
                    .copied()
                    .filter(|e| e.0 as usize == peer)
                    .collect(),
            },
            g => g.clone(),
        }
    }

    /// How many multicasts a departed rank sent rank `me` (0 otherwise).
    pub fn sent_to(&self, me: usize) -> u32 {
        match self {
            Goodbye::Departed { sent, .. } => {
                sent.iter().find(|e| e.0 as usize == me).map_or(0, |e| e.1)
            }
            _ => 0,
        }
    }

    /// The encoded goodbye.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Goodbye::Finalized => vec![0],
            Goodbye::Departed { next, sent, cause } => {
                let mut b = vec![1];
                b.extend_from_slice(&cause.unwrap_or(u32::MAX).to_le_bytes());
                b.extend_from_slice(&(next.len() as u32).to_le_bytes());
                for s in next {
                    b.extend_from_slice(&s.to_le_bytes());
                }
                b.extend_from_slice(&(sent.len() as u32).to_le_bytes());
                for (rank, n) in sent {
                    b.extend_from_slice(&rank.to_le_bytes());
                    b.extend_from_slice(&n.to_le_bytes());
                }
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
            (1, _) => decode_departed(rest),
            (2, n) if n <= MAX_REASON => std::str::from_utf8(rest)
                .map(|r| Goodbye::Expelled {
                    reason: r.to_owned(),
                })
                .map_err(|e| WireError::Field(format!("goodbye reason: {e}"))),
            (0..=2, n) => Err(WireError::Field(format!(
                "goodbye {tag} with {n} bytes after its tag"
            ))),
            _ => Err(WireError::Field(format!("unknown goodbye {tag}"))),
        }
    }
}

/// The first collective of communicator `comm` not completed, by a
/// departure's `next` (its first one if `next` lists none there).
pub fn next_in(next: &[u64], comm: u32) -> u64 {
    next.iter()
        .copied()
        .find(|&s| comm_of(s) == comm)
        .unwrap_or_else(|| comm_base(comm))
}

/// A departure's fields, after its tag.
fn decode_departed(b: &[u8]) -> Result<Goodbye, WireError> {
    let short = |need: usize| WireError::Truncated {
        need,
        have: b.len(),
    };
    if b.len() < 8 {
        return Err(short(8));
    }
    let cause = Some(u32_at(b, 0)).filter(|&c| c != u32::MAX);
    let n = u32_at(b, 4) as usize;
    let need = n.saturating_mul(8).saturating_add(12);
    if b.len() < need {
        return Err(short(need));
    }
    let counts_at = need - 4;
    let next: Vec<u64> = b[8..counts_at]
        .chunks_exact(8)
        .map(|e| u64_at(e, 0))
        .collect();
    if !next.windows(2).all(|w| comm_of(w[0]) < comm_of(w[1])) {
        return Err(WireError::Field(
            "goodbye's collectives not one per communicator, in order".into(),
        ));
    }
    let count = u32_at(b, counts_at) as usize;
    let rest = &b[counts_at + 4..];
    if count.checked_mul(8) != Some(rest.len()) {
        return Err(WireError::Field(format!(
            "goodbye lists {count} multicast counts in {} bytes",
            rest.len()
        )));
    }
    let sent: Vec<(u32, u32)> = rest
        .chunks_exact(8)
        .map(|e| (u32_at(e, 0), u32_at(e, 4)))
        .collect();
    if !(sent.iter().all(|e| e.1 > 0) && sent.windows(2).all(|w| w[0].0 < w[1].0)) {
        return Err(WireError::Field(
            "goodbye's multicast counts not in rank order, or zero".into(),
        ));
    }
    Ok(Goodbye::Departed { next, sent, cause })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodbyes_round_trip_and_junk_is_refused() {
        let sub = comm_base(3);
        for g in [
            Goodbye::Finalized,
            Goodbye::departed([], [], None),
            Goodbye::departed([0], [], None),
            Goodbye::departed([sub + 2, 7], [(3, 2), (1, 7), (2, 0)], Some(5)),
            Goodbye::departed([u64::MAX], [(1, 1)], None),
            Goodbye::Expelled {
                reason: "no data and no heartbeat for 1.8s".into(),
            },
        ] {
            assert_eq!(Goodbye::decode(&g.encode()), Ok(g));
        }
        let d = Goodbye::departed([sub + 9, 4, sub + 2], [(3, 2), (1, 7)], None);
        assert_eq!(d.sent_to(1), 7);
        // Of two of one communicator the earlier holds; one not listed
        // completed nothing.
        assert_eq!(d.next_in(0), Some(4));
        assert_eq!(d.next_in(3), Some(sub + 2));
        assert_eq!(d.next_in(5), Some(comm_base(5)));
        assert_eq!(Goodbye::Finalized.next_in(0), None);
        assert_eq!(
            d.for_peer(3),
            Goodbye::departed([4, sub + 2], [(3, 2)], None)
        );
        let mut unordered = Goodbye::departed([4], [], None).encode();
        unordered[17] = 2;
        unordered.extend_from_slice(&[3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
        // Two collectives of one communicator.
        let mut twice = Goodbye::departed([4], [], None).encode();
        twice[5] = 2;
        twice.splice(17..17, 5u64.to_le_bytes());
        for junk in [
            &[][..],
            &[3],
            &[0, 0],
            &[1, 1, 2],
            &[2, 0xff, 0xfe],
            &unordered,
            &twice,
        ] {
            assert!(Goodbye::decode(junk).is_err(), "{junk:?}");
        }
        for at in [5, 17] {
            let mut long_count = Goodbye::departed([4], [], None).encode();
            long_count[at] = 0xff;
            assert!(Goodbye::decode(&long_count).is_err(), "{at}");
            long_count[at + 3] = 0xff;
            assert!(Goodbye::decode(&long_count).is_err(), "{at}");
        }
        let long = Goodbye::Expelled {
            reason: "é".repeat(MAX_REASON),
        };
        let b = long.encode();
        assert!(b.len() <= MAX_REASON + 1);
        assert!(Goodbye::decode(&b).is_ok());
    }
}
