//! Point-to-point: the user's `send`/`recv`, and [`Round`], the messages a
//! collective sends inside itself (the barrier's, reduce's, gather's ...).
//!
//! Both go straight to their destination through the NI (no forwarding),
//! in as many packets as they need, under flow control. They never mix: a
//! collective's messages are keyed by its number, the user's by source and
//! their own numbering, so no user tag can collide with collective traffic.

use std::collections::HashMap;

use bytes::Bytes;
use mcast_algorithms::ceil_log2;

use super::elem::Element;
use super::{host_tree, Comm};
use crate::algorithm::Medium;
use crate::control::Fingerprint;
use crate::engine::packet_count;
use crate::inbox::{message_cost, Post, Stall, TAG_BYTES};
use crate::net::Cmd;
use crate::ring::{Flag, FLAG_SLOTS};
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
            sent: HashMap::new(),
            got: HashMap::new(),
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
        let cost = message_cost(buf.len(), packet_count(buf.len(), c.packet_bytes()));
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
    fn wait_flags(
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

/// The barrier's messages: arrived (to the rank that releases), released.
const ARRIVE: [u8; 4] = 0u32.to_le_bytes();
const RELEASE: [u8; 4] = 1u32.to_le_bytes();

/// Check barrier message `got` from `from` against `want`.
fn check_barrier(r: &Round<'_>, from: usize, got: &[u8], want: &[u8]) -> Result<(), Error> {
    if got == want {
        return Ok(());
    }
    Err(Error::Protocol(format!(
        "barrier #{}: rank {from} sent {got:?}, expected {want:?}",
        r.seq
    )))
}

/// Take the arrival of each of `from`.
fn arrivals(r: &mut Round<'_>, from: impl IntoIterator<Item = usize>) -> Result<(), Error> {
    for f in from {
        let got = r.recv(f)?;
        check_barrier(r, f, &got, &ARRIVE)?;
    }
    Ok(())
}

/// Release each of `to`.
fn releases(r: &mut Round<'_>, to: impl IntoIterator<Item = usize>) -> Result<(), Error> {
    for t in to {
        r.send(t, &RELEASE)?;
    }
    Ok(())
}

/// Tell `hub` this rank arrived, and wait for its release.
fn await_release(r: &mut Round<'_>, hub: usize) -> Result<(), Error> {
    r.send(hub, &ARRIVE)?;
    let got = r.recv(hub)?;
    check_barrier(r, hub, &got, &RELEASE)
}

/// The dissemination barrier among `members` (this rank is `members[me]`):
/// in round i, a message to the member 2^i places on, from the one 2^i
/// places back.
fn dissemination(r: &mut Round<'_>, members: &[usize], me: usize) -> Result<(), Error> {
    let n = members.len();
    for round in 0..ceil_log2(n) {
        let dist = (1usize << round) % n;
        let to = members[(me + dist) % n];
        let from = members[(me + n - dist) % n];
        let mark = (round as u32).to_le_bytes();
        r.send(to, &mark)?;
        let got = r.recv(from)?;
        check_barrier(r, from, &got, &mark)?;
    }
    Ok(())
}

impl Comm {
    /// Block until every rank has entered the barrier: the dissemination
    /// barrier, ⌈log2 n⌉ rounds of point-to-point messages through the NI;
    /// on one host's shared-memory rings with at most 16 ranks, the linear
    /// barrier instead, two hops whatever n (every rank tells rank 0, which
    /// then releases them all: a ring write costs a fraction of a hop, see
    /// [`Comm::algorithm_for`]), on barrier flags in shared memory rather
    /// than messages where the communicator has a flag slot (see
    /// [`Comm::flag_barrier`]); across hosts, the two-level barrier (every
    /// rank tells its host's leader, the leaders hold a barrier over the
    /// network, each releases its host: see [`host_barrier`]). Every rank
    /// picks the same.
    ///
    /// [`host_barrier`]: Comm::host_barrier
    pub fn barrier(&self) -> Result<(), Error> {
        let seq = self.next_seq();
        let _span = tracing::debug_span!("barrier", seq).entered();
        let mut r = Round::begin(self, seq, Fingerprint::barrier())?;
        if self.few_on_rings(self.size) {
            if let Some(slot) = self.flag_slot() {
                return self.flag_barrier(&mut r, slot);
            }
            if self.rank == 0 {
                arrivals(&mut r, 1..self.size)?;
                return releases(&mut r, 1..self.size);
            }
            return await_release(&mut r, 0);
        }
        if let Some(role) = self.barrier_role() {
            return self.host_barrier(&mut r, &role);
        }
        let all: Vec<usize> = (0..self.size).collect();
        dissemination(&mut r, &all, self.rank)
    }

    /// The barrier flag slot of this communicator (its id), when it has
    /// one: on rings, for ids below `FLAG_SLOTS` (a hidden twin's id is
    /// beyond). Every rank of the communicator agrees (the id and the
    /// rings are facts of the job).
    fn flag_slot(&self) -> Option<usize> {
        let id = self.id() as usize;
        (id < FLAG_SLOTS && self.net.as_ref()?.has_flags()).then_some(id)
    }

    /// The linear barrier on barrier flags in shared memory (`ring`'s
    /// module doc): each rank stores the barrier's number in its arrive
    /// flag in rank 0's segment; rank 0, once every flag holds it, stores
    /// it in its release flag in each rank's segment. No packet, no
    /// inbox entry: a store and a bell per rank each way.
    fn flag_barrier(&self, r: &mut Round<'_>, slot: usize) -> Result<(), Error> {
        let net = self.net()?;
        // 0 means "never stored".
        let key = r.seq.wrapping_add(1);
        let hub = self.world(0);
        if self.rank == 0 {
            let missing =
                || (1..self.size).find(|&m| net.flag(self.world(m), slot, Flag::Arrive) != key);
            r.wait_flags(&|| missing().unwrap_or(0), &|| missing().is_none())?;
            for m in 1..self.size {
                net.signal(self.world(m), slot, Flag::Release, key);
            }
            return Ok(());
        }
        net.signal(hub, slot, Flag::Arrive, key);
        r.wait_flags(&|| 0, &|| net.flag(hub, slot, Flag::Release) == key)
    }

    /// This rank's part in the two-level barrier, when the communicator
    /// spans at least two hosts of a known host table.
    fn barrier_role(&self) -> Option<host_tree::BarrierRole> {
        let table = self.hosts()?;
        if !matches!(self.medium(), Medium::Hosts { .. }) {
            return None;
        }
        let host_of = |r: usize| host_tree::in_table(table)(self.world(r));
        if host_tree::host_count(0..self.size, host_of) < 2 {
            return None;
        }
        Some(host_tree::barrier_role(self.size, self.rank, host_of))
    }

    /// The two-level barrier across hosts. A rank tells its host's leader
    /// that it arrived and waits for its release. A leader collects its
    /// host's arrivals, then holds the barrier among the leaders: with at
    /// most `FLAT_LEADERS` hosts the linear one through rank 0 (which
    /// leads its host), which releases the other leaders first, then its
    /// own host; with more, the dissemination barrier over the leaders.
    /// Then it releases its host. Across the network: one message from each
    /// other host to rank 0's and one back, where the dissemination barrier
    /// over every rank sends ⌈log2 n⌉ per rank, most of them between hosts
    /// (15 against 4 over 3 hosts of 2).
    fn host_barrier(&self, r: &mut Round<'_>, role: &host_tree::BarrierRole) -> Result<(), Error> {
        const FLAT_LEADERS: usize = 8;
        if role.leader != self.rank {
            return await_release(r, role.leader);
        }
        arrivals(r, role.locals.iter().copied())?;
        let others = || {
            role.leaders
                .iter()
                .copied()
                .filter(|&l| l != role.leaders[0])
        };
        if role.leaders.len() > FLAT_LEADERS {
            let me = role
                .leaders
                .iter()
                .position(|&l| l == self.rank)
                .unwrap_or(0);
            dissemination(r, &role.leaders, me)?;
        } else if self.rank == role.leaders[0] {
            arrivals(r, others())?;
            releases(r, others())?;
        } else {
            await_release(r, role.leaders[0])?;
        }
        releases(r, role.locals.iter().copied())
    }

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
        let cost = message_cost(buf.len(), packet_count(buf.len(), self.packet_bytes()));
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
