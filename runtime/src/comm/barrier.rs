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

    /// The two-level barrier across hosts. The ranks of each host gather
    /// first, then one rank per host meets the others over the network,
    /// then each host is released.
    ///
    /// * Within a host, where the communicator has a flag slot (leader
    ///   and ranks of one host agree: rings are per host), through shared
    ///   memory; else as messages to the host's leader.
    /// * Among the hosts: with at most `FLAT_LEADERS` hosts, the linear
    ///   barrier through rank 0, which releases the other hosts first,
    ///   then its own; with more, the dissemination barrier over the
    ///   leaders; with two, the dissemination barrier too, which between
    ///   two is the exchange (each leader sends the other one message
    ///   and waits for the other's, as Open MPI's two-process barrier
    ///   does): one network hop where the linear barrier takes two (an
    ///   arrival, then a release), for the same one message each way.
    /// * Across the network: one message from each other host to rank
    ///   0's and one back, where the dissemination barrier over every
    ///   rank sends ⌈log2 n⌉ per rank, most of them between hosts (15
    ///   against 4 over 3 hosts of 2).
    ///
    /// In the linear barrier, a host other than rank 0's whose ranks
    /// gather on flags is spoken for by whichever of its ranks arrives
    /// last ([`Comm::gather_last`]), not by its leader, and rank 0 answers
    /// whoever spoke: the last rank in is running, where the leader,
    /// told by a flag, had to get a CPU again before it could send (on
    /// the namespace cluster, where 6 ranks share 2 vCPUs, the hosts'
    /// second ranks were last in about 3 barriers of 4).
    fn host_barrier(&self, r: &mut Round<'_>, role: &host_tree::BarrierRole) -> Result<(), Error> {
        const FLAT_LEADERS: usize = 8;
        let flags = self.flag_slot();
        let hub = role.leaders[0];
        let linear = (3..=FLAT_LEADERS).contains(&role.leaders.len());
        if let (true, Some(slot)) = (linear && role.leader != hub, flags) {
            return self.gather_last(r, slot, role, hub);
        }
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
        if !linear {
            let me = role
                .leaders
                .iter()
                .position(|&l| l == self.rank)
                .unwrap_or(0);
            dissemination(r, &role.leaders, me)?;
        } else if self.rank == hub {
            // Each other host's arrival, from whichever of its ranks
            // speaks for it; the release goes back to that rank.
            let mut speakers = Vec::with_capacity(role.members.len());
            for host in role.members.iter().skip(1) {
                let (from, got) = r.recv_any(host)?;
                check_barrier(r, from, &got, &ARRIVE)?;
                speakers.push(from);
            }
            releases(r, speakers)?;
        } else {
            await_release(r, hub)?;
        }
        match flags {
            Some(slot) => self.flag_releases(r, slot, locals()),
            None => releases(r, locals()),
        }
    }

    /// A rank of a host other than `hub`'s in the linear two-level
    /// barrier, its host gathering on flag slot `slot`: it adds one to
    /// the host's gather count (in its leader's segment). The rank that
    /// completes the count (every rank of the host has arrived) tells
    /// `hub`, waits for its release and releases the others through
    /// their flags; the others wait for a release flag from any rank of
    /// their host. Every barrier of the communicator adds exactly the
    /// host's size to the count, and no rank adds for the next one
    /// before the last has added for this one (it is released only
    /// after), so the count's multiples of the host's size mark the
    /// last arrivals.
    fn gather_last(
        &self,
        r: &mut Round<'_>,
        slot: usize,
        role: &host_tree::BarrierRole,
        hub: usize,
    ) -> Result<(), Error> {
        let net = self.net()?;
        let host = role.host();
        let size = host.len().max(1) as u64;
        let leader = self.world(role.leader);
        let before = net.gather(leader, slot, 1).ok_or_else(|| {
            Error::Protocol(format!(
                "barrier #{}: no shared-memory segment of rank {}, this rank's host leader",
                r.seq, role.leader
            ))
        })?;
        let mates = || host.iter().copied().filter(|&m| m != self.rank);
        if (before + 1) % size == 0 {
            await_release(r, hub)?;
            return self.flag_releases(r, slot, mates());
        }
        let key = flag_key(r);
        // Whom a timeout names: a rank of this host while the count is
        // short of it, else rank 0.
        let waiting_for = || {
            let now = net.gather(leader, slot, 0).unwrap_or(0);
            match now % size {
                0 => hub,
                _ => mates().next().unwrap_or(hub),
            }
        };
        r.wait_flags(&waiting_for, &|| {
            mates().any(|m| net.flag(self.world(m), slot, Flag::Release) >= key)
        })
    }
}
