//! Rank-to-rank control messages and collective fingerprints: how ranks find
//! out that a collective was called inconsistently.
//!
//! Every collective call has a [`Fingerprint`]: which collective, the root,
//! the buffer length and the tree its algorithm resolves to. Ranks compare
//! fingerprints in three places (see `Inbox`):
//!
//! 1. **On the data path, for free:** a bcast packet carries the root, the
//!    message length and the tree (in its route header), so a receiver checks
//!    them against its own call; a barrier's point-to-point packet says that
//!    its sender is in a barrier.
//! 2. **By probe, when stuck:** a rank that waits in a collective for
//!    `MCAST_PROBE_MS` without progress sends [`Control::Probe`] with its
//!    fingerprint to every peer; a peer compares it with its own call of the
//!    same sequence number (now, or when it gets there). This finds the
//!    mismatches that stop all data, such as two ranks each naming the other
//!    as the root.
//! 3. **By notice:** whoever finds a mismatch sends [`Control::Mismatch`] to
//!    every rank. A rank still in that call returns `Error::Mismatch` from it;
//!    a rank that has already returned (the root of a bcast returns once its
//!    data is handed to the NI) gets it from its next call.
//!
//! Control messages travel as the payload of a `Kind::Control` packet,
//! postcard-encoded. Decoding is bounded by the packet's payload length, so a
//! hostile length inside cannot allocate more than the packet brought.

use serde::{Deserialize, Serialize};

use crate::tree_kind::TreeKind;
use crate::wire::{self, WireError};

/// Which collective a call is. New variants go at the end: postcard
/// encodes a variant by its index, so an older rank decodes the old ones
/// unchanged and refuses (never panics on) a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpKind {
    Bcast,
    Barrier,
    Reduce,
    Allreduce,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    ReduceScatter,
    Scan,
}

const OP_KINDS: [OpKind; 10] = [
    OpKind::Bcast,
    OpKind::Barrier,
    OpKind::Reduce,
    OpKind::Allreduce,
    OpKind::Gather,
    OpKind::Scatter,
    OpKind::Allgather,
    OpKind::Alltoall,
    OpKind::ReduceScatter,
    OpKind::Scan,
];

impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OpKind::Bcast => "bcast",
            OpKind::Barrier => "barrier",
            OpKind::Reduce => "reduce",
            OpKind::Allreduce => "allreduce",
            OpKind::Gather => "gather",
            OpKind::Scatter => "scatter",
            OpKind::Allgather => "allgather",
            OpKind::Alltoall => "alltoall",
            OpKind::ReduceScatter => "reduce_scatter",
            OpKind::Scan => "scan",
        })
    }
}

/// Names of the reduction operators by code (`Fingerprint::tree.0` of a
/// data collective; 0: none).
pub const ROP_NAMES: [&str; 8] = [
    "none", "Sum", "Prod", "Min", "Max", "BitAnd", "BitOr", "BitXor",
];
/// The first code of a collective's algorithm in a data fingerprint:
/// allgather and alltoall have no reduction operator and put theirs in
/// `Fingerprint::tree.0`; allreduce puts its in the high byte of
/// `Fingerprint::tree.1` (above the element type). Ranks that chose
/// differently fail with a mismatch naming both.
pub const ALGO_BASE: u8 = 16;
/// Names of the collectives' algorithms by code − [`ALGO_BASE`].
pub const ALGO_NAMES: [&str; 9] = [
    "ring",
    "doubling",
    "pairwise",
    "bruck",
    "rabenseifner",
    "reduce_bcast",
    "multicast",
    "linear",
    "binomial",
];

/// Names of the element types by code (`Fingerprint::tree.1` of a data
/// collective).
pub const ELEMENT_NAMES: [&str; 11] = [
    "?", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64",
];

/// The name of call `seq` of kind `op`: "bcast #4" on the world, "bcast
/// #4 on communicator 2" on a sub-communicator (whose number `seq` counts
/// in its high bits, `wire::COMM_SHIFT`).
pub fn numbered(op: impl std::fmt::Display, seq: u64) -> String {
    match crate::wire::comm_of(seq) {
        0 => format!("{op} #{seq}"),
        c => format!(
            "{op} #{} on communicator {c}",
            seq - crate::wire::comm_base(c)
        ),
    }
}

/// What a rank passed to one collective call (the parts every rank must agree on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub op: OpKind,
    /// The root (0 for a barrier and for collectives without one).
    pub root: u32,
    /// The buffer length in bytes (0 for a barrier; for the data
    /// collectives, the bytes of one rank's block: see `comm::coll`).
    pub len: u64,
    /// The tree code and k of the resolved algorithm, as in a route header
    /// (both 0 for a barrier). For the data collectives (reduce ...
    /// scan): the reduction operator's code ([`ROP_NAMES`]) and the
    /// element type's ([`ELEMENT_NAMES`]), so the encoding stays the same.
    pub tree: (u8, u16),
}

/// Bytes of [`Fingerprint::to_bytes`].
pub const FP_BYTES: usize = 16;

impl Fingerprint {
    pub fn bcast(root: usize, len: usize, tree: TreeKind) -> Fingerprint {
        Fingerprint::bcast_code(root, len, wire::tree_code(tree))
    }

    /// A bcast's fingerprint from the (code, k) pair of its tree or worm
    /// (`Resolved::tree_code`).
    pub fn bcast_code(root: usize, len: usize, tree: (u8, u16)) -> Fingerprint {
        Fingerprint {
            op: OpKind::Bcast,
            root: root as u32,
            len: len as u64,
            tree,
        }
    }

    pub fn barrier() -> Fingerprint {
        Fingerprint {
            op: OpKind::Barrier,
            root: 0,
            len: 0,
            tree: (0, 0),
        }
    }

    /// A data collective's fingerprint: `len` bytes per block, reduction
    /// operator `rop` and element type `elem` by code.
    pub fn data(op: OpKind, root: usize, len: usize, rop: u8, elem: u8) -> Fingerprint {
        Fingerprint {
            op,
            root: root as u32,
            len: len as u64,
            tree: (rop, u16::from(elem)),
        }
    }

    /// This fingerprint with algorithm `algo` (a code from [`ALGO_BASE`])
    /// in the high byte of `tree.1`, beside a reduction operator.
    pub fn with_algo(mut self, algo: u8) -> Fingerprint {
        self.tree.1 = (self.tree.1 & 0xff) | u16::from(algo) << 8;
        self
    }

    /// A fixed 16-byte encoding, carried at the head of a collective's
    /// point-to-point messages (so a receiver checks its sender's call):
    /// u8 op, u8 tree code, u16 k, u32 root, u64 len, little-endian.
    pub fn to_bytes(&self) -> [u8; FP_BYTES] {
        let mut b = [0u8; FP_BYTES];
        b[0] = OP_KINDS.iter().position(|&o| o == self.op).unwrap_or(0) as u8;
        b[1] = self.tree.0;
        b[2..4].copy_from_slice(&self.tree.1.to_le_bytes());
        b[4..8].copy_from_slice(&self.root.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Decode [`Fingerprint::to_bytes`]' first bytes of `b`; `None` if
    /// too short or the collective is unknown (never panics).
    pub fn from_bytes(b: &[u8]) -> Option<Fingerprint> {
        let b: &[u8; FP_BYTES] = b.get(..FP_BYTES)?.try_into().ok()?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut len = [0u8; 8];
        len.copy_from_slice(&b[8..16]);
        Some(Fingerprint {
            op: *OP_KINDS.get(b[0] as usize)?,
            tree: (b[1], u16::from_le_bytes([b[2], b[3]])),
            root: u32_at(4),
            len: u64::from_le_bytes(len),
        })
    }

    /// Whether this is a data collective (reduce ... scan).
    fn is_data(&self) -> bool {
        !matches!(self.op, OpKind::Bcast | OpKind::Barrier)
    }

    /// The operation name used in errors: `bcast #7`.
    pub fn op_name(&self, seq: u64) -> String {
        numbered(self.op, seq)
    }

    /// Compare `theirs` (rank `them`'s call) with `self` (rank `me`'s call of
    /// the same sequence number). `None` when they agree; otherwise what differs,
    /// worded the same whichever rank finds it.
    pub fn differs(&self, me: usize, theirs: &Fingerprint, them: usize) -> Option<String> {
        if self.op != theirs.op {
            return Some(format!(
                "rank {them} called {}, rank {me} called {}",
                theirs.op, self.op
            ));
        }
        if self.root != theirs.root {
            return Some(format!(
                "rank {them} passed root {}, rank {me} passed root {}",
                theirs.root, self.root
            ));
        }
        if self.len != theirs.len {
            return Some(format!(
                "rank {them} passed {} bytes, rank {me} passed {} bytes",
                theirs.len, self.len
            ));
        }
        let [elem, algo] = self.tree.1.to_le_bytes();
        let [their_elem, their_algo] = theirs.tree.1.to_le_bytes();
        if self.is_data() && elem != their_elem {
            let name = |c: u8| ELEMENT_NAMES.get(c as usize).copied().unwrap_or("?");
            return Some(format!(
                "rank {them} passed {} elements, rank {me} passed {} elements",
                name(their_elem),
                name(elem)
            ));
        }
        let algo_name = |c: u8| {
            let i = c.wrapping_sub(ALGO_BASE) as usize;
            ALGO_NAMES.get(i).copied().unwrap_or("?")
        };
        if self.is_data() && algo != their_algo {
            return Some(format!(
                "rank {them} runs {}, rank {me} runs {}",
                algo_name(their_algo),
                algo_name(algo)
            ));
        }
        if self.is_data() && self.tree.0 != theirs.tree.0 && self.tree.0 >= ALGO_BASE {
            return Some(format!(
                "rank {them} runs {}, rank {me} runs {}",
                algo_name(theirs.tree.0),
                algo_name(self.tree.0)
            ));
        }
        if self.is_data() && self.tree.0 != theirs.tree.0 {
            let name = |c: u8| ROP_NAMES.get(c as usize).copied().unwrap_or("?");
            return Some(format!(
                "rank {them} reduces with {}, rank {me} with {}",
                name(theirs.tree.0),
                name(self.tree.0)
            ));
        }
        if self.tree != theirs.tree {
            return Some(format!(
                "rank {them} uses algorithm {}, rank {me} uses {}",
                tree_name(theirs.tree),
                tree_name(self.tree)
            ));
        }
        None
    }
}

/// A readable name for a tree code: `kbinomial:3`, `flat`, `utorus`, ...
pub fn tree_name((code, k): (u8, u16)) -> String {
    match code {
        0 => "flat".into(),
        1 => format!("kbinomial:{k}"),
        2 => "utorus".into(),
        3 => "ucube".into(),
        4 => "maxport".into(),
        5 => "combine".into(),
        6 => "wsort".into(),
        crate::worms::WORM_TREE_CODE => crate::worms::Worm::from_code(u32::from(k))
            .map_or_else(|| format!("worm scheme {k}"), |w| w.to_string()),
        other => format!("tree code {other}"),
    }
}

/// A control message between ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Control {
    /// The sender has been waiting in collective `seq`; this is its call.
    Probe { seq: u64, fp: Fingerprint },
    /// Collective `seq` (`op`, e.g. `bcast #7`) was called inconsistently.
    Mismatch {
        seq: u64,
        op: String,
        detail: String,
    },
    /// Flow control: the sender's host took `bytes` of the receiver's data
    /// in class `class` (0 collectives, 1 multicasts); sent to that source
    /// alone (see `inbox::flow`).
    Credit { class: u8, bytes: u64 },
}

/// Largest control payload accepted or sent.
pub const MAX_CONTROL: usize = 64 * 1024;

impl Control {
    pub fn encode(&self) -> Vec<u8> {
        // Serialising these plain structs into a Vec cannot fail.
        postcard::to_stdvec(self).unwrap_or_default()
    }

    pub fn decode(b: &[u8]) -> Result<Control, WireError> {
        if b.len() > MAX_CONTROL {
            return Err(WireError::Field(format!(
                "control message of {} bytes (max {MAX_CONTROL})",
                b.len()
            )));
        }
        postcard::from_bytes(b).map_err(|e| WireError::Field(format!("control message: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcast_algorithms::Shape;
    use proptest::prelude::*;

    #[test]
    fn differences_are_named() {
        let a = Fingerprint::bcast(0, 8, TreeKind::Chain(Shape::KBinomial { k: 2 }));
        assert_eq!(a.differs(1, &a, 2), None);
        let root = Fingerprint::bcast(1, 8, TreeKind::Chain(Shape::KBinomial { k: 2 }));
        assert_eq!(
            a.differs(1, &root, 2).unwrap(),
            "rank 2 passed root 1, rank 1 passed root 0"
        );
        let len = Fingerprint::bcast(0, 9, TreeKind::Chain(Shape::KBinomial { k: 2 }));
        assert!(a.differs(1, &len, 2).unwrap().contains("9 bytes"));
        let algo = Fingerprint::bcast(0, 8, TreeKind::Chain(Shape::Flat));
        assert_eq!(
            a.differs(1, &algo, 2).unwrap(),
            "rank 2 uses algorithm flat, rank 1 uses kbinomial:2"
        );
        assert_eq!(
            a.differs(1, &Fingerprint::barrier(), 2).unwrap(),
            "rank 2 called barrier, rank 1 called bcast"
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(Control::decode(&[]).is_err());
        assert!(Control::decode(&[7, 1, 2]).is_err());
        assert!(Control::decode(&vec![0u8; MAX_CONTROL + 1]).is_err());
        // A string length of 2^60 must not allocate.
        assert!(
            Control::decode(&[1, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]).is_err()
        );
    }

    #[test]
    fn data_collectives_are_named_and_round_trip() {
        let a = Fingerprint::data(OpKind::Allreduce, 0, 24, 1, 10);
        assert_eq!(Fingerprint::from_bytes(&a.to_bytes()), Some(a));
        let op = Fingerprint::data(OpKind::Allreduce, 0, 24, 4, 10);
        assert_eq!(
            a.differs(1, &op, 2).unwrap(),
            "rank 2 reduces with Max, rank 1 with Sum"
        );
        let ty = Fingerprint::data(OpKind::Allreduce, 0, 24, 1, 4);
        assert_eq!(
            a.differs(1, &ty, 2).unwrap(),
            "rank 2 passed i64 elements, rank 1 passed f64 elements"
        );
        let other = Fingerprint::data(OpKind::Scan, 0, 24, 1, 10);
        assert!(a.differs(1, &other, 2).unwrap().contains("called scan"));
        assert_eq!(Fingerprint::from_bytes(&[0u8; 15]), None);
        assert_eq!(Fingerprint::from_bytes(&[99u8; 16]), None);
    }

    #[test]
    fn data_algorithms_that_differ_are_named() {
        let ring = Fingerprint::data(OpKind::Allgather, 0, 8, ALGO_BASE, 5);
        let doubling = Fingerprint::data(OpKind::Allgather, 0, 8, ALGO_BASE + 1, 5);
        let why = ring.differs(0, &doubling, 1).expect("a mismatch");
        assert_eq!(why, "rank 1 runs doubling, rank 0 runs ring");
        assert_eq!(ring.differs(0, &ring, 1), None);
    }

    #[test]
    fn calls_on_a_sub_communicator_are_named_with_it() {
        assert_eq!(numbered("bcast", 4), "bcast #4");
        let seq = crate::wire::comm_base(3) | 4;
        assert_eq!(numbered("allreduce", seq), "allreduce #4 on communicator 3");
    }

    #[test]
    fn allreduce_algorithms_that_differ_are_named() {
        let sum = Fingerprint::data(OpKind::Allreduce, 0, 80, 1, 10);
        let raben = sum.with_algo(ALGO_BASE + 4);
        let ring = sum.with_algo(ALGO_BASE);
        assert_eq!(Fingerprint::from_bytes(&raben.to_bytes()), Some(raben));
        assert_eq!(
            raben.differs(0, &ring, 1).unwrap(),
            "rank 1 runs ring, rank 0 runs rabenseifner"
        );
        let rb = sum.with_algo(ALGO_BASE + 5);
        assert_eq!(
            rb.differs(2, &raben, 3).unwrap(),
            "rank 3 runs rabenseifner, rank 2 runs reduce_bcast"
        );
        assert_eq!(raben.differs(0, &raben, 1), None);
        // The element type and the operator are still told apart first.
        let f32s = Fingerprint::data(OpKind::Allreduce, 0, 80, 1, 9).with_algo(ALGO_BASE);
        assert!(raben.differs(0, &f32s, 1).unwrap().contains("f32 elements"));
        let max = Fingerprint::data(OpKind::Allreduce, 0, 80, 4, 10).with_algo(ALGO_BASE + 4);
        assert_eq!(
            raben.differs(0, &max, 1).unwrap(),
            "rank 1 reduces with Max, rank 0 with Sum"
        );
    }

    proptest! {
        #[test]
        fn fingerprint_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..32)) {
            if let Some(fp) = Fingerprint::from_bytes(&b) {
                prop_assert_eq!(&fp.to_bytes()[..], &b[..FP_BYTES]);
            }
        }

        #[test]
        fn round_trip(seq: u64, root: u32, len: u64, code in 0u8..7, k: u16, op: String, detail: String, barrier: bool) {
            let fp = Fingerprint { op: if barrier { OpKind::Barrier } else { OpKind::Bcast }, root, len, tree: (code, k) };
            for c in [Control::Probe { seq, fp }, Control::Mismatch { seq, op: op.clone(), detail: detail.clone() }, Control::Credit { class: code, bytes: len }] {
                prop_assert_eq!(Control::decode(&c.encode()).unwrap(), c);
            }
        }

        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = Control::decode(&b);
        }
    }
}
