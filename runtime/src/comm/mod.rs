//! The communicator: the user-facing API.
//!
//! A `Comm` spans every rank of the job. Collectives (`barrier`, `bcast*`) must
//! be called by every rank in the same order, as in MPI; a `Comm` is `Send` but
//! not `Sync`, so calls on one communicator come from one thread at a time.
//!
//! The data collectives (`reduce` ... `scan`, in `coll.rs` and `reduce.rs`)
//! and point-to-point `send`/`recv` (`p2p.rs`) are in submodules; README
//! "Collectives and point-to-point" lists their algorithms.
//!
//! Multicast is not collective: the source calls [`Comm::multicast`] with an
//! arbitrary destination set, and each destination calls
//! [`Comm::recv_multicast`] once per multicast aimed at it, knowing nothing of
//! the set (the packet headers tell each NI what to forward).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::algorithm::Medium;
use crate::control::{Control, Fingerprint};
pub use crate::fabric::ModelLatency;
use crate::fasthash::HashMap;
use crate::inbox::{pair_window, Inbox, Probe, Stall};
pub use crate::net::Link;
use crate::net::{Cmd, Net};
use crate::sync::lock;
use crate::wire::{comm_base, Goodbye};
use crate::{Config, Error};
pub use elem::{Element, Op};
use group::Group;
use mcast_algorithms::hosts as host_tree;
pub use p2p::Message;
pub use request::Request;

mod barrier;
mod bcast;
mod coll;
mod elem;
mod group;
mod links;
mod mcast;
mod p2p;
mod reduce;
mod request;

/// One multicast as seen by a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The rank that called `multicast`.
    pub source: usize,
    /// The payload (derefs to `[u8]`).
    pub data: Bytes,
    /// Under an emulated fabric (`mclaunch --fabric`): the message's model
    /// latency, from its post at the source to its completion here, in the
    /// fabric's cost model. `None` outside a fabric.
    pub model_latency: Option<ModelLatency>,
}

/// A communicator: the world (every rank of the job, from [`init`]) or a
/// sub-communicator ([`Comm::split`], [`Comm::dup`]), which shares the
/// world's links and NI and counts its own calls.
pub struct Comm {
    cfg: Config,
    /// This rank, and the number of ranks, in this communicator.
    rank: usize,
    size: usize,
    job: u32,
    net: Option<Arc<Net>>,
    inbox: Arc<Inbox>,
    /// `None` for the world; a sub-communicator's id and members.
    group: Option<Arc<Group>>,
    /// The lowest communicator id this process has not used (shared by
    /// every communicator of the process; see `group`).
    next_id: Arc<AtomicU32>,
    /// Every communicator of the process, by id: its `seq` (shared like
    /// `next_id`; a communicator registers at creation and stays after it
    /// is freed). A departure names each one's next collective, so a peer
    /// fails only what this rank did not complete, in whichever one.
    counters: Arc<Mutex<BTreeMap<u32, Arc<AtomicU64>>>>,
    /// Collective sequence number (every rank counts the same collectives),
    /// below the communicator's id (`wire::COMM_SHIFT`).
    seq: Arc<AtomicU64>,
    /// This rank's multicast number, as a source.
    mcast_seq: Cell<u64>,
    /// Per destination: how many multicasts this rank has sent it.
    ordinals: RefCell<HashMap<usize, u32>>,
    /// Per destination: how many messages (`send`) this rank has sent it.
    sends: RefCell<HashMap<usize, u64>>,
    /// Model latency of the last bcast this rank completed (fabric mode).
    last_model: Cell<Option<ModelLatency>>,
    /// The thread its non-blocking calls run on, once one started.
    progress: RefCell<Option<request::Progress>>,
    /// What this rank's calls on it ask every time, found at the first.
    found: Found,
}

/// Facts of a communicator found at their first use: its members and their
/// hosts are fixed for its life, and a loop of calls asks the same every
/// time.
#[derive(Default)]
struct Found {
    /// This rank's part in the two-level barrier (`None` inside: not
    /// across hosts).
    barrier_role: std::cell::OnceCell<Option<mcast_algorithms::hosts::BarrierRole>>,
    /// The medium of a call among every rank.
    medium_all: std::cell::OnceCell<Medium>,
}

/// Largest value `bcast_value` accepts.
const MAX_VALUE_BYTES: u64 = 1 << 32;

/// Join the job described by the environment (mclaunch sets it); a program
/// started without mclaunch is a single rank (rank 0 of 1).
///
/// Also installs a `tracing` subscriber filtered by `RUST_LOG` (default
/// `warn`), unless the program installed one already.
pub fn init() -> Result<Comm, Error> {
    // Colour only on a terminal: a rank's stderr is usually mclaunch's pipe.
    crate::logging::init();
    Comm::with_config(Config::from_env()?)
}

impl Comm {
    /// Join a job with an explicit configuration (see [`Config::from_env`]).
    pub fn with_config(cfg: Config) -> Result<Comm, Error> {
        let me = cfg.job.as_ref().map_or(0, |j| j.rank);
        let inbox = Arc::new(Inbox::new(me, cfg.max_message_bytes));
        let (rank, size, job, net) = match &cfg.job {
            None => (0, 1, 0, None),
            Some(j) => {
                let (net, job) = Net::start(&cfg, j, inbox.clone())?;
                (j.rank, j.size, job, Some(net))
            }
        };
        if let Some(n) = &net {
            inbox.set_flow(size, pair_window(cfg.flow_bytes, size, n.packets.largest()));
            if cfg.spread {
                if let Some((index, _)) = n.host_place().filter(|&(_, all)| all > 1) {
                    let cpu = crate::placement::spread(index);
                    tracing::debug!(index, ?cpu, "started on a CPU of its own");
                }
            }
        }
        let mut cfg = cfg;
        // On a direct fabric, rank i is node i of its topology: the
        // topology-aware algorithms plan on it.
        if cfg.topology.is_none() {
            cfg.topology = net
                .as_ref()
                .and_then(|n| n.fabric())
                .and_then(|w| w.spec.parse().ok());
        }
        tracing::debug!(rank, size, job, "mcast initialised");
        let seq = Arc::new(AtomicU64::new(0));
        Ok(Comm {
            cfg,
            rank,
            size,
            job,
            net: net.map(Arc::new),
            inbox,
            group: None,
            next_id: Arc::new(AtomicU32::new(1)),
            counters: Arc::new(Mutex::new(BTreeMap::from([(0, seq.clone())]))),
            seq,
            mcast_seq: Cell::new(0),
            ordinals: RefCell::new(HashMap::default()),
            sends: RefCell::new(HashMap::default()),
            last_model: Cell::new(None),
            progress: RefCell::new(None),
            found: Found::default(),
        })
    }

    /// This process's rank, in `0..size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The 32-bit id of this job (derived from its token; 0 for a lone rank).
    pub fn job_id(&self) -> u32 {
        self.job
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The number of this communicator's next collective (its id in the
    /// high bits).
    fn next_seq(&self) -> u64 {
        comm_base(self.id()) | self.seq.fetch_add(1, Ordering::Relaxed)
    }

    fn net(&self) -> Result<&Net, Error> {
        self.net
            .as_deref()
            .ok_or_else(|| Error::Stopped("no network for a single rank".into()))
    }

    /// The `ip:port` this rank accepts peer connections on (`None` for a lone
    /// rank). After start-up every connection to it is screened and refused.
    pub fn data_addr(&self) -> Option<&str> {
        self.net.as_ref().map(|n| n.data_addr.as_str())
    }

    /// What carries packets to `peer`: a shared-memory ring or a Unix-domain
    /// socket for a rank on this host (unless `MCAST_TRANSPORT=tcp`), TCP
    /// for a rank on another host, or QUIC there under
    /// `MCAST_TRANSPORT=quic`. `None` for this rank itself, a rank out of
    /// range, or a lone rank.
    pub fn link_to(&self, peer: usize) -> Option<Link> {
        if peer >= self.size {
            return None;
        }
        self.net
            .as_ref()?
            .links
            .get(self.world(peer))
            .copied()
            .flatten()
    }

    /// The flow-control window toward each peer, per class: the bytes of
    /// data this rank may have in flight to one peer, not yet taken there
    /// (`MCAST_FLOW_BYTES` shared among the peers; a message that does not
    /// fit goes once less than a quarter is out). 0: flow control is off.
    pub fn flow_window(&self) -> u64 {
        self.inbox.flow_window()
    }

    /// What a message of `len` bytes counts against [`Comm::flow_window`]:
    /// its bytes plus a fixed overhead per packet.
    pub fn flow_cost(&self, len: usize) -> u64 {
        crate::inbox::message_cost(len, self.packet_count(len))
    }

    /// Number of packets a message of `len` bytes is cut into in this job
    /// (every rank counts the same: see [`crate::engine::PacketSize`]).
    pub fn packet_count(&self, len: usize) -> usize {
        self.packets().count(len)
    }

    /// How this job cuts its messages into packets: [`Comm::packet_bytes`]
    /// each, except that across hosts with several ranks on some
    /// (`Medium::Hosts`) a message of at least twice
    /// `Config::hosts_large_packet_bytes` goes in packets of that.
    pub fn packets(&self) -> crate::engine::PacketSize {
        self.net.as_ref().map_or_else(
            || crate::engine::PacketSize::uniform(self.cfg.packet_bytes),
            |n| n.packets,
        )
    }

    /// Payload bytes per packet in this job: `MCAST_SHM_PACKET_BYTES` when
    /// its medium is shared memory, `MCAST_PACKET_BYTES` otherwise (a
    /// large message across hosts may take larger ones: [`Comm::packets`]).
    pub fn packet_bytes(&self) -> usize {
        self.packets().base()
    }

    /// What carries this job's packets (the same on every rank): shared
    /// memory when every rank is on one host with an arena.
    pub fn medium(&self) -> Medium {
        self.net.as_ref().map_or(Medium::Network, |n| n.medium)
    }

    /// The host of every rank (an index; ranks of one host share it), when
    /// the job runs over sockets.
    fn hosts(&self) -> Option<&[u32]> {
        self.net.as_ref().and_then(|n| n.hosts.as_deref())
    }

    /// The medium of a call among every rank of this communicator (found
    /// once: [`Comm::medium_among`]).
    fn medium_all(&self) -> Medium {
        *self
            .found
            .medium_all
            .get_or_init(|| self.medium_among(0..self.size))
    }

    /// The medium of a call among `ranks` of this communicator (the source
    /// included): in a job that spans hosts, how many hosts the call spans.
    fn medium_among(&self, ranks: impl IntoIterator<Item = usize>) -> Medium {
        match (self.medium(), self.hosts()) {
            (Medium::Hosts { .. }, Some(hosts)) => Medium::Hosts {
                hosts: host_tree::host_count(
                    ranks.into_iter().map(|r| self.world(r)),
                    host_tree::in_table(hosts),
                ),
            },
            (medium, _) => medium,
        }
    }

    /// How many packets this rank has sent to ranks of its host as
    /// shared-memory descriptors (their payload stayed in an arena; see
    /// `MCAST_SHM_BYTES`) rather than through a socket.
    pub fn shm_packets_sent(&self) -> u64 {
        self.net.as_ref().map_or(0, |n| n.shm_sent())
    }

    /// The ranks found dead or unreachable so far, in the order they were
    /// found (see the README's "Failure semantics"), as world ranks (as
    /// [`Error::PeerLost`] names them on every communicator).
    pub fn lost_ranks(&self) -> Vec<usize> {
        self.inbox.lost_ranks()
    }

    /// Enter collective `seq`: checks that collectives can run and that what
    /// already arrived for it agrees with this call; a mismatch found here is
    /// announced to every peer.
    fn begin(&self, seq: u64, fp: Fingerprint) -> Result<(), Error> {
        self.inbox.begin(seq, fp).map_err(|(e, notice)| {
            if let (Some(n), Some(net)) = (notice, &self.net) {
                let _ = net.send(Cmd::Control(n));
            }
            e
        })
    }

    /// What a stalled wait in collective `seq` does: probe every other
    /// member of the communicator (see [`Probe`]).
    fn stall_probe(&self, seq: u64, fp: Fingerprint) -> Option<Stall<'_>> {
        self.net.as_ref()?;
        Some(Stall {
            since: None,
            after: self.cfg.probe_after,
            probe: self,
            seq,
            fp,
        })
    }

    /// Collective: a final barrier, then an orderly close of every connection.
    /// On a sub-communicator: its barrier, then it is freed (as
    /// `MPI_Comm_free`); the connections stay for the world's `finalize`.
    /// Dropping a `Comm` without it is a failure for the others: they fail
    /// every collective it did not complete with [`Error::PeerLost`] naming
    /// it (README "Failure semantics"), as they do if the barrier fails.
    pub fn finalize(mut self) -> Result<(), Error> {
        let seq = self.seq.load(Ordering::Relaxed);
        let res = self.barrier();
        let bye = match res {
            Ok(()) => Goodbye::Finalized,
            Err(_) => departure(seq, &self),
        };
        self.leave(bye);
        res
    }
}

impl Drop for Comm {
    /// Leaving without `finalize`: the goodbye names the first collective
    /// this rank did not complete in each communicator (while unwinding,
    /// each communicator dropped counts its last one as not completed: the
    /// panic may have come out of it). A sub-communicator's drop says
    /// nothing: the world's goodbye covers the process.
    fn drop(&mut self) {
        let panicking = u64::from(std::thread::panicking());
        let next_seq = self.seq.load(Ordering::Relaxed).saturating_sub(panicking);
        if self.group.is_some() {
            self.seq.store(next_seq, Ordering::Relaxed);
        } else if self.net.is_some() {
            self.leave(departure(next_seq, self));
        }
    }
}

impl Comm {
    /// Close every connection with `bye`. A rank whose collectives a
    /// mismatch poisoned first repeats the mismatch notice on every
    /// connection, ahead of its goodbye: a peer still in that collective
    /// then fails with the mismatch, not with this rank's departure (which
    /// may reach it first on another connection).
    fn leave(&mut self, bye: Goodbye) {
        if self.group.is_some() {
            return;
        }
        let Some(net) = self.net.take() else {
            return;
        };
        if !matches!(bye, Goodbye::Finalized) {
            for notice in self.inbox.mismatch_notices() {
                let _ = net.send(Cmd::Control(notice));
            }
        }
        net.shutdown_with(bye);
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("job", &self.job)
            .field("id", &self.id())
            .finish()
    }
}

/// The world `c` leaving at its collective `next_seq` (and at the next one
/// of each other communicator): with the multicasts sent to each rank and
/// the first rank found lost (the cause, if it left after a loss).
fn departure(next_seq: u64, c: &Comm) -> Goodbye {
    let sent: Vec<_> = c.ordinals.borrow().iter().map(|(&r, &n)| (r, n)).collect();
    let next: Vec<u64> = lock(&c.counters)
        .iter()
        .map(|(&id, n)| {
            (
                id,
                if id == 0 {
                    next_seq
                } else {
                    n.load(Ordering::Relaxed)
                },
            )
        })
        .filter(|&(_, n)| n > 0)
        .map(|(id, n)| comm_base(id) | n)
        .collect();
    Goodbye::departed(next, sent, c.lost_ranks().first().copied())
}

impl Probe for Comm {
    /// A stalled collective asks the others what they called: a mismatch
    /// shows as an error instead of a hang.
    fn probe(&self, seq: u64, fp: Fingerprint) {
        let Some(net) = &self.net else { return };
        tracing::debug!(seq, "collective stalled; probing peers");
        let probe = Control::Probe { seq, fp };
        let _ = net.send(match self.others() {
            None => Cmd::Control(probe),
            Some(o) => Cmd::ControlTo(o, probe),
        });
    }
}
