//! Point-to-point: the user's `send`/`recv`, and [`Round`], the messages a
//! collective sends inside itself (the barrier's, reduce's, gather's ...).
//!
//! Both go straight to their destination through the NI (no forwarding),
//! in as many packets as they need, under flow control. They never mix: a
//! collective's messages are keyed by its number, the user's by source and
//! their own numbering, so no user tag can collide with collective traffic.

use bytes::Bytes;

use super::elem::Element;
use super::Comm;
use crate::control::Fingerprint;
use crate::fasthash::HashMap;
use crate::inbox::{message_cost, Post, Stall, TAG_BYTES};
use crate::net::Cmd;
use crate::wire::{comm_base, Kind};
use crate::Error;

/// One received user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The rank that sent it.
    pub source: usize,
    /// The tag it was sent with.
    pub tag: u32,
    /// The payload (derefs to `[u8]`).
    pub data: Bytes,
}

/// The point-to-point messages of one collective call: each carries the
/// call's fingerprint (so its receiver checks the sender's call against
/// its own), and is numbered per (sender, receiver) pair in the call.
pub(super) struct Round<'a> {
    comm: &'a Comm,
    pub(super) seq: u64,
    fp: Fingerprint,
    sent: HashMap<usize, u32>,
    got: HashMap<usize, u32>,
    stall: Option<Stall<'a>>,
}

impl<'a> Round<'a> {
    /// Enter collective `seq` with call `fp` (see `Comm::begin`).
    pub(super) fn begin(comm: &'a Comm, seq: u64, fp: Fingerprint) -> Result<Round<'a>, Error> {
        comm.begin(seq, fp)?;
        Ok(Round {
            comm,
            seq,
            fp,
            sent: HashMap::default(),
            got: HashMap::default(),
            stall: comm.stall_probe(seq, fp),
        })
    }

    /// Send `data` to rank `to` of the communicator, once it has room for
    /// it (flow control).
    pub(super) fn send(&mut self, to: usize, data: &[u8]) -> Result<(), Error> {
        let mut buf = Vec::with_capacity(crate::control::FP_BYTES + data.len());
        buf.extend_from_slice(&self.fp.to_bytes());
        buf.extend_from_slice(data);
        self.send_whole(to, buf)
    }

    /// Send elements `v` to rank `to` (as [`Round::send`] does their wire
    /// bytes, written once, straight after the fingerprint).
    pub(super) fn send_elems<T: Element>(&mut self, to: usize, v: &[T]) -> Result<(), Error> {
        let mut buf = Vec::with_capacity(crate::control::FP_BYTES + v.len() * T::SIZE);
        buf.extend_from_slice(&self.fp.to_bytes());
        T::put(v, &mut buf);
        self.send_whole(to, buf)
    }

    /// Send `buf` (the fingerprint, then the data) to rank `to`.
    fn send_whole(&mut self, to: usize, buf: Vec<u8>) -> Result<(), Error> {
        let c = self.comm;
        let to = c.world(to);
        let net = c.net()?;
        let index = self.sent.get(&to).copied().unwrap_or(0);
        let seq = self.seq;
        let cost = message_cost(buf.len(), c.packet_count(buf.len()));
        let op = || self.fp.op_name(seq);
        c.inbox
            .reserve(Post::Coll { seq, dest: &to }, cost, c.cfg.timeout, &op)?;
        net.send(Cmd::P2p {
            kind: Kind::P2p,
            to,
            seq,
            index,
            data: Bytes::from(buf),
        })?;
        self.sent.insert(to, index + 1);
        Ok(())
    }

    /// Receive the next message of this call from rank `from` of the
    /// communicator.
    pub(super) fn recv(&mut self, from: usize) -> Result<Bytes, Error> {
        let c = self.comm;
        let (local, from) = (from, c.world(from));
        let index = self.got.get(&from).copied().unwrap_or(0);
        let (seq, fp) = (self.seq, self.fp);
        let what = || (fp.op_name(seq), format!("waiting for {}", who(c, local)));
        let data = c
            .inbox
            .take_coll(seq, from, index, c.cfg.timeout, &what, &mut self.stall)?;
        self.got.insert(from, index + 1);
        c.net()?.return_credits();
        Ok(data)
    }

    /// Wait until `done` holds (barrier flags in shared memory), failing
    /// as [`Round::recv`] does: a lost member, a mismatch, the timeout
    /// (naming `waiting_for`, a rank of the communicator).
    pub(super) fn wait_flags(
        &mut self,
        waiting_for: &dyn Fn() -> usize,
        done: &dyn Fn() -> bool,
    ) -> Result<(), Error> {
        let c = self.comm;
        let (seq, fp) = (self.seq, self.fp);
        let what = || {
            let who = who(c, waiting_for());
            (fp.op_name(seq), format!("waiting for {who}"))
        };
        c.inbox
            .wait_until(seq, c.cfg.timeout, &what, &mut self.stall, done)
    }
}

/// Rank `local` of communicator `c`, named for an error.
fn who(c: &Comm, local: usize) -> String {
    match c.id() {
        0 => format!("rank {local}"),
        _ => format!("rank {local} (world rank {})", c.world(local)),
    }
}

impl Comm {
    /// Send `data` to rank `dest` with tag `tag`. Not collective; returns
    /// once the data is handed to the NI (the buffer may be reused).
    ///
    /// Sends are eager, under flow control (README "Point-to-point"): a send
    /// waits while `dest` has not taken the earlier messages of this rank
    /// that fill the per-pair window (`MCAST_FLOW_BYTES` shared among the
    /// peers), and fails with [`Error::Timeout`] naming `dest` if it takes
    /// none within `MCAST_TIMEOUT_SECS`. A message larger than the window
    /// goes once under a quarter window is outstanding. A send to this rank
    /// itself is queued for its own `recv` at once (as MPI's eager sends to
    /// self are; it is outside flow control, since it never leaves the
    /// process). Out of range is an [`Error::InvalidArgument`]; to a lost
    /// rank, [`Error::PeerLost`].
    pub fn send(&self, dest: usize, tag: u32, data: &[u8]) -> Result<(), Error> {
        if dest >= self.size {
            return Err(Error::InvalidArgument(format!(
                "send to {dest}: not a rank of a {}-rank communicator",
                self.size
            )));
        }
        if dest == self.rank {
            let me = self.world(dest);
            self.inbox
                .own_msg(self.id(), me, tag, Bytes::copy_from_slice(data));
            return Ok(());
        }
        let (dest, local) = (self.world(dest), dest);
        let net = self.net()?;
        let mut buf = Vec::with_capacity(TAG_BYTES + data.len());
        buf.extend_from_slice(&tag.to_le_bytes());
        buf.extend_from_slice(data);
        let cost = message_cost(buf.len(), self.packet_count(buf.len()));
        let n = self.sends.borrow().get(&dest).copied().unwrap_or(0);
        let op = || format!("send #{n} to rank {local}");
        self.inbox
            .reserve(Post::Send { dest: &dest }, cost, self.cfg.timeout, &op)?;
        self.sends.borrow_mut().insert(dest, n + 1);
        net.send(Cmd::P2p {
            kind: Kind::Msg,
            to: dest,
            seq: comm_base(self.id()) | n,
            index: self.world(self.rank) as u32,
            data: Bytes::from(buf),
        })
    }

    /// Receive the next message from `source` (any rank with `None`) with
    /// tag `tag` (any tag with `None`). Messages of one source with one tag
    /// are received in the order they were sent; among sources, the one
    /// that arrived first. Fails with [`Error::PeerLost`] if `source` is
    /// lost with nothing left from it (any source: each lost rank is
    /// reported once), and with [`Error::Timeout`] after
    /// `MCAST_TIMEOUT_SECS` without progress.
    pub fn recv(&self, source: Option<usize>, tag: Option<u32>) -> Result<Message, Error> {
        if let Some(s) = source.filter(|&s| s >= self.size) {
            return Err(Error::InvalidArgument(format!(
                "recv from {s}: not a rank of a {}-rank communicator",
                self.size
            )));
        }
        let source = source.map(|s| self.world(s));
        let (source, tag, data) = self
            .inbox
            .take_msg(self.id(), source, tag, self.cfg.timeout)?;
        if let Some(net) = &self.net {
            net.return_credits();
        }
        let source = self.local(source).ok_or_else(|| {
            Error::Protocol(format!(
                "a message of communicator {} from world rank {source}, not a member",
                self.id()
            ))
        })?;
        Ok(Message { source, tag, data })
    }
}
