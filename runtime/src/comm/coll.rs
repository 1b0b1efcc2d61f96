//! The data-movement collectives: gather, scatter, allgather, alltoall.
//!
//! MPI block forms: every rank contributes or receives blocks of the same
//! number of elements. Arguments are checked before anything is sent (a bad
//! one is an [`Error::InvalidArgument`] at the rank that passed it); what
//! ranks must agree on (the collective, block length, root, element type)
//! travels in every message and in stall probes, so a mismatch is an
//! [`Error::Mismatch`] on every rank. All messages are the collective's own
//! point-to-point ones ([`Round`]).

use super::elem::{from_bytes, to_bytes, Element};
use super::p2p::Round;
use super::Comm;
use crate::control::{Fingerprint, OpKind, ALGO_BASE, ALGO_NAMES};
use crate::Error;
use crate::{AllgatherAlgorithm, AlltoallAlgorithm, TreeAlgorithm};

/// `len` copies of `like` (none if there is none to copy: then `len` is 0
/// wherever it is called).
pub(super) fn filled<T: Copy>(len: usize, like: Option<T>) -> Vec<T> {
    like.map_or_else(Vec::new, |x| vec![x; len])
}

/// `Err(InvalidArgument)` unless `got == want`.
pub(super) fn check_len(call: &str, what: &str, got: usize, want: usize) -> Result<(), Error> {
    if got != want {
        return Err(Error::InvalidArgument(format!(
            "{call}: {what} holds {got} elements, {want} expected"
        )));
    }
    Ok(())
}

impl Comm {
    pub(super) fn check_root(&self, call: &str, root: usize) -> Result<(), Error> {
        if root >= self.size {
            return Err(Error::InvalidArgument(format!(
                "{call} root {root} is not a rank of a {}-rank communicator",
                self.size
            )));
        }
        Ok(())
    }

    /// Enter a data collective: its number, and its round of messages.
    pub(super) fn data_round<T: Element>(
        &self,
        op: OpKind,
        root: usize,
        block: usize,
        rop: u8,
    ) -> Result<Round<'_>, Error> {
        let seq = self.next_seq();
        let fp = Fingerprint::data(op, root, block * T::SIZE, rop, T::CODE);
        Round::begin(self, seq, fp)
    }

    /// Gather: each rank's `send` ends up at `root`, rank r's in block r of
    /// the root's `recv` (`size × send.len()` elements; ignored elsewhere,
    /// and may be empty). `MCAST_GATHER` ([`Comm::gather_algorithm`]):
    /// linear (every rank sends its block to the root) or a binomial tree.
    pub fn gather<T: Element>(&self, root: usize, send: &[T], recv: &mut [T]) -> Result<(), Error> {
        self.check_root("gather", root)?;
        let n = send.len();
        if self.rank == root {
            check_len("gather", "the root's recv", recv.len(), self.size * n)?;
        }
        let algo = self.gather_algorithm(n * T::SIZE);
        let code = algo_code(&algo.to_string());
        let mut r = self.data_round::<T>(OpKind::Gather, root, n, code)?;
        tracing::debug!(seq = r.seq, root, n, algorithm = %algo, "gather");
        if algo == TreeAlgorithm::Binomial {
            return self.binomial_gather(&mut r, root, send, recv);
        }
        if self.rank != root {
            return r.send_elems(root, send);
        }
        recv[root * n..(root + 1) * n].copy_from_slice(send);
        for src in (0..self.size).filter(|&s| s != root) {
            let b = r.recv(src)?;
            from_bytes(&b, &mut recv[src * n..(src + 1) * n], "gather")?;
        }
        Ok(())
    }

    /// The binomial gather (MPICH's): in relative ranks (rank − root), in
    /// round k a rank with bit k set sends what it holds (its subtree's
    /// blocks, consecutive) to rank − 2^k and is done; the others receive
    /// their 2^k-subtree's blocks from rank + 2^k. ⌈log2 n⌉ rounds at the
    /// root instead of n − 1 receives.
    fn binomial_gather<T: Element>(
        &self,
        r: &mut Round<'_>,
        root: usize,
        send: &[T],
        recv: &mut [T],
    ) -> Result<(), Error> {
        let (size, n) = (self.size, send.len());
        let rel = (self.rank + size - root) % size;
        let abs = |x: usize| (x + root) % size;
        // The blocks of relative ranks rel, rel + 1, ... held so far.
        let mut held: Vec<T> = send.to_vec();
        let mut mask = 1usize;
        while mask < size {
            if rel & mask != 0 {
                return r.send_elems(abs(rel - mask), &held);
            }
            if rel + mask < size {
                let count = mask.min(size - rel - mask);
                let b = r.recv(abs(rel + mask))?;
                let at = held.len();
                held.extend(filled(count * n, send.first().copied()));
                from_bytes(&b, &mut held[at..], "gather")?;
            }
            mask <<= 1;
        }
        // The root: relative block j is rank root + j's.
        for j in 0..size {
            let a = abs(j);
            recv[a * n..(a + 1) * n].copy_from_slice(&held[j * n..(j + 1) * n]);
        }
        Ok(())
    }

    /// Scatter: block r of the root's `send` (`size × recv.len()` elements;
    /// ignored elsewhere) ends up in rank r's `recv`. Linear: the root sends
    /// each rank its block.
    pub fn scatter<T: Element>(
        &self,
        root: usize,
        send: &[T],
        recv: &mut [T],
    ) -> Result<(), Error> {
        self.check_root("scatter", root)?;
        let n = recv.len();
        if self.rank == root {
            check_len("scatter", "the root's send", send.len(), self.size * n)?;
        }
        let algo = self.gather_algorithm(n * T::SIZE);
        let code = algo_code(&algo.to_string());
        let mut r = self.data_round::<T>(OpKind::Scatter, root, n, code)?;
        tracing::debug!(seq = r.seq, root, n, algorithm = %algo, "scatter");
        if algo == TreeAlgorithm::Binomial {
            return self.binomial_scatter(&mut r, root, send, recv);
        }
        self.scatter_in(&mut r, root, send, recv)
    }

    /// The binomial scatter (MPICH's), gather's tree run backwards: a rank
    /// receives its subtree's blocks from its parent, then hands each child
    /// its 2^k-subtree's share, the largest first.
    fn binomial_scatter<T: Element>(
        &self,
        r: &mut Round<'_>,
        root: usize,
        send: &[T],
        recv: &mut [T],
    ) -> Result<(), Error> {
        let (size, n) = (self.size, recv.len());
        let rel = (self.rank + size - root) % size;
        let abs = |x: usize| (x + root) % size;
        // The blocks of relative ranks rel, rel + 1, ... this rank passes on.
        let mut held: Vec<T>;
        let mut mask = 1usize;
        if rel == 0 {
            held = (0..size)
                .flat_map(|j| send[abs(j) * n..(abs(j) + 1) * n].iter().copied())
                .collect();
            while mask < size {
                mask <<= 1;
            }
        } else {
            while rel & mask == 0 {
                mask <<= 1;
            }
            let count = mask.min(size - rel);
            held = filled(count * n, recv.first().copied());
            let b = r.recv(abs(rel - mask))?;
            from_bytes(&b, &mut held, "scatter")?;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < size {
                let count = mask.min(size - rel - mask);
                r.send(
                    abs(rel + mask),
                    &to_bytes(&held[mask * n..(mask + count) * n]),
                )?;
            }
            mask >>= 1;
        }
        recv.copy_from_slice(&held[..n]);
        Ok(())
    }

    /// The gather and scatter algorithm every rank picks for blocks of
    /// `block` bytes: `MCAST_GATHER` if set; `auto` takes linear, which
    /// beat the binomial tree at every size measured at 4 and 8 ranks
    /// (1.3–2.6× below 4 KiB, up to 29× at 1 MiB, where the tree copies
    /// each block once per level: bench/results/compare-mpi-coll-menu/gather_ab.md).
    /// The block size is kept as the selection's input for a rule that
    /// would pick the tree (across hosts, where a hop costs more).
    pub fn gather_algorithm(&self, _block: usize) -> TreeAlgorithm {
        match self.cfg.gather {
            TreeAlgorithm::Auto => TreeAlgorithm::Linear,
            chosen => chosen,
        }
    }

    /// Scatter's messages, inside round `r` (reduce_scatter uses it too).
    pub(super) fn scatter_in<T: Element>(
        &self,
        r: &mut Round<'_>,
        root: usize,
        send: &[T],
        recv: &mut [T],
    ) -> Result<(), Error> {
        let n = recv.len();
        if self.rank != root {
            let b = r.recv(root)?;
            return from_bytes(&b, recv, "scatter");
        }
        for dest in (0..self.size).filter(|&d| d != root) {
            r.send_elems(dest, &send[dest * n..(dest + 1) * n])?;
        }
        recv.copy_from_slice(&send[root * n..(root + 1) * n]);
        Ok(())
    }

    /// Allgather: every rank's `recv` (`size × send.len()` elements) gets
    /// rank r's `send` in block r. The algorithm is `MCAST_ALLGATHER`
    /// ([`Comm::allgather_algorithm`]): the ring (size − 1 steps, each
    /// passing one block to the right neighbour) or recursive doubling
    /// (log2 n exchanges, on a power-of-two number of ranks).
    pub fn allgather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<(), Error> {
        let n = send.len();
        check_len("allgather", "recv", recv.len(), self.size * n)?;
        let algo = self.allgather_algorithm(n * T::SIZE);
        let mut r = self.data_round::<T>(OpKind::Allgather, 0, n, algo_code(&algo.to_string()))?;
        tracing::debug!(seq = r.seq, n, algorithm = %algo, "allgather");
        let (me, size) = (self.rank, self.size);
        recv[me * n..(me + 1) * n].copy_from_slice(send);
        if algo == AllgatherAlgorithm::Multicast {
            return self.allgather_multicast(send, recv);
        }
        if algo == AllgatherAlgorithm::RecursiveDoubling {
            // After the exchange with rank xor 2^k, a rank holds the
            // blocks of its aligned group of 2^(k+1) ranks.
            let mut mask = 1usize;
            while mask < size {
                let peer = me ^ mask;
                let (mine, theirs) = (me & !(mask - 1), peer & !(mask - 1));
                r.send_elems(peer, &recv[mine * n..(mine + mask) * n])?;
                let b = r.recv(peer)?;
                from_bytes(&b, &mut recv[theirs * n..(theirs + mask) * n], "allgather")?;
                mask <<= 1;
            }
            return Ok(());
        }
        let (right, left) = ((me + 1) % size, (me + size - 1) % size);
        for step in 0..size - 1 {
            let out = (me + size - step) % size;
            let into = (me + size - step - 1) % size;
            r.send_elems(right, &recv[out * n..(out + 1) * n])?;
            let b = r.recv(left)?;
            from_bytes(&b, &mut recv[into * n..(into + 1) * n], "allgather")?;
        }
        Ok(())
    }

    /// Allgather by concurrent FPFS multicasts: the call takes one more
    /// collective number per rank, and under number r rank r bcasts its
    /// block down its own tree (the bcast's, `MCAST_ALGORITHM`; a tree even
    /// under a worm scheme). Every rank posts its own first, then takes the
    /// others' as they come: the NIs forward all n trees at once.
    fn allgather_multicast<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<(), Error> {
        let (me, size, n) = (self.rank, self.size, send.len());
        if size == 1 {
            return Ok(());
        }
        let mine = to_bytes(send);
        let resolved = self.bcast_tree(self.cfg.algorithm, mine.len(), true)?;
        let calls: Vec<(u64, Fingerprint)> = (0..size)
            .map(|r| {
                let fp = Fingerprint::bcast_code(self.world(r), mine.len(), resolved.tree_code());
                (self.next_seq(), fp)
            })
            .collect();
        for &(seq, fp) in &calls {
            self.begin(seq, fp)?;
        }
        let (seq, fp) = calls[me];
        self.bcast_post(seq, fp, &mine, resolved)?;
        let mut b = vec![0u8; mine.len()];
        for k in 1..size {
            let r = (me + size - k) % size;
            let (seq, fp) = calls[r];
            self.bcast_take(seq, fp, r, &mut b, resolved)?;
            from_bytes(&b, &mut recv[r * n..(r + 1) * n], "allgather")?;
        }
        Ok(())
    }

    /// The allgather algorithm every rank picks for blocks of `block`
    /// bytes: `MCAST_ALLGATHER` if set (doubling falls back to the ring on
    /// a rank count that is not a power of two); `auto` takes the
    /// concurrent multicasts for blocks of [`AG_MULTICAST_MIN_BYTES`] and
    /// more among more than 2 ranks, recursive doubling on a power-of-two
    /// rank count up to [`AG_DOUBLING_MAX_BYTES`] gathered, else the ring
    /// (thresholds measured here: README "Collectives and point-to-point").
    pub fn allgather_algorithm(&self, block: usize) -> AllgatherAlgorithm {
        let pow2 = self.size.is_power_of_two();
        match self.cfg.allgather {
            AllgatherAlgorithm::RecursiveDoubling if pow2 => AllgatherAlgorithm::RecursiveDoubling,
            AllgatherAlgorithm::Multicast => AllgatherAlgorithm::Multicast,
            AllgatherAlgorithm::Auto if self.size > 2 && block >= AG_MULTICAST_MIN_BYTES => {
                AllgatherAlgorithm::Multicast
            }
            AllgatherAlgorithm::Auto if pow2 && block * self.size <= AG_DOUBLING_MAX_BYTES => {
                AllgatherAlgorithm::RecursiveDoubling
            }
            _ => AllgatherAlgorithm::Ring,
        }
    }

    /// The alltoall algorithm every rank picks for blocks of `block` bytes:
    /// `MCAST_ALLTOALL` if set; `auto` takes Bruck's for blocks up to
    /// [`A2A_BRUCK_MAX_BYTES`] among more than 2 ranks (MPICH's short-block
    /// choice), else pairwise exchange.
    pub fn alltoall_algorithm(&self, block: usize) -> AlltoallAlgorithm {
        match self.cfg.alltoall {
            AlltoallAlgorithm::Auto if self.size > 2 && block <= A2A_BRUCK_MAX_BYTES => {
                AlltoallAlgorithm::Bruck
            }
            AlltoallAlgorithm::Auto => AlltoallAlgorithm::Pairwise,
            chosen => chosen,
        }
    }

    /// Alltoall: block d of rank s's `send` ends up in block s of rank d's
    /// `recv` (both `size` blocks of equal length). The algorithm is
    /// `MCAST_ALLTOALL` ([`Comm::alltoall_algorithm`]): pairwise exchange
    /// (in step k, send to rank + k and receive from rank − k) or Bruck's.
    pub fn alltoall<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<(), Error> {
        check_len("alltoall", "recv", recv.len(), send.len())?;
        if !send.len().is_multiple_of(self.size) {
            return Err(Error::InvalidArgument(format!(
                "alltoall: {} elements are not {} equal blocks",
                send.len(),
                self.size
            )));
        }
        let n = send.len() / self.size;
        let algo = self.alltoall_algorithm(n * T::SIZE);
        let mut r = self.data_round::<T>(OpKind::Alltoall, 0, n, algo_code(&algo.to_string()))?;
        tracing::debug!(seq = r.seq, n, algorithm = %algo, "alltoall");
        if algo == AlltoallAlgorithm::Bruck {
            return self.bruck(&mut r, send, recv, n);
        }
        let (me, size) = (self.rank, self.size);
        recv[me * n..(me + 1) * n].copy_from_slice(&send[me * n..(me + 1) * n]);
        for k in 1..size {
            let (to, from) = ((me + k) % size, (me + size - k) % size);
            r.send_elems(to, &send[to * n..(to + 1) * n])?;
            let b = r.recv(from)?;
            from_bytes(&b, &mut recv[from * n..(from + 1) * n], "alltoall")?;
        }
        Ok(())
    }

    /// Bruck's alltoall (J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal, D. Weathersby,
    /// "Efficient Algorithms for All-to-All Communications in Multiport
    /// Message-Passing Systems", IEEE TPDS 8(11), 1997, §3), blocks of `n`
    /// elements. Rotate so that slot i holds the block for rank me + i; in
    /// step k send the slots with bit k set to rank me + 2^k and take the
    /// same slots from rank me − 2^k; then slot i holds rank (me − i)'s
    /// block for this rank.
    fn bruck<T: Element>(
        &self,
        r: &mut Round<'_>,
        send: &[T],
        recv: &mut [T],
        n: usize,
    ) -> Result<(), Error> {
        let (me, size) = (self.rank, self.size);
        let mut slots: Vec<T> = Vec::with_capacity(size * n);
        for i in 0..size {
            let b = (me + i) % size;
            slots.extend_from_slice(&send[b * n..(b + 1) * n]);
        }
        let mut bit = 1usize;
        while bit < size {
            let (to, from) = ((me + bit) % size, (me + size - bit) % size);
            let moving: Vec<usize> = (0..size).filter(|i| i & bit != 0).collect();
            let mut out = Vec::with_capacity(moving.len() * n);
            for &i in &moving {
                out.extend_from_slice(&slots[i * n..(i + 1) * n]);
            }
            r.send_elems(to, &out)?;
            let b = r.recv(from)?;
            from_bytes(&b, &mut out, "alltoall")?;
            for (j, &i) in moving.iter().enumerate() {
                slots[i * n..(i + 1) * n].copy_from_slice(&out[j * n..(j + 1) * n]);
            }
            bit <<= 1;
        }
        for i in 0..size {
            let src = (me + size - i) % size;
            recv[src * n..(src + 1) * n].copy_from_slice(&slots[i * n..(i + 1) * n]);
        }
        Ok(())
    }
}

/// Largest allgather (bytes gathered at each rank) `auto` runs by
/// recursive doubling: on this 2-core machine's shared memory the ring won
/// above it at 4 and 8 ranks (mcbench A/B, 2026-11-24; MPICH uses 512 KiB).
pub const AG_DOUBLING_MAX_BYTES: usize = 64 << 10;
/// Smallest allgather block (bytes) `auto` moves by concurrent multicasts:
/// from 4 KiB at 4 ranks and 2 KiB at 8 they beat the ring (0.80, 0.86),
/// and from 16 KiB by 2–5× (each block crosses shared memory once, as
/// descriptors the NIs forward); below, n trees cost more than one ring
/// (mcbench A/B, bench/results/compare-mpi-coll-menu/allgather_multicast_ab.md).
pub const AG_MULTICAST_MIN_BYTES: usize = 4 << 10;
/// Largest alltoall block (bytes) `auto` sends by Bruck's algorithm.
pub const A2A_BRUCK_MAX_BYTES: usize = 256;

/// The fingerprint code of a data-movement algorithm by its setting's name
/// (see [`ALGO_NAMES`]).
pub(super) fn algo_code(name: &str) -> u8 {
    let i = ALGO_NAMES.iter().position(|&a| a == name).unwrap_or(0);
    ALGO_BASE + i as u8
}
