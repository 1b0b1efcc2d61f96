//! The bytes of a message this rank originates, staged for the links: in
//! its shared-memory arena (copied a packet at a time as they leave:
//! `shm::Filling`), in a kept buffer, or lent straight from the caller's
//! buffer for the length of the call.
//!
//! The source of a bcast or a multicast whose every peer is behind TCP
//! (no rank of the job on its host: one rank per host) has nobody to
//! share an arena with, and each packet's bytes only go from its buffer
//! into the kernel's socket buffers. Copying them into an arena first was
//! the root's own work on top of the send: at 4 MiB over 2 namespace
//! hosts × 1 rank, `memmove` was a third of the root's samples (`perf
//! record -a`; this copy and the benchmark's fill of its buffer), and
//! without the copy the bcast took 0.74–0.86 of the time from 128 KiB
//! (README "Clusters"). So a large payload is lent instead: the packets'
//! `Bytes` point into the caller's buffer, and when the call returns
//! (`Lent` is dropped at the end of [`Net::send_filling`]) whatever the
//! sockets have not taken yet is copied out of it
//! ([`super::link::Links::reclaim`]), so nothing refers to the caller's
//! memory once the caller has it back.
//!
//! That is sound because, on such a mesh, a posted packet's payload is held
//! only by the engine while it cuts the packets (it keeps none: every
//! packet becomes a send action at once), by the send actions, and by the
//! writers' queues (`outq`): nothing delivers a bcast or a multicast to
//! its own source (a multicast naming its source is refused), and neither
//! rings, nor QUIC (which hands chunks to quinn), nor the fabric (whose
//! worms are the only other way out) is lent to. `Lent::drop` checks it:
//! were a reference left, it stops the process rather than let the caller
//! reuse memory that a packet reads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::link::{Link, Links};
use super::Net;
use crate::bufpool::POOL;
use crate::shm::{Filling, SHM_MIN_PAYLOAD};

/// How a posted payload's bytes get where they are sent from.
pub(crate) enum Staging<'a> {
    /// Into this rank's arena, a packet's range at a time.
    Arena(Filling<'a>),
    /// Lent from the caller's buffer until the call returns (held for its
    /// `Drop`, which takes the buffer back).
    Lent(#[allow(dead_code)] Lent<'a>),
}

impl<'a> Staging<'a> {
    /// The arena copy still to make, if that is how the bytes are staged.
    pub(crate) fn filling(&mut self) -> Option<&mut Filling<'a>> {
        match self {
            Staging::Arena(f) => Some(f),
            Staging::Lent(_) => None,
        }
    }
}

/// The owner of the lent bytes inside every `Bytes` cut from them: it
/// says when the last one is gone.
struct Loan {
    at: *const u8,
    len: usize,
    back: Arc<AtomicBool>,
}

// SAFETY: a `Loan` only reads the memory it points to, which `Lent`
// keeps borrowed (shared, so unchanged) until every `Loan` is dropped.
unsafe impl Send for Loan {}

impl AsRef<[u8]> for Loan {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `at..at + len` is the lent slice, alive and unchanged
        // while this exists (see `Lent`).
        unsafe { std::slice::from_raw_parts(self.at, self.len) }
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        self.back.store(true, Ordering::Release);
    }
}

/// A caller's buffer lent to the links for one call. Dropping it takes the
/// buffer back: what still waits in a writer's queue is copied.
pub(crate) struct Lent<'a> {
    src: &'a [u8],
    links: Arc<dyn Links>,
    back: Arc<AtomicBool>,
}

impl<'a> Lent<'a> {
    /// Lend `src` to `links`: the bytes to post, and the loan to drop when
    /// the call that posts them returns.
    fn new(src: &'a [u8], links: Arc<dyn Links>) -> (Bytes, Lent<'a>) {
        let back = Arc::new(AtomicBool::new(false));
        let loan = Loan {
            at: src.as_ptr(),
            len: src.len(),
            back: back.clone(),
        };
        (Bytes::from_owner(loan), Lent { src, links, back })
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        let lo = self.src.as_ptr() as usize;
        self.links.reclaim(lo, lo + self.src.len());
        if !self.back.load(Ordering::Acquire) {
            // A packet still reads the caller's buffer, which the caller is
            // about to reuse or free: a bug in the conditions of `staged`.
            // Stopping here is the only safe way out.
            eprintln!("mcast: a lent send buffer is still referenced when its call returns");
            std::process::abort();
        }
    }
}

impl Net {
    /// The bytes of a message this rank originates (the source of a bcast
    /// or a multicast), and how they are staged: lent from `data` when
    /// the payload is large and every peer is behind TCP (see the module
    /// doc); else in its shared-memory arena when that can serve (a large
    /// payload, room in the arena), so receivers on this host read them in
    /// place, with the copy into it still to make (pass the staging to
    /// [`Net::send_filling`], which makes it a packet at a time as they
    /// leave); otherwise a plain copy.
    pub(crate) fn staged<'a>(&self, data: &'a [u8]) -> (Bytes, Option<Staging<'a>>) {
        if data.len() >= SHM_MIN_PAYLOAD && self.lends() {
            let (bytes, lent) = Lent::new(data, self.sh.links.clone());
            return (bytes, Some(Staging::Lent(lent)));
        }
        match self.sh.links.shm().and_then(|s| s.filling(data)) {
            Some((bytes, fill)) => (bytes, Some(Staging::Arena(fill))),
            // No arena (or no room): a kept buffer if one fits, whose
            // pages are mapped already (see `bufpool`).
            None => {
                let mut buf = POOL.take(data.len());
                buf.extend_from_slice(data);
                (POOL.freeze(buf), None)
            }
        }
    }

    /// Whether a posted payload may be lent: every peer is reached over
    /// TCP, whose writers' queues are all that can hold its bytes.
    fn lends(&self) -> bool {
        self.sh.links.rings().is_none()
            && self.links.iter().flatten().all(|l| *l == Link::Tcp)
            && self.links.iter().any(Option::is_some)
    }
}
