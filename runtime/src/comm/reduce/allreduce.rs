//! allreduce's menu: recursive doubling, Rabenseifner's, the ring, and
//! reduce + bcast (`MCAST_ALLREDUCE`, [`Comm::allreduce_algorithm`]).
//! Each one's order of reduction is in the parent module's docs.

use crate::comm::coll::algo_code;
use crate::comm::elem::{check_op, from_bytes, to_bytes, Element, Op};
use crate::comm::p2p::Round;
use crate::comm::Comm;
use crate::control::{Fingerprint, OpKind};
use crate::{AllreduceAlgorithm, Error};

/// Largest allreduce (bytes per rank) `auto` runs by recursive doubling
/// on a power-of-two rank count.
pub const AR_DOUBLING_MAX_BYTES: usize = 8 << 10;
/// Largest allreduce (bytes per rank) `auto` runs by recursive doubling
/// on other rank counts (after the fold).
pub const AR_DOUBLING_FOLDED_MAX_BYTES: usize = 1024;
/// Smallest allreduce (bytes per rank) `auto` runs by Rabenseifner's
/// algorithm on a rank count that is not a power of two (below it, reduce
/// + bcast).
pub const AR_RABENSEIFNER_MIN_BYTES: usize = 64 << 10;
/// `auto` runs the ring once each of its n blocks holds at least this
/// many bytes (bytes per rank ≥ n × this): its 2 (n − 1) steps then cost
/// less than the log2 exchanges' larger messages.
pub const AR_RING_MIN_BLOCK_BYTES: usize = 32 << 10;

/// The fold of the ranks beyond a power of two (the parent's module docs):
/// `p` ranks take part in the power-of-two algorithm, rank 2i + 1 as
/// virtual rank i for i < `extra`, rank i + `extra` as i above.
#[derive(Clone, Copy)]
struct Fold {
    p: usize,
    extra: usize,
}

impl Fold {
    fn new(size: usize) -> Fold {
        let p = 1usize << (usize::BITS - 1 - size.leading_zeros());
        Fold { p, extra: size - p }
    }

    /// This rank's virtual rank; `None` for a rank folded into its pair.
    fn virtual_rank(self, rank: usize) -> Option<usize> {
        match rank {
            r if r >= 2 * self.extra => Some(r - self.extra),
            r if r % 2 == 1 => Some(r / 2),
            _ => None,
        }
    }

    /// The real rank of virtual rank `v`.
    fn real(self, v: usize) -> usize {
        if v < self.extra {
            2 * v + 1
        } else {
            v + self.extra
        }
    }
}

/// `auto`'s choice for `bytes` bytes per rank on `size` ranks (see
/// [`Comm::allreduce_algorithm`]).
fn auto(size: usize, bytes: usize) -> AllreduceAlgorithm {
    let pow2 = size.is_power_of_two();
    if bytes <= AR_DOUBLING_FOLDED_MAX_BYTES || (pow2 && bytes <= AR_DOUBLING_MAX_BYTES) {
        AllreduceAlgorithm::Doubling
    } else if bytes >= size.saturating_mul(AR_RING_MIN_BLOCK_BYTES) {
        AllreduceAlgorithm::Ring
    } else if pow2 || bytes >= AR_RABENSEIFNER_MIN_BYTES {
        AllreduceAlgorithm::Rabenseifner
    } else {
        AllreduceAlgorithm::ReduceBcast
    }
}

/// `mine = theirs op mine` (`theirs` holds the lower ranks' values).
fn combine_lower<T: Element>(op: Op, theirs: &mut [T], mine: &mut [T]) {
    T::combine(op, theirs, mine);
    mine.copy_from_slice(theirs);
}

impl Comm {
    /// Allreduce: every rank's `buf` gets the reduction under `op` of every
    /// rank's `buf`, bit-identical everywhere and, for a fixed length and
    /// rank count, on every run. The algorithm is `MCAST_ALLREDUCE`
    /// ([`Comm::allreduce_algorithm`]): recursive doubling, Rabenseifner's
    /// (reduce-scatter by recursive halving, allgather by recursive
    /// doubling), the ring (reduce-scatter and allgather around the ring),
    /// or the binomial tree to rank 0 then the runtime's bcast from rank 0
    /// (which takes a second collective number). Each combines in its own
    /// fixed order (module docs of `comm::reduce`). On an error, `buf` may
    /// hold a partial result.
    pub fn allreduce<T: Element>(&self, buf: &mut [T], op: Op) -> Result<(), Error> {
        check_op::<T>(op, "allreduce")?;
        let bytes = buf.len() * T::SIZE;
        let algo = self.allreduce_algorithm(bytes);
        let seq = self.next_seq();
        let fp = Fingerprint::data(OpKind::Allreduce, 0, bytes, op.code(), T::CODE)
            .with_algo(algo_code(&algo.to_string()));
        let mut r = Round::begin(self, seq, fp)?;
        tracing::debug!(seq, n = buf.len(), ?op, algorithm = %algo, "allreduce");
        if self.size == 1 {
            return Ok(());
        }
        match algo {
            AllreduceAlgorithm::Ring => self.ring_allreduce(&mut r, fp, buf, op),
            AllreduceAlgorithm::Doubling | AllreduceAlgorithm::Rabenseifner => {
                let fold = Fold::new(self.size);
                let me = self.rank;
                let Some(v) = self.fold_in(&mut r, fold, buf, op)? else {
                    // Folded into rank me + 1: the result comes from there.
                    let b = r.recv(me + 1)?;
                    return from_bytes(&b, buf, "allreduce");
                };
                if algo == AllreduceAlgorithm::Doubling {
                    self.doubling(&mut r, fold, v, buf, op)?;
                } else {
                    self.rabenseifner(&mut r, fold, v, buf, op)?;
                }
                if me < 2 * fold.extra {
                    r.send_elems(me - 1, buf)?;
                }
                Ok(())
            }
            AllreduceAlgorithm::ReduceBcast | AllreduceAlgorithm::Auto => {
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
        }
    }

    /// The allreduce algorithm every rank picks for `bytes` bytes per rank:
    /// `MCAST_ALLREDUCE` if set; `auto` takes, in this order, recursive
    /// doubling up to [`AR_DOUBLING_FOLDED_MAX_BYTES`], and on a
    /// power-of-two rank count up to [`AR_DOUBLING_MAX_BYTES`]; the ring
    /// from n ×
    /// [`AR_RING_MIN_BLOCK_BYTES`]; Rabenseifner's on a power-of-two rank
    /// count or from [`AR_RABENSEIFNER_MIN_BYTES`]; else reduce + bcast.
    /// The thresholds were measured here (mcbench at 3 to 8 ranks:
    /// README "Collectives and point-to-point").
    pub fn allreduce_algorithm(&self, bytes: usize) -> AllreduceAlgorithm {
        match self.cfg.allreduce {
            AllreduceAlgorithm::Auto => auto(self.size, bytes),
            chosen => chosen,
        }
    }

    /// The fold: rank 2i sends its buffer to rank 2i + 1, which combines
    /// `x_{2i} op x_{2i+1}` (i < extra). This rank's virtual rank, or
    /// `None` if it was folded away.
    fn fold_in<T: Element>(
        &self,
        r: &mut Round<'_>,
        fold: Fold,
        buf: &mut [T],
        op: Op,
    ) -> Result<Option<usize>, Error> {
        let me = self.rank;
        let v = fold.virtual_rank(me);
        if me < 2 * fold.extra {
            if v.is_none() {
                r.send_elems(me + 1, buf)?;
            } else {
                let b = r.recv(me - 1)?;
                let mut theirs = buf.to_vec();
                from_bytes(&b, &mut theirs, "allreduce")?;
                combine_lower(op, &mut theirs, buf);
            }
        }
        Ok(v)
    }

    /// Recursive doubling among the fold's p ranks (this one is virtual
    /// rank `v`): in round k, virtual ranks v and v xor 2^k exchange their
    /// results and both compute (lower block) op (upper block) from the
    /// same bits.
    fn doubling<T: Element>(
        &self,
        r: &mut Round<'_>,
        fold: Fold,
        v: usize,
        buf: &mut [T],
        op: Op,
    ) -> Result<(), Error> {
        let mut theirs = buf.to_vec();
        let mut mask = 1usize;
        while mask < fold.p {
            let peer = fold.real(v ^ mask);
            r.send_elems(peer, buf)?;
            let b = r.recv(peer)?;
            from_bytes(&b, &mut theirs, "allreduce")?;
            if v & mask == 0 {
                T::combine(op, buf, &theirs);
            } else {
                combine_lower(op, &mut theirs, buf);
            }
            mask <<= 1;
        }
        Ok(())
    }

    /// Rabenseifner's allreduce among the fold's p ranks (R. Rabenseifner,
    /// "Optimization of Collective Reduction Operations", ICCS 2004, LNCS
    /// 3036; Thakur, Rabenseifner, Gropp, IJHPCA 2005, on allreduce):
    /// reduce-scatter by recursive halving (round k = 0, 1, ...: virtual
    /// ranks v and v xor 2^k halve their common segment, the lower keeping
    /// the lower half; each sends the other half and combines the half it
    /// keeps, lower block op upper block), then allgather by recursive
    /// doubling (the same rounds backwards, each rank sending the segment
    /// it holds and taking its partner's).
    fn rabenseifner<T: Element>(
        &self,
        r: &mut Round<'_>,
        fold: Fold,
        v: usize,
        buf: &mut [T],
        op: Op,
    ) -> Result<(), Error> {
        let (mut lo, mut hi) = (0usize, buf.len());
        let mut segments = Vec::new();
        let mut mask = 1usize;
        while mask < fold.p {
            let peer = fold.real(v ^ mask);
            let mid = lo + (hi - lo) / 2;
            let lower = v & mask == 0;
            let (keep, give) = if lower {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            r.send_elems(peer, &buf[give.0..give.1])?;
            let b = r.recv(peer)?;
            let mine = &mut buf[keep.0..keep.1];
            let mut theirs = mine.to_vec();
            from_bytes(&b, &mut theirs, "allreduce")?;
            if lower {
                T::combine(op, mine, &theirs);
            } else {
                combine_lower(op, &mut theirs, mine);
            }
            segments.push((lo, hi));
            (lo, hi) = keep;
            mask <<= 1;
        }
        while let Some((plo, phi)) = segments.pop() {
            mask >>= 1;
            let peer = fold.real(v ^ mask);
            let other = if v & mask == 0 { (hi, phi) } else { (plo, lo) };
            r.send_elems(peer, &buf[lo..hi])?;
            let b = r.recv(peer)?;
            from_bytes(&b, &mut buf[other.0..other.1], "allreduce")?;
            (lo, hi) = (plo, phi);
        }
        Ok(())
    }

    /// The ring allreduce (P. Patarasuk, X. Yuan, "Bandwidth Optimal
    /// All-reduce Algorithms for Clusters of Workstations", JPDC 69(2),
    /// 2009, their bandwidth-optimal ring):
    /// reduce-scatter around the ring (step s: send block me − s to the
    /// right neighbour, take block me − s − 1 from the left one and combine
    /// partial op own), after which this rank holds block me + 1 whole;
    /// then allgather around the ring (copies). A collective's round carries
    /// fewer messages to one peer than there are ranks, so the allgather
    /// takes a second collective number (with the same fingerprint).
    fn ring_allreduce<T: Element>(
        &self,
        r: &mut Round<'_>,
        fp: Fingerprint,
        buf: &mut [T],
        op: Op,
    ) -> Result<(), Error> {
        let (me, n) = (self.rank, self.size);
        let (q, m) = (buf.len() / n, buf.len() % n);
        let start = |b: usize| b * q + b.min(m);
        let block = |b: usize| start(b)..start(b + 1);
        let (right, left) = ((me + 1) % n, (me + n - 1) % n);
        for s in 0..n - 1 {
            let (out, into) = ((me + n - s) % n, (me + 2 * n - s - 1) % n);
            r.send_elems(right, &buf[block(out)])?;
            let b = r.recv(left)?;
            let mut theirs = buf[block(into)].to_vec();
            from_bytes(&b, &mut theirs, "allreduce")?;
            combine_lower(op, &mut theirs, &mut buf[block(into)]);
        }
        let mut r = Round::begin(self, self.next_seq(), fp)?;
        for s in 0..n - 1 {
            let (out, into) = ((me + 1 + n - s) % n, (me + n - s) % n);
            r.send_elems(right, &buf[block(out)])?;
            let b = r.recv(left)?;
            from_bytes(&b, &mut buf[block(into)], "allreduce")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AllreduceAlgorithm::*;

    #[test]
    fn the_fold_maps_ranks_both_ways() {
        for size in 1..=40 {
            let f = Fold::new(size);
            assert!(f.p.is_power_of_two() && f.p <= size && size < 2 * f.p);
            let mut seen = vec![false; f.p];
            for r in 0..size {
                match f.virtual_rank(r) {
                    Some(v) => {
                        assert_eq!(f.real(v), r, "size {size} rank {r}");
                        seen[v] = true;
                    }
                    // Folded away: an even rank among the first 2e.
                    None => assert!(r % 2 == 0 && r < 2 * f.extra),
                }
            }
            assert!(seen.iter().all(|&s| s), "size {size}");
        }
    }

    #[test]
    fn auto_follows_the_measured_rule() {
        let k = 1024;
        assert_eq!(auto(8, 8 * k), Doubling);
        assert_eq!(auto(8, 8 * k + 1), Rabenseifner);
        assert_eq!(auto(8, 256 * k - 1), Rabenseifner);
        assert_eq!(auto(8, 256 * k), Ring);
        assert_eq!(auto(4, 64), Doubling);
        assert_eq!(auto(4, 128 * k), Ring);
        assert_eq!(auto(5, 1024), Doubling);
        assert_eq!(auto(5, 1025), ReduceBcast);
        assert_eq!(auto(5, 64 * k - 1), ReduceBcast);
        assert_eq!(auto(5, 64 * k), Rabenseifner);
        assert_eq!(auto(5, 160 * k), Ring);
        assert_eq!(auto(1, 0), Doubling);
        assert_eq!(auto(usize::MAX, usize::MAX), Ring);
    }
}
