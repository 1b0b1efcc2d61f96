//! The barrier: on one host's rings, the linear barrier on barrier flags
//! in shared memory (between two ranks, the exchange); across hosts, the two-level barrier (flags within a
//! host where there are rings, messages between hosts' leaders);
//! elsewhere the dissemination barrier, in messages.

use mcast_algorithms::ceil_log2;

use super::p2p::Round;
use super::{host_tree, Comm};
use crate::algorithm::Medium;
use crate::control::Fingerprint;
use crate::ring::{Flag, FLAG_SLOTS};
use crate::Error;

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

/// The barrier's number as its flags hold it (0 means "never stored").
/// A flag's numbers only grow (a slot is one communicator's, ids are never
/// reused, and its collective numbers grow), so every wait is for "at
/// least this barrier's": in the exchange the other rank may already have
/// stored the next one.
fn flag_key(r: &Round<'_>) -> u64 {
    r.seq.wrapping_add(1)
}

impl Comm {
    /// Block until every rank has entered the barrier: the dissemination
    /// barrier, ⌈log2 n⌉ rounds of point-to-point messages through the NI;
    /// on one host's shared-memory rings with at most 16 ranks, the linear
    /// barrier instead, two hops whatever n (every rank tells rank 0, which
    /// then releases them all: a ring write costs a fraction of a hop, see
    /// [`Comm::algorithm_for`]), on barrier flags in shared memory rather
    /// than messages where the communicator has a flag slot (see
    /// [`Comm::flag_slot`]; between two ranks there, the one-hop exchange
    /// of flags); across hosts, the two-level barrier (every
    /// rank tells its host's leader, the leaders hold a barrier over the
    /// network, each releases its host: see [`Comm::host_barrier`]). Every
    /// rank picks the same.
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
            return self.host_barrier(&mut r, role);
        }
        let all: Vec<usize> = (0..self.size).collect();
        dissemination(&mut r, &all, self.rank)
    }

    /// The barrier flag slot of this communicator (its id), when it has
    /// one: with shared-memory rings to the ranks of this host, for ids
    /// below `FLAG_SLOTS` (a hidden twin's id is beyond). The ranks of one
    /// host agree (the id and the rings are facts of the job), and flags
    /// are only used among them.
    fn flag_slot(&self) -> Option<usize> {
        let id = self.id() as usize;
        (id < FLAG_SLOTS && self.net.as_ref()?.has_flags()).then_some(id)
    }

    /// The linear barrier on barrier flags in shared memory (`ring`'s
    /// module doc): each rank stores the barrier's number in its arrive
    /// flag in rank 0's segment; rank 0, once every flag holds it, stores
    /// it in its release flag in each rank's segment. No packet, no
    /// inbox entry: a store and a bell per rank each way. Between two
    /// ranks, the exchange instead ([`Comm::flag_exchange`]).
    fn flag_barrier(&self, r: &mut Round<'_>, slot: usize) -> Result<(), Error> {
        if self.size == 2 {
            return self.flag_exchange(r, slot);
        }
        if self.rank == 0 {
            self.flag_arrivals(r, slot, 1..self.size)?;
            return self.flag_releases(r, slot, 1..self.size);
        }
        self.flag_await(r, slot, 0)
    }

    /// The barrier between two ranks of one host, the exchange: each
    /// stores this barrier's number in its arrive flag in the other's
    /// segment and waits for the other's in its own. One hop, where the
    /// linear barrier takes two (an arrival, then a release). The other
    /// may have left already and stored the next barrier's number over
    /// this one's, hence "at least": a slot is one communicator's (ids
    /// are never reused) and its numbers only grow.
    fn flag_exchange(&self, r: &mut Round<'_>, slot: usize) -> Result<(), Error> {
        let peer = 1 - self.rank;
        let net = self.net()?;
        net.signal(self.world(peer), slot, Flag::Arrive, flag_key(r));
        self.flag_arrivals(r, slot, std::iter::once(peer))
    }

    /// Wait until every rank of `from` (ranks of this host) has stored this
    /// barrier's number in its arrive flag.
    fn flag_arrivals(
        &self,
        r: &mut Round<'_>,
        slot: usize,
        from: impl Iterator<Item = usize> + Clone,
    ) -> Result<(), Error> {
        let net = self.net()?;
        let key = flag_key(r);
        let missing = || {
            from.clone()
                .find(|&m| net.flag(self.world(m), slot, Flag::Arrive) < key)
        };
        r.wait_flags(&|| missing().unwrap_or(0), &|| missing().is_none())
    }

    /// Release each rank of `to` (ranks of this host) through its flag.
    fn flag_releases(
        &self,
        r: &Round<'_>,
        slot: usize,
        to: impl Iterator<Item = usize>,
    ) -> Result<(), Error> {
        let net = self.net()?;
        for m in to {
            net.signal(self.world(m), slot, Flag::Release, flag_key(r));
        }
        Ok(())
    }

    /// Tell `hub` (a rank of this host) through its flag that this rank
    /// arrived, and wait for its release.
    fn flag_await(&self, r: &mut Round<'_>, slot: usize, hub: usize) -> Result<(), Error> {
        let net = self.net()?;
        let (key, hub_world) = (flag_key(r), self.world(hub));
        net.signal(hub_world, slot, Flag::Arrive, key);
        r.wait_flags(&|| hub, &|| net.flag(hub_world, slot, Flag::Release) >= key)
    }

    /// This rank's part in the two-level barrier, when the communicator
    /// spans at least two hosts of a known host table: found once (the
    /// members and their hosts are fixed for the communicator's life).
    fn barrier_role(&self) -> Option<&host_tree::BarrierRole> {
        self.found
            .barrier_role
            .get_or_init(|| self.find_barrier_role())
            .as_ref()
    }

    fn find_barrier_role(&self) -> Option<host_tree::BarrierRole> {
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
    /// own host; with more, the dissemination barrier over the leaders;
    /// with two, the dissemination barrier too, which between two is the
    /// exchange (each leader sends the other one message and waits for
    /// the other's, as Open MPI's two-process barrier does): one network
    /// hop where the linear barrier takes two (an arrival, then a
    /// release), for the same one message each way. Then it releases its
    /// host. Within a host the arrivals and releases
    /// go through barrier flags where the communicator has a flag slot
    /// (leader and ranks of one host agree: rings are per host), else as
    /// messages. Across the network: one message from each other host to
    /// rank 0's and one back, where the dissemination barrier over every
    /// rank sends ⌈log2 n⌉ per rank, most of them between hosts (15
    /// against 4 over 3 hosts of 2).
    fn host_barrier(&self, r: &mut Round<'_>, role: &host_tree::BarrierRole) -> Result<(), Error> {
        const FLAT_LEADERS: usize = 8;
        let flags = self.flag_slot();
        if role.leader != self.rank {
            return match flags {
                Some(slot) => self.flag_await(r, slot, role.leader),
                None => await_release(r, role.leader),
            };
        }
        let locals = || role.locals.iter().copied();
        match flags {
            Some(slot) => self.flag_arrivals(r, slot, locals())?,
            None => arrivals(r, locals())?,
        }
        let others = || {
            role.leaders
                .iter()
                .copied()
                .filter(|&l| l != role.leaders[0])
        };
        if role.leaders.len() == 2 || role.leaders.len() > FLAT_LEADERS {
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
        match flags {
            Some(slot) => self.flag_releases(r, slot, locals()),
            None => releases(r, locals()),
        }
    }
}
