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
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{de::DeserializeOwned, Serialize};

use crate::algorithm::{bcast_waits_for, Medium, Resolved};
use crate::control::{Control, Fingerprint};
use crate::engine::packet_count;
pub use crate::fabric::ModelLatency;
use crate::inbox::{message_cost, pair_window, Inbox, Post, Stall, Stamp};
pub use crate::net::Link;
use crate::net::{Cmd, Net};
use crate::wire::{Goodbye, Kind, Member};
use crate::{Algorithm, Config, Error};
pub use elem::{Element, Op};
use mcast_algorithms::hosts as host_tree;
pub use p2p::Message;

mod coll;
mod elem;
mod links;
mod p2p;
mod reduce;

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

/// A communicator over all ranks of the job.
pub struct Comm {
    cfg: Config,
    rank: usize,
    size: usize,
    job: u32,
    net: Option<Net>,
    inbox: Arc<Inbox>,
    /// Collective sequence number (every rank counts the same collectives).
    seq: Cell<u64>,
    /// This rank's multicast number, as a source.
    mcast_seq: Cell<u64>,
    /// Per destination: how many multicasts this rank has sent it.
    ordinals: RefCell<HashMap<usize, u32>>,
    /// Per destination: how many messages (`send`) this rank has sent it.
    sends: RefCell<HashMap<usize, u64>>,
    /// Model latency of the last bcast this rank completed (fabric mode).
    last_model: Cell<Option<ModelLatency>>,
}

/// Largest value `bcast_value` accepts.
const MAX_VALUE_BYTES: u64 = 1 << 32;

/// Join the job described by the environment (mclaunch sets it); a program
/// started without mclaunch is a single rank (rank 0 of 1).
///
/// Also installs a `tracing` subscriber filtered by `RUST_LOG` (default
/// `warn`), unless the program installed one already.
pub fn init() -> Result<Comm, Error> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
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
            inbox.set_flow(size, pair_window(cfg.flow_bytes, size, n.packet_bytes));
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
        Ok(Comm {
            cfg,
            rank,
            size,
            job,
            net,
            inbox,
            seq: Cell::new(0),
            mcast_seq: Cell::new(0),
            ordinals: RefCell::new(HashMap::new()),
            sends: RefCell::new(HashMap::new()),
            last_model: Cell::new(None),
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

    fn next_seq(&self) -> u64 {
        let s = self.seq.get();
        self.seq.set(s + 1);
        s
    }

    fn net(&self) -> Result<&Net, Error> {
        self.net
            .as_ref()
            .ok_or_else(|| Error::Stopped("no network for a single rank".into()))
    }

    /// The `ip:port` this rank accepts peer connections on (`None` for a lone
    /// rank). After start-up every connection to it is screened and refused.
    pub fn data_addr(&self) -> Option<&str> {
        self.net.as_ref().map(|n| n.data_addr.as_str())
    }

    /// What carries packets to `peer`: a Unix-domain socket for a rank on
    /// this host (unless `MCAST_TRANSPORT=tcp`), TCP otherwise. `None` for
    /// this rank itself, a rank out of range, or a lone rank.
    pub fn link_to(&self, peer: usize) -> Option<Link> {
        self.net.as_ref()?.links.get(peer).copied().flatten()
    }

    /// Payload bytes per packet in this job: `MCAST_SHM_PACKET_BYTES` when
    /// its medium is shared memory, `MCAST_PACKET_BYTES` otherwise.
    pub fn packet_bytes(&self) -> usize {
        self.net
            .as_ref()
            .map_or(self.cfg.packet_bytes, |n| n.packet_bytes)
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

    /// The medium of a call among `ranks` (the source included): in a job
    /// that spans hosts, how many hosts the call spans.
    fn medium_among(&self, ranks: impl IntoIterator<Item = usize>) -> Medium {
        match (self.medium(), self.hosts()) {
            (Medium::Hosts { .. }, Some(hosts)) => Medium::Hosts {
                hosts: host_tree::host_count(ranks, host_tree::in_table(hosts)),
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
    /// found (see the README's "Failure semantics").
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

    /// The probe a stalled wait in collective `seq` sends to every peer.
    fn stall_probe(&self, seq: u64, fp: Fingerprint) -> Option<Stall<'_>> {
        let net = self.net.as_ref()?;
        Some(Stall {
            since: Instant::now(),
            after: self.cfg.probe_after,
            run: Box::new(move || {
                tracing::debug!(seq, "collective stalled; probing peers");
                let _ = net.send(Cmd::Control(Control::Probe { seq, fp }));
            }),
        })
    }

    /// Broadcast `buf` from `root` to every rank, with the configured algorithm
    /// (`MCAST_ALGORITHM`, default `auto`). Every rank passes a buffer of the
    /// same length; the root's bytes end up in all of them.
    pub fn bcast(&self, root: usize, buf: &mut [u8]) -> Result<(), Error> {
        self.bcast_with(root, buf, self.cfg.algorithm)
    }

    /// Broadcast with an explicit algorithm. Only the root's choice matters:
    /// the headers carry the tree, so the other ranks just follow them.
    pub fn bcast_with(&self, root: usize, buf: &mut [u8], algo: Algorithm) -> Result<(), Error> {
        if root >= self.size {
            return Err(Error::InvalidArgument(format!(
                "bcast root {root} is not a rank of a {}-rank communicator",
                self.size
            )));
        }
        let seq = self.next_seq();
        let _span = tracing::debug_span!("bcast", seq, %algo, root, bytes = buf.len()).entered();
        if self.size == 1 {
            return Ok(());
        }
        let net = self.net()?;
        let m = packet_count(buf.len(), self.packet_bytes());
        let algo = self.algorithm_for(algo, self.size, buf.len());
        let resolved = algo.resolve_for(self.size, m, self.cfg.topology.as_ref(), self.medium())?;
        if let Resolved::Worm(w) = resolved {
            net.check_worm(w)?;
        }
        let fp = Fingerprint::bcast_code(root, buf.len(), resolved.tree_code());
        self.begin(seq, fp)?;
        self.last_model.set(None);
        if self.rank == root {
            // Room at every rank first (flow control): the root never runs
            // more than a window ahead of the slowest rank.
            let cost = message_cost(buf.len(), m);
            let op = || format!("bcast #{seq}");
            self.inbox
                .reserve(Post::Bcast { seq }, cost, self.cfg.timeout, &op)?;
            let data = net.payload(buf);
            return match resolved {
                Resolved::Worm(worm) => net.send(Cmd::Worm {
                    kind: Kind::Bcast,
                    seq,
                    members: Vec::new(),
                    data,
                    worm,
                }),
                Resolved::Tree(tree) => net.send(Cmd::Bcast { seq, data, tree }),
            };
        }
        let mut stall = self.stall_probe(seq, fp);
        let (me, size) = (self.rank, self.size);
        let topo = self.cfg.topology.as_ref();
        let hosts = self.hosts();
        let waiting_for = || bcast_waits_for(root, me, size, resolved, topo, hosts);
        let mut got = 0u64;
        let mut total: Option<u32> = None;
        while total.is_none_or(|t| got < t as u64) {
            for p in self
                .inbox
                .take_bcast(seq, self.cfg.timeout, &waiting_for, &mut stall)?
            {
                // The inbox checked root, length and tree against this call,
                // and header decoding guarantees offset + payload <= msg_len.
                let h = p.header;
                let off = h.offset as usize;
                let dst = buf.get_mut(off..off + p.payload.len()).ok_or_else(|| {
                    Error::Protocol(format!("bcast #{seq}: packet outside the buffer"))
                })?;
                dst.copy_from_slice(&p.payload);
                got += 1;
                total = Some(h.pkt_count);
            }
        }
        if let Some(s) = self.inbox.take_bcast_model(seq) {
            self.last_model.set(net.model_latency(s));
        }
        net.return_credits();
        Ok(())
    }

    /// Under an emulated fabric: the model latency of the last `bcast` at
    /// this rank (from the root's post to this rank's completion); `None`
    /// at the root, outside a fabric, or before any bcast.
    pub fn last_model_latency(&self) -> Option<ModelLatency> {
        self.last_model.get()
    }

    /// The fabric this job runs on (`mclaunch --fabric`), if any: its spec,
    /// without cost knobs.
    pub fn fabric(&self) -> Option<&str> {
        self.net.as_ref()?.fabric().map(|w| w.spec.as_str())
    }

    /// Broadcast any serde value from `root`: on return, every rank's `value`
    /// equals the root's. (Two bcasts: the encoded length, then the bytes.)
    pub fn bcast_value<T: Serialize + DeserializeOwned>(
        &self,
        root: usize,
        value: &mut T,
    ) -> Result<(), Error> {
        let mut bytes = if self.rank == root {
            postcard::to_stdvec(value)
                .map_err(|e| Error::InvalidArgument(format!("cannot encode value: {e}")))?
        } else {
            Vec::new()
        };
        let mut len = (bytes.len() as u64).to_le_bytes();
        self.bcast(root, &mut len)?;
        let len = u64::from_le_bytes(len);
        if len > MAX_VALUE_BYTES {
            return Err(Error::Protocol(format!("bcast_value of {len} bytes")));
        }
        bytes.resize(len as usize, 0);
        self.bcast(root, &mut bytes)?;
        if self.rank != root {
            *value = postcard::from_bytes(&bytes).map_err(|e| Error::Mismatch {
                op: "bcast_value".into(),
                detail: format!("the root's value does not decode as this rank's type: {e}"),
            })?;
        }
        Ok(())
    }

    /// Multicast `data` from this rank to `dests`, with the configured algorithm.
    ///
    /// * `dests` is any set of ranks other than the source, in any order.
    /// * An empty set sends nothing and returns `Ok`.
    /// * A rank out of range, a rank listed twice, or the source among its own
    ///   destinations (so also the source alone) is an
    ///   [`Error::InvalidArgument`], and nothing is sent.
    ///
    /// Returns once the data is handed to the NI (the buffer may be reused).
    pub fn multicast(&self, dests: &[usize], data: &[u8]) -> Result<(), Error> {
        self.multicast_with(dests, data, self.cfg.algorithm)
    }

    /// Multicast with an explicit algorithm. The tree is built over a chain of
    /// the source followed by the destinations in rank order rotated to start
    /// after the source.
    pub fn multicast_with(
        &self,
        dests: &[usize],
        data: &[u8],
        algo: Algorithm,
    ) -> Result<(), Error> {
        if let Some(bad) = dests.iter().find(|&&d| d >= self.size) {
            return Err(Error::InvalidArgument(format!(
                "multicast destination {bad} is not a rank of a {}-rank communicator",
                self.size
            )));
        }
        if dests.contains(&self.rank) {
            return Err(Error::InvalidArgument(format!(
                "multicast source {} is among its own destinations",
                self.rank
            )));
        }
        let mut chain: Vec<usize> = dests.to_vec();
        chain.sort_by_key(|&d| (d + self.size - self.rank) % self.size);
        if let Some(w) = chain.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::InvalidArgument(format!(
                "multicast destination {} is listed more than once",
                w[0]
            )));
        }
        let algo = self.algorithm_for(algo, chain.len() + 1, data.len());
        let resolved = algo.resolve_for(
            chain.len() + 1,
            packet_count(data.len(), self.packet_bytes()),
            self.cfg.topology.as_ref(),
            self.medium_among(chain.iter().copied().chain([self.rank])),
        )?;
        if let Resolved::Worm(w) = resolved {
            self.net()?.check_worm(w)?;
        }
        let seq = self.mcast_seq.get();
        let _span =
            tracing::debug_span!("multicast", seq, %algo, dests = chain.len(), bytes = data.len())
                .entered();
        if chain.is_empty() {
            return Ok(());
        }
        self.inbox.check_dests(&chain)?;
        let net = self.net()?;
        // Room at every destination first (flow control): a destination
        // that does not receive stalls its sources, and nothing is sent if
        // this fails.
        let cost = message_cost(data.len(), packet_count(data.len(), self.packet_bytes()));
        let op = || format!("multicast #{seq}");
        self.inbox.reserve(
            Post::Multicast { dests: &chain },
            cost,
            self.cfg.timeout,
            &op,
        )?;
        self.mcast_seq.set(seq + 1);
        let mut ordinals = self.ordinals.borrow_mut();
        let members = chain
            .iter()
            .map(|&d| {
                let o = ordinals.entry(d).or_insert(0);
                let m = Member {
                    rank: d as u32,
                    ordinal: *o,
                };
                *o = o.wrapping_add(1);
                m
            })
            .collect();
        match resolved {
            Resolved::Worm(worm) => net.send(Cmd::Worm {
                kind: Kind::Multicast,
                seq,
                members,
                data: net.payload(data),
                worm,
            }),
            Resolved::Tree(tree) => net.send(Cmd::Multicast {
                seq,
                dests: members,
                data: net.payload(data),
                tree,
            }),
        }
    }

    /// Receive the next multicast aimed at this rank, from any source. The
    /// multicasts of one source arrive in the order it sent them. Fails with
    /// [`Error::Timeout`] if none arrives within `MCAST_TIMEOUT_SECS`.
    pub fn recv_multicast(&self) -> Result<Received, Error> {
        self.recv_multicast_timeout(self.cfg.timeout)
    }

    /// [`Comm::recv_multicast`] with an explicit bound on the wait.
    pub fn recv_multicast_timeout(&self, timeout: Duration) -> Result<Received, Error> {
        let (source, data, model) = self.inbox.take_multicast(None, timeout)?;
        Ok(self.received(source, data, model))
    }

    /// Receive the next multicast from `source` (in the order it sent them),
    /// leaving other sources' multicasts for later calls. Fails with
    /// [`Error::PeerLost`] if `source` is lost and nothing from it is left,
    /// and with [`Error::Timeout`] after `MCAST_TIMEOUT_SECS` without progress.
    pub fn recv_multicast_from(&self, source: usize) -> Result<Received, Error> {
        if source >= self.size || source == self.rank {
            return Err(Error::InvalidArgument(format!(
                "recv_multicast_from({source}): not another rank of a {}-rank communicator",
                self.size
            )));
        }
        let (source, data, model) = self.inbox.take_multicast(Some(source), self.cfg.timeout)?;
        Ok(self.received(source, data, model))
    }

    fn received(&self, source: usize, data: Bytes, model: Option<Stamp>) -> Received {
        if let Some(net) = &self.net {
            net.return_credits();
        }
        let model_latency = model.and_then(|s| self.net.as_ref()?.model_latency(s));
        Received {
            source,
            data,
            model_latency,
        }
    }

    /// Collective: a final barrier, then an orderly close of every connection.
    /// Dropping a `Comm` without it is a failure for the others: they fail
    /// every collective it did not complete with [`Error::PeerLost`] naming
    /// it (README "Failure semantics"), as they do if the barrier fails.
    pub fn finalize(mut self) -> Result<(), Error> {
        let seq = self.seq.get();
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
    /// this rank did not complete (the one it may be unwinding out of).
    fn drop(&mut self) {
        if self.net.is_some() {
            let panicking = u64::from(std::thread::panicking());
            let next_seq = self.seq.get().saturating_sub(panicking);
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
        let Some(mut net) = self.net.take() else {
            return;
        };
        if !matches!(bye, Goodbye::Finalized) {
            if let Some(notice) = self.inbox.mismatch_notice() {
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
            .finish()
    }
}

/// Leaving at collective `next_seq`: with the multicasts sent to each rank
/// and the first rank found lost (the cause, if it left after a loss).
fn departure(next_seq: u64, c: &Comm) -> Goodbye {
    let sent: Vec<_> = c.ordinals.borrow().iter().map(|(&r, &n)| (r, n)).collect();
    Goodbye::departed(next_seq, sent, c.lost_ranks().first().copied())
}
