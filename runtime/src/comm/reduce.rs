//! The reductions: reduce, allreduce, reduce_scatter, scan.
//!
//! # Reduction order (determinism)
//! Every reduction combines in one fixed order that depends only on the
//! number of ranks, so floating-point results are bit-identical on every
//! rank and every run:
//!
//! * reduce, allreduce, reduce_scatter: a binomial tree rooted at rank 0
//!   over ranks in rank order. In round k (k = 0, 1, ...), rank r with bit
//!   k clear combines `acc(r) op acc(r + 2^k)`, the left operand covering
//!   ranks [r, r + 2^k) and the right [r + 2^k, r + 2^(k+1)). With 4 ranks:
//!   `(x0 op x1) op (x2 op x3)`. The result then goes to the root (reduce),
//!   to every rank by the runtime's bcast from rank 0 (allreduce), or in
//!   blocks by scatter from rank 0 (reduce_scatter): every rank gets the
//!   very same bits. A small allreduce on a power-of-two number of ranks
//!   goes by recursive doubling, which combines in this very order (round k
//!   joins the same aligned blocks of 2^k ranks, lower op upper), so its
//!   bits are those of the tree.
//! * scan: a chain in rank order: rank r's result is
//!   `(...((x0 op x1) op x2) ... op xr)`.

use super::coll::check_len;
use super::elem::{check_op, from_bytes, to_bytes, Element, Op};
use super::p2p::Round;
use super::Comm;
use crate::control::OpKind;
use crate::Error;

/// Largest allreduce (bytes per rank) by recursive doubling.
pub const RD_MAX_BYTES: usize = 1024;

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
                return r.send(me - mask, &to_bytes(acc));
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
    pub fn reduce<T: Element>(&self, root: usize, buf: &mut [T], op: Op) -> Result<(), Error> {
        self.check_root("reduce", root)?;
        check_op::<T>(op, "reduce")?;
        let mut r = self.data_round::<T>(OpKind::Reduce, root, buf.len(), op.code())?;
        tracing::debug!(
            seq = r.seq,
            root,
            n = buf.len(),
            ?op,
            algorithm = "binomial to 0",
            "reduce"
        );
        if self.size == 1 {
            return Ok(());
        }
        let mut acc = buf.to_vec();
        self.tree_to_zero(&mut r, &mut acc, op)?;
        match (self.rank, root) {
            (0, 0) => buf.copy_from_slice(&acc),
            (0, _) => r.send(root, &to_bytes(&acc))?,
            (me, _) if me == root => {
                let b = r.recv(0)?;
                from_bytes(&b, buf, "reduce")?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Allreduce: every rank's `buf` gets the reduction under `op` of every
    /// rank's `buf`, bit-identical everywhere. Up to [`RD_MAX_BYTES`] on a
    /// power-of-two number of ranks: recursive doubling (log2 n exchanges;
    /// each pair combines lower block op upper block, the tree's order).
    /// Otherwise the binomial tree to rank 0, then the runtime's bcast from
    /// rank 0 (the configured algorithm, FPFS k-binomial by default), which
    /// takes a second collective number. On an error, `buf` may hold a
    /// partial result.
    pub fn allreduce<T: Element>(&self, buf: &mut [T], op: Op) -> Result<(), Error> {
        check_op::<T>(op, "allreduce")?;
        let mut r = self.data_round::<T>(OpKind::Allreduce, 0, buf.len(), op.code())?;
        let doubling = self.size.is_power_of_two() && buf.len() * T::SIZE <= RD_MAX_BYTES;
        let algorithm = if doubling {
            "recursive doubling"
        } else {
            "binomial to 0 + bcast"
        };
        tracing::debug!(seq = r.seq, n = buf.len(), ?op, algorithm, "allreduce");
        if self.size == 1 {
            return Ok(());
        }
        if doubling {
            return self.doubling(&mut r, buf, op);
        }
        self.tree_to_zero(&mut r, buf, op)?;
        let mut bytes = if self.rank == 0 {
            to_bytes(buf)
        } else {
            vec![0u8; buf.len() * T::SIZE]
        };
        self.bcast(0, &mut bytes)?;
        if self.rank != 0 {
            from_bytes(&bytes, buf, "allreduce")?;
        }
        Ok(())
    }

    /// Recursive doubling on a power-of-two number of ranks: in round k,
    /// ranks r and r xor 2^k exchange their blocks' results and both
    /// compute (lower block) op (upper block) from the same bits.
    fn doubling<T: Element>(&self, r: &mut Round<'_>, buf: &mut [T], op: Op) -> Result<(), Error> {
        let me = self.rank;
        let mut theirs = buf.to_vec();
        let mut mask = 1usize;
        while mask < self.size {
            let peer = me ^ mask;
            r.send(peer, &to_bytes(buf))?;
            let b = r.recv(peer)?;
            from_bytes(&b, &mut theirs, "allreduce")?;
            if peer > me {
                T::combine(op, buf, &theirs);
            } else {
                T::combine(op, &mut theirs, buf);
                buf.copy_from_slice(&theirs);
            }
            mask <<= 1;
        }
        Ok(())
    }

    /// Reduce-scatter: rank r's `recv` gets block r of the reduction under
    /// `op` of every rank's `send` (`size × recv.len()` elements). Reduce
    /// to rank 0 (the binomial tree), then scatter from rank 0.
    pub fn reduce_scatter<T: Element>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<(), Error> {
        check_op::<T>(op, "reduce_scatter")?;
        check_len("reduce_scatter", "send", send.len(), self.size * recv.len())?;
        let mut r = self.data_round::<T>(OpKind::ReduceScatter, 0, recv.len(), op.code())?;
        tracing::debug!(
            seq = r.seq,
            n = recv.len(),
            ?op,
            algorithm = "binomial to 0 + scatter",
            "reduce_scatter"
        );
        let mut acc = send.to_vec();
        self.tree_to_zero(&mut r, &mut acc, op)?;
        self.scatter_in(&mut r, 0, &acc, recv)
    }

    /// Inclusive scan: rank r's `buf` gets the reduction under `op` of
    /// ranks 0..=r's `buf`. A chain in rank order: rank r receives the
    /// prefix from r − 1, combines (prefix op own), sends on to r + 1.
    pub fn scan<T: Element>(&self, buf: &mut [T], op: Op) -> Result<(), Error> {
        check_op::<T>(op, "scan")?;
        let mut r = self.data_round::<T>(OpKind::Scan, 0, buf.len(), op.code())?;
        tracing::debug!(seq = r.seq, n = buf.len(), ?op, algorithm = "chain", "scan");
        let me = self.rank;
        if me > 0 {
            let b = r.recv(me - 1)?;
            let mut acc = buf.to_vec();
            from_bytes(&b, &mut acc, "scan")?;
            T::combine(op, &mut acc, buf);
            buf.copy_from_slice(&acc);
        }
        if me + 1 < self.size {
            r.send(me + 1, &to_bytes(buf))?;
        }
        Ok(())
    }
}
