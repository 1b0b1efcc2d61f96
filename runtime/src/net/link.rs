//! The transport seam: what the driver (`net/mod.rs`) needs from whatever
//! carries packets between ranks.
//!
//! [`Links`] is a trait, not an enum. Each transport is one type in its own
//! file (`mesh.rs`: TCP and Unix-domain sockets, one connection per peer;
//! `fablink.rs`: one link to an emulated switch fabric), and the driver holds
//! an `Arc<dyn Links>`. Adding a transport (shared-memory rings, a TCP mesh
//! across hosts, QUIC) is one more `impl Links` and one more arm where
//! `Net::start` picks the transport; no other transport's code, and no
//! match shared by all of them, changes. The price is an indirect call per
//! packet sent, small next to the write it leads to.
//!
//! A transport has four duties (send, say whether everything has left,
//! close with a goodbye, report a broken link as this transport means it)
//! and a few optional powers with neutral defaults: model time (the fabric
//! times every packet), worms (the fabric's switches replicate) and a
//! shared-memory arena (the mesh between ranks of one host).
//!
//! Starting a transport is in two steps, because the engine can only be
//! built once the job id and the packet size are known: `join` (each
//! transport's own function: bind, rendezvous, learn the packet size) gives
//! a [`Joined`]; its `connect` then starts the readers, which hand packets
//! to the driver ([`Host`]) through `super::intake`.
//!
//! This module imports nothing from the rest of `net`, so the driver, the
//! intake and every transport can all depend on it without a loop.

use std::sync::Arc;

use mcast_algorithms::Topology;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use crate::algorithm::Medium;
use crate::error::Error;
use crate::fabric::FabricWelcome;
use crate::inbox::{Inbox, Stamp};
use crate::shm::Shm;
use crate::wire::{Goodbye, Header, Packet, Route};
use crate::worms::{Worm, WormSend};

/// What carries the packets to one peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// TCP (with TCP_NODELAY).
    Tcp,
    /// A Unix-domain stream socket (peers on the same host).
    Unix,
    /// Through the emulated switch fabric (`mclaunch --fabric`).
    Fabric,
    /// A shared-memory ring (the whole job on one host); the Unix-domain
    /// socket beside it carries heartbeats and the goodbye.
    Ring,
    /// One bidirectional QUIC stream, mutual TLS with the job's own CA (a
    /// peer on another host under `MCAST_TRANSPORT=quic`).
    Quic,
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Link::Tcp => "tcp",
            Link::Unix => "unix",
            Link::Fabric => "fabric",
            Link::Ring => "ring",
            Link::Quic => "quic",
        })
    }
}

/// When the packets of one engine call are ready, in model time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ambient {
    /// The host posted a message at `post`; `posted` says when each of its
    /// packets is in NI memory.
    Post {
        posted: crate::hostni::Posted,
        post: u64,
    },
    /// The NI received a packet (ready at `ready`) of a message posted at
    /// `post`; what the engine does now is in answer to it.
    Forward { ready: u64, post: u64 },
    /// Nothing timed (control messages, untimed transports).
    Idle,
}

/// The links of this rank to every peer, whatever carries them.
pub(crate) trait Links: Send + Sync {
    /// Send `p` to rank `to` (dropped if there is no live link to it: a dead
    /// link has already reported why). `amb` says when, in model time, it is
    /// ready (transports without model time ignore it).
    fn send(&self, to: usize, p: Packet, amb: Ambient);

    /// Whether [`Links::send_inline`] reaches rank `to` (a shared-memory
    /// ring to it).
    fn inline_to(&self, _to: usize) -> bool {
        false
    }

    /// Send to rank `to`, where [`Links::inline_to`] holds, the packet
    /// with `header`, `route` and `payload`, straight from the caller's
    /// bytes (no `Packet`, no copy of the payload first).
    fn send_inline(&self, _to: usize, _header: Header, _route: &Route, _payload: &[u8]) {}

    /// Whether everything sent so far has left (or its link is gone).
    fn flushed(&self) -> bool;

    /// Close: flush, say `bye` (finalized, or departed without finalize)
    /// and shut down. The writer tasks returned by `join`/`connect` end
    /// when that is done.
    fn close(&self, bye: &Goodbye);

    /// Loss reporting: link `link` (the peer's rank where each peer has its
    /// own; ignored where one link serves every peer) broke or went silent
    /// because of `why`. Report it as this transport means it.
    fn broken(&self, link: usize, why: String);

    /// The host posts `packets` packets now: when they are ready.
    fn post(&self, _packets: usize) -> Ambient {
        Ambient::Idle
    }

    /// The model time of a delivery made in answer to `amb`.
    fn stamp(&self, _amb: Ambient) -> Option<Stamp> {
        None
    }

    /// Plan a message's worms (`Err`: this transport carries no such worm).
    fn worm_plan(
        &self,
        worm: Worm,
        _me: usize,
        _dests: &[usize],
    ) -> Result<Arc<Vec<WormSend>>, Error> {
        Err(worm.refusal())
    }

    /// Send this rank's worms of `plan`, each carrying `packets`.
    fn send_worms(&self, _me: usize, _plan: &[WormSend], _packets: &[Packet]) {}

    /// Whether worms of this scheme can be sent.
    fn carries(&self, _worm: Worm) -> bool {
        false
    }

    /// The fabric's welcome, if this transport is an emulated fabric.
    fn welcome(&self) -> Option<&FabricWelcome> {
        None
    }

    /// Picoseconds per model cycle, if this transport keeps model time.
    fn cycle_ps(&self) -> Option<u64> {
        None
    }

    /// The host's shared-memory arenas, if this transport uses them.
    fn shm(&self) -> Option<&Arc<Shm>> {
        None
    }

    /// The shared-memory rings to the ranks of this host, if this
    /// transport has them.
    fn rings(&self) -> Option<&Arc<super::rings::Rings>> {
        None
    }

    /// Take back the memory `lo..hi` (a caller's buffer lent for one call,
    /// `net::lend`): whatever still waits to be written from it is copied
    /// first. Only a transport whose queues are the sole holders of what it
    /// was given may be lent to (see `Net::staged`); the others have
    /// nothing to take back.
    fn reclaim(&self, _lo: usize, _hi: usize) {}

    /// The NI has stopped (its runtime and threads are done): let go of
    /// what would keep the links alive in a cycle through the driver.
    fn release(&self) {}
}

/// The other side of the seam: what a transport's readers need from the
/// driver (through `super::intake`), which implements it.
pub(crate) trait Host: Send + Sync {
    /// The host memory of this rank.
    fn inbox(&self) -> &Inbox;
    /// A control message from rank `from`; `Err` says why it is malformed.
    fn control_in(&self, from: usize, payload: &[u8]) -> Result<(), String>;
    /// A data packet from rank `from` for the engine, ready at `amb`; `Err`
    /// is the engine's complaint.
    fn engine_in(&self, from: usize, p: Packet, amb: Ambient) -> Result<(), String>;
    /// Hand a packet straight to the host (a worm addressed here).
    fn deliver(&self, p: Packet, stamp: Option<Stamp>);
}

/// What `connect` gives: the link to each peer and the writer tasks.
pub(crate) type Connected = (Vec<Option<Link>>, Vec<JoinHandle<()>>);

/// Starts a joined transport's readers (and, for a mesh, its connections),
/// which hand every packet to `host`.
pub(crate) type Connect<'a> =
    Box<dyn FnOnce(&Runtime, Arc<dyn Host>) -> Result<Connected, Error> + 'a>;

/// A transport that has joined the job (the rendezvous is done) and knows
/// what the engine must be built with.
pub(crate) struct Joined<'a> {
    /// The job id, shared by every rank.
    pub(crate) job: u32,
    pub(crate) medium: Medium,
    /// The host of every rank (an index), when known (a socket mesh).
    pub(crate) hosts: Option<Arc<[u32]>>,
    /// How messages are cut into packets.
    pub(crate) packets: crate::engine::PacketSize,
    /// The address this rank is reached at (for `Comm::data_addr`).
    pub(crate) data_addr: String,
    /// The topology topology-aware trees map ranks onto.
    pub(crate) topology: Option<Topology>,
    pub(crate) links: Arc<dyn Links>,
    /// Writer tasks already running.
    pub(crate) tasks: Vec<JoinHandle<()>>,
    /// Packets to poll besides the runtime's sockets (the rings).
    pub(crate) poller: Option<Arc<dyn crate::drive::Poller>>,
    pub(crate) connect: Connect<'a>,
}

pub(crate) use crate::outq::SHUTDOWN_FLUSH;

pub(crate) fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{what}: {e}")))
}
