//! The reductions: reduce, allreduce, reduce_scatter, scan.
//!
//! # Reduction order (determinism)
//! Every reduction combines in one fixed order that depends only on the
//! number of ranks (and, for allreduce, on the algorithm, which every rank
//! picks alike from the rank count and the bytes), so floating-point
//! results are bit-identical on every rank and, for a fixed size and rank
//! count, on every run. Each element of the result is computed once, by one
//! rank, in one fixed expression, and only copied from there; or (recursive
//! doubling) computed by several ranks from the very same operands in the
//! very same order. Below, `x_r` is rank r's buffer; in the trees the
//! lower ranks' values are the left operand, in the ring the partial result.
//!
//! * reduce, reduce_scatter, and allreduce `reduce_bcast`: a binomial tree
//!   rooted at rank 0 over ranks in rank order, `tree(x_0 .. x_{n-1})`. In
//!   round k (k = 0, 1, ...), rank r with bit k clear combines
//!   `acc(r) op acc(r + 2^k)`, the left operand covering ranks [r, r + 2^k)
//!   and the right [r + 2^k, r + 2^(k+1)). With 4 ranks:
//!   `(x0 op x1) op (x2 op x3)`; with 5, `((x0 op x1) op (x2 op x3)) op x4`.
//!   The result then goes to the root (reduce), to every rank by the
//!   runtime's bcast from rank 0 (allreduce), or in blocks by scatter from
//!   rank 0 (reduce_scatter).
//! * allreduce `doubling` and `rabenseifner`: with p the largest power of
//!   two ≤ n and e = n − p, the first 2e ranks fold in pairs first (as in
//!   MPICH: R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of
//!   Collective Communication Operations in MPICH", IJHPCA 19(1), 2005,
//!   the section on allreduce): rank 2i sends its buffer to rank 2i + 1,
//!   which holds `y_i = x_{2i} op x_{2i+1}`; for i ≥ e, `y_i = x_{i+e}`.
//!   The result is
//!   `tree(y_0 .. y_{p-1})`, the binomial order above over the p values:
//!   with a power-of-two n it is exactly reduce's order; with 5 ranks,
//!   `((x0 op x1) op x2) op (x3 op x4)`, with 6,
//!   `((x0 op x1) op (x2 op x3)) op (x4 op x5)`. Recursive doubling gets
//!   there by log2 p exchanges of the whole buffer, ranks v and v xor 2^k
//!   both computing (lower block) op (upper block) from the same bits;
//!   Rabenseifner's by recursive halving (round k = 0, 1, ...: ranks v and
//!   v xor 2^k split their common segment in halves, the lower rank keeping
//!   the lower half, and each combines the half it keeps, lower block op
//!   upper block), so that each of the p final segments is computed by one
//!   rank, then by recursive doubling of the segments (copies), and to the
//!   folded-away ranks by a copy from their pair.
//! * allreduce `ring`: the buffer in n blocks (block b holds elements
//!   [b·q + min(b, m), (b+1)·q + min(b+1, m)) for q = len / n, m = len mod
//!   n). Block b is reduced along the ring starting at rank b,
//!   `(((x_b op x_{b+1}) op x_{b+2}) ... op x_{b-1})` (indices mod n),
//!   ending at rank b − 1, then copied around the ring. So with 3 ranks,
//!   block 0 is `(x0 op x1) op x2` and block 1 `(x1 op x2) op x0`: each
//!   block has its own chain, fixed by the rank count alone.
//! * scan: a chain in rank order: rank r's result is
//!   `(...((x0 op x1) op x2) ... op xr)`.

mod allreduce;

use super::coll::check_len;
use super::elem::{check_op, from_bytes, Element, Op};
use super::p2p::Round;
use super::Comm;
use crate::control::OpKind;
use crate::Error;

/// Largest reduce (bytes per rank) sent whole; a larger one goes in
/// segments of this size (see [`Comm::reduce`]).
pub const REDUCE_SEGMENT_BYTES: usize = 64 << 10;

impl Comm {
    /// The binomial tree to rank 0 (see the module docs) inside round `r`:
    /// on return rank 0's `acc` holds the reduction of every rank's `acc`;
    /// the other ranks' `acc` hold partial results.
    fn tree_to_zero<T: Element>(
        &self,
        r: &mut Round<'_>,
        acc: &mut [T],
        op: Op,
    ) -> Result<(), Error> {
        let (me, size) = (self.rank, self.size);
        let mut mask = 1usize;
        while mask < size {
            if me & mask != 0 {
                return r.send_elems(me - mask, acc);
            }
            if me + mask < size {
                let b = r.recv(me + mask)?;
                let mut theirs = acc.to_vec();
                from_bytes(&b, &mut theirs, "reduce")?;
                T::combine(op, acc, &theirs);
            }
            mask <<= 1;
        }
        Ok(())
    }

    /// Reduce: `root`'s `buf` gets the reduction under `op` of every rank's
    /// `buf` (elementwise); the others' `buf` are unchanged. Binomial tree
    /// to rank 0 in rank order, then to the root (see the module docs).
    /// A buffer over [`REDUCE_SEGMENT_BYTES`] goes in segments of that
    /// size, one collective number each: a rank sends a segment up as soon
    /// as it has combined it, so the tree's levels work on different
    /// segments at once (a pipeline), and each element is still combined
    /// in the tree's order (the same bits as unsegmented).
    pub fn reduce<T: Element>(&self, root: usize, buf: &mut [T], op: Op) -> Result<(), Error> {
        self.check_root("reduce", root)?;
        check_op::<T>(op, "reduce")?;
        let mut acc = buf.to_vec();
        let kind = OpKind::Reduce;
        self.in_segments::<T>(kind, root, buf.len(), op, "binomial to 0", |r, part| {
            let mine = &mut acc[part.clone()];
            self.tree_to_zero(r, mine, op)?;
            match (self.rank, root) {
                (0, 0) => buf[part].copy_from_slice(mine),
                (0, _) => r.send_elems(root, mine)?,
                (me, _) if me == root => {
                    let b = r.recv(0)?;
                    from_bytes(&b, &mut buf[part], "reduce")?;
                }
                _ => {}
            }
            Ok(())
        })
    }

    /// Run `step` once per segment of `len` elements ([`REDUCE_SEGMENT_BYTES`]
    /// each; one segment, maybe empty, for a short buffer), each in a round
    /// of its own collective number: the call `kind` at `root` under `op`.
    /// The first round names the whole length, so ranks that pass different
    /// lengths fail there. A lone rank does nothing (but counts the calls).
    fn in_segments<T: Element>(
        &self,
        kind: OpKind,
        root: usize,
        len: usize,
        op: Op,
        algorithm: &str,
        mut step: impl FnMut(&mut Round<'_>, std::ops::Range<usize>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let seg = (REDUCE_SEGMENT_BYTES / T::SIZE).max(1);
        let count = len.div_ceil(seg).max(1);
        for k in 0..count {
            let part = k * seg..((k + 1) * seg).min(len);
            let named = if k == 0 { len } else { part.len() };
            let mut r = self.data_round::<T>(kind, root, named, op.code())?;
            if k == 0 {
                tracing::debug!(seq = r.seq, %kind, root, n = len, ?op, segments = count, algorithm);
            }
            if self.size > 1 {
                step(&mut r, part)?;
            }
        }
        Ok(())
    }

    /// Reduce-scatter: rank r's `recv` gets block r of the reduction under
    /// `op` of every rank's `send` (`size × recv.len()` elements). Reduce
    /// to rank 0 (the binomial tree, in segments as [`Comm::reduce`]), then
    /// scatter from rank 0.
    pub fn reduce_scatter<T: Element>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<(), Error> {
        check_op::<T>(op, "reduce_scatter")?;
        check_len("reduce_scatter", "send", send.len(), self.size * recv.len())?;
        let mut acc = send.to_vec();
        let kind = OpKind::ReduceScatter;
        self.in_segments::<T>(
            kind,
            0,
            acc.len(),
            op,
            "binomial to 0 + scatter",
            |r, part| self.tree_to_zero(r, &mut acc[part], op),
        )?;
        // The scatter from rank 0: a round of its own.
        let mut r = self.data_round::<T>(kind, 0, recv.len(), op.code())?;
        self.scatter_in(&mut r, 0, &acc, recv)
    }

    /// Inclusive scan: rank r's `buf` gets the reduction under `op` of
    /// ranks 0..=r's `buf`. A chain in rank order: rank r receives the
    /// prefix from r − 1, combines (prefix op own), sends on to r + 1; in
    /// segments as [`Comm::reduce`], so the chain is a pipeline.
    pub fn scan<T: Element>(&self, buf: &mut [T], op: Op) -> Result<(), Error> {
        check_op::<T>(op, "scan")?;
        let me = self.rank;
        self.in_segments::<T>(OpKind::Scan, 0, buf.len(), op, "chain", |r, part| {
            let mine = &mut buf[part];
            if me > 0 {
                let b = r.recv(me - 1)?;
                let mut acc = mine.to_vec();
                from_bytes(&b, &mut acc, "scan")?;
                T::combine(op, &mut acc, mine);
                mine.copy_from_slice(&acc);
            }
            if me + 1 < self.size {
                r.send_elems(me + 1, mine)?;
            }
            Ok(())
        })
    }
}
