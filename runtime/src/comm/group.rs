//! Sub-communicators: [`Comm::split`], [`Comm::dup`], and the translation
//! between a communicator's ranks and the world's.
//!
//! A sub-communicator shares the world's NI, links and inbox. Its calls are
//! numbered in its own sequence, whose high bits are its id
//! (`wire::COMM_SHIFT`); the header's `comm` field carries the id, so every
//! keyed stream (collectives, bcast packets, user messages, multicasts) is
//! apart from every other communicator's.
//!
//! # Communicator ids
//! Each process keeps the lowest id it has not used. `split` gathers every
//! rank's (colour, key, lowest unused id); the new communicators take ids
//! from the largest of those on, one per colour in increasing colour
//! order, and every rank of the parent moves its lowest unused id past
//! them. So the communicators one process belongs to have distinct ids,
//! and a packet's id names one communicator at its receiver (the sender
//! and the receiver made it in one `split`). Two disjoint communicators
//! may share an id; no packet travels between them. This is the context
//! id agreement of MPICH, with a maximum instead of a bit mask.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::Comm;
use crate::wire::COMM_SHIFT;
use crate::Error;

/// A sub-communicator's id and members.
pub(super) struct Group {
    pub(super) id: u32,
    /// The world rank of each rank of the communicator.
    pub(super) ranks: Arc<[usize]>,
    /// World rank -> rank in the communicator.
    index: HashMap<usize, usize>,
}

/// Communicator ids are below this (the bits of a sequence number above
/// `COMM_SHIFT`, less the one that marks a hidden twin).
const MAX_IDS: u64 = super::request::HIDDEN_BIT as u64;
const _: () = assert!(MAX_IDS < 1 << (64 - COMM_SHIFT));

impl Comm {
    /// This communicator's id: 0 for the world.
    pub fn id(&self) -> u32 {
        self.group.as_ref().map_or(0, |g| g.id)
    }

    /// The world rank of `rank` of this communicator (`None` out of range).
    pub fn world_rank(&self, rank: usize) -> Option<usize> {
        (rank < self.size).then(|| self.world(rank))
    }

    /// The world rank of rank `r` (< size) of this communicator.
    pub(super) fn world(&self, r: usize) -> usize {
        match &self.group {
            None => r,
            Some(g) => g.ranks.get(r).copied().unwrap_or(usize::MAX),
        }
    }

    /// The rank in this communicator of world rank `w`, if a member.
    pub(super) fn local(&self, w: usize) -> Option<usize> {
        match &self.group {
            None => Some(w),
            Some(g) => g.index.get(&w).copied(),
        }
    }

    /// On a sub-communicator, the world ranks of its other members (in
    /// chain order: from this rank's successor on); `None` on the world.
    pub(super) fn others(&self) -> Option<Vec<usize>> {
        let g = self.group.as_ref()?;
        Some(
            (1..self.size)
                .map(|p| g.ranks[(self.rank + p) % self.size])
                .collect(),
        )
    }

    /// Collective over this communicator, as `MPI_Comm_split`: the ranks
    /// that pass the same `color` form a new communicator, ordered by
    /// `(key, rank here)`; a rank that passes `None` gets `Ok(None)` (it
    /// still takes part). The new communicator shares this one's links and
    /// NI and counts its own calls; every call works on it, with ranks
    /// numbered in it. [`Error::PeerLost`] names world ranks.
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Comm>, Error> {
        let mine = [
            color.map_or(-1, i64::from),
            i64::from(key),
            i64::from(self.next_id.load(Ordering::Relaxed)),
        ];
        let mut all = vec![0i64; 3 * self.size];
        self.allgather(&mine, &mut all)?;
        let rows: Vec<&[i64]> = all.chunks_exact(3).collect();
        let base = rows.iter().map(|r| r[2]).max().unwrap_or(1).max(1) as u64;
        let mut colors: Vec<i64> = rows.iter().map(|r| r[0]).filter(|&c| c >= 0).collect();
        colors.sort_unstable();
        colors.dedup();
        let end = base + colors.len() as u64;
        if end > MAX_IDS {
            return Err(Error::InvalidArgument(format!(
                "split: communicator ids exhausted ({MAX_IDS} per job)"
            )));
        }
        self.next_id.fetch_max(end as u32, Ordering::Relaxed);
        let Some(color) = color else {
            return Ok(None);
        };
        let slot = colors
            .iter()
            .position(|&c| c == i64::from(color))
            .unwrap_or(0);
        let id = (base + slot as u64) as u32;
        let mut members: Vec<(i64, usize)> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r[0] == i64::from(color))
            .map(|(old, r)| (r[1], old))
            .collect();
        members.sort_unstable();
        let ranks: Arc<[usize]> = members.iter().map(|&(_, old)| self.world(old)).collect();
        let index: HashMap<usize, usize> = ranks.iter().enumerate().map(|(i, &w)| (w, i)).collect();
        let me = self.world(self.rank);
        let rank = index.get(&me).copied().ok_or_else(|| {
            Error::Protocol(format!(
                "split: world rank {me} missing from its own colour"
            ))
        })?;
        tracing::debug!(id, rank, size = ranks.len(), color, key, "split");
        Ok(Some(self.with_group(Group { id, ranks, index }, rank)))
    }

    /// A communicator over `g`'s members, this rank being `rank` of it,
    /// sharing this one's links, NI and inbox (which learns its members).
    fn with_group(&self, g: Group, rank: usize) -> Comm {
        self.inbox.add_group(g.id, g.ranks.clone());
        let seq = Arc::new(AtomicU64::new(0));
        crate::sync::lock(&self.counters).insert(g.id, seq.clone());
        Comm {
            cfg: self.cfg.clone(),
            rank,
            size: g.ranks.len(),
            job: self.job,
            net: self.net.clone(),
            inbox: self.inbox.clone(),
            group: Some(Arc::new(g)),
            next_id: self.next_id.clone(),
            counters: self.counters.clone(),
            seq,
            mcast_seq: Default::default(),
            ordinals: Default::default(),
            sends: Default::default(),
            last_model: Default::default(),
            progress: Default::default(),
            found: Default::default(),
        }
    }

    /// This communicator's twin with id `id`: the same members in the same
    /// order, its own numbering (see `request`).
    pub(super) fn twin(&self, id: u32) -> Comm {
        let ranks: Arc<[usize]> = (0..self.size).map(|r| self.world(r)).collect();
        let index = ranks.iter().enumerate().map(|(i, &w)| (w, i)).collect();
        self.with_group(Group { id, ranks, index }, self.rank)
    }

    /// Collective over this communicator, as `MPI_Comm_dup`: a new
    /// communicator with the same ranks in the same order, whose calls
    /// never mix with this one's.
    pub fn dup(&self) -> Result<Comm, Error> {
        self.split(Some(0), 0)?
            .ok_or_else(|| Error::Protocol("dup: no communicator came out of split".into()))
    }
}
