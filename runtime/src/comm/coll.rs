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
use crate::control::{Fingerprint, OpKind};
use crate::Error;

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
    /// and may be empty). Linear: every rank sends its block to the root.
    pub fn gather<T: Element>(&self, root: usize, send: &[T], recv: &mut [T]) -> Result<(), Error> {
        self.check_root("gather", root)?;
        let n = send.len();
        if self.rank == root {
            check_len("gather", "the root's recv", recv.len(), self.size * n)?;
        }
        let mut r = self.data_round::<T>(OpKind::Gather, root, n, 0)?;
        tracing::debug!(seq = r.seq, root, n, algorithm = "linear", "gather");
        if self.rank != root {
            return r.send(root, &to_bytes(send));
        }
        recv[root * n..(root + 1) * n].copy_from_slice(send);
        for src in (0..self.size).filter(|&s| s != root) {
            let b = r.recv(src)?;
            from_bytes(&b, &mut recv[src * n..(src + 1) * n], "gather")?;
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
        let mut r = self.data_round::<T>(OpKind::Scatter, root, n, 0)?;
        tracing::debug!(seq = r.seq, root, n, algorithm = "linear", "scatter");
        self.scatter_in(&mut r, root, send, recv)
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
            r.send(dest, &to_bytes(&send[dest * n..(dest + 1) * n]))?;
        }
        recv.copy_from_slice(&send[root * n..(root + 1) * n]);
        Ok(())
    }

    /// Allgather: every rank's `recv` (`size × send.len()` elements) gets
    /// rank r's `send` in block r. Ring: size − 1 steps, each passing one
    /// block to the right neighbour.
    pub fn allgather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<(), Error> {
        let n = send.len();
        check_len("allgather", "recv", recv.len(), self.size * n)?;
        let mut r = self.data_round::<T>(OpKind::Allgather, 0, n, 0)?;
        tracing::debug!(seq = r.seq, n, algorithm = "ring", "allgather");
        let (me, size) = (self.rank, self.size);
        recv[me * n..(me + 1) * n].copy_from_slice(send);
        let (right, left) = ((me + 1) % size, (me + size - 1) % size);
        for step in 0..size - 1 {
            let out = (me + size - step) % size;
            let into = (me + size - step - 1) % size;
            r.send(right, &to_bytes(&recv[out * n..(out + 1) * n]))?;
            let b = r.recv(left)?;
            from_bytes(&b, &mut recv[into * n..(into + 1) * n], "allgather")?;
        }
        Ok(())
    }

    /// Alltoall: block d of rank s's `send` ends up in block s of rank d's
    /// `recv` (both `size` blocks of equal length). Pairwise exchange: in
    /// step k, send to rank + k and receive from rank − k.
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
        let mut r = self.data_round::<T>(OpKind::Alltoall, 0, n, 0)?;
        tracing::debug!(seq = r.seq, n, algorithm = "pairwise", "alltoall");
        let (me, size) = (self.rank, self.size);
        recv[me * n..(me + 1) * n].copy_from_slice(&send[me * n..(me + 1) * n]);
        for k in 1..size {
            let (to, from) = ((me + k) % size, (me + size - k) % size);
            r.send(to, &to_bytes(&send[to * n..(to + 1) * n]))?;
            let b = r.recv(from)?;
            from_bytes(&b, &mut recv[from * n..(from + 1) * n], "alltoall")?;
        }
        Ok(())
    }
}
