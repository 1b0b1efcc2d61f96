//! Shared-memory arenas: large payloads between ranks of one host travel by
//! reference.
//!
//! Every rank of a host owns one arena, a file in `/dev/shm` mapped by itself
//! and by every other rank of the host (it is unlinked as soon as they all
//! have it open, so nothing is left behind). A root copies its message into
//! its arena once; from then on a packet sent to a rank of the same host
//! carries a 24-byte descriptor (owner, slot, offset, length: see
//! `wire::ShmDesc`) over the Unix socket instead of its payload. The
//! receiving NI turns the descriptor back into `Bytes` that point into the
//! owner's arena, forwards those (FPFS: every child gets a descriptor to the
//! same bytes) and hands them to its host, which copies them into the user's
//! buffer: one copy per receiver instead of two kernel copies per hop. A
//! rank that reads a large payload from another host's socket reads it
//! straight into a slot of its own arena ([`Shm::slot`]), so the ranks of
//! its host get descriptors to it too.
//!
//! Slots are counted per holder: the slot header has one counter for the
//! owner's own reference and one for every rank of the host (so a rank that
//! holds a descriptor into its own arena has a counter too). A sender adds
//! one to the *receiver's* counter before it sends a descriptor, and a
//! receiver drops one from its own counter when its last `Bytes` of the
//! slot goes, so a slot is free exactly when every counter is 0: nobody can
//! read it any more. The owner allocates next-fit (after the newest slot,
//! as in a ring, while that has room; else the first gap that fits; at
//! the start again whenever no slot is live) and
//! reclaims the oldest slots first as they come free; when nothing fits it
//! looks at every slot, so one held long (a multicast the program has not
//! taken) pins only its own bytes, not the arena behind it. When the
//! arena is full all the same, a payload simply goes inline over the
//! socket as before: shared memory is an optimisation, never a dependency.
//!
//! A rank lost without goodbye (dead, or hung and then expelled) can never
//! drop its references; [`Shm::holder_lost`] zeroes its counters in every
//! slot of this process's own arena and ignores them from then on (every
//! owner resets its own arena; every rank learns of a loss by itself). A
//! rank that said goodbye dropped its own references before it went.
//!
//! A slot header (`header_bytes(k)`, the same on every rank of a host of
//! `k` ranks: each derives the host's ranks, and their order, from the same
//! address table) is:
//!
//! ```text
//!   0..8        data length (u64), written by the owner
//!   8..16       k, the number of holders (u64); a receiver whose k differs
//!               refuses the slot
//!   16..24      the owner's own reference
//!   24+8i..     holder i's references: i is the holder's index among the
//!               host's ranks (those with an arena), in rank order
//!   data        from header_bytes(k) = 16 + 8(k + 1) rounded up to 64
//! ```
//!
//! Each counter is one u64 word: the slot's generation (high 32 bits, new
//! at every allocation) and the count (low 32 bits). Adding and dropping
//! check the generation in the same atomic step, so a late drop by a rank
//! that was expelled while it held a slot (it hung, then resumed) never
//! touches the slot's next life; counts never wrap (adding to a full count
//! is refused, dropping from 0 does nothing).
//!
//! Peers of one job trust each other (they hold the job token); still, every
//! descriptor is checked against the arena's bounds and the slot's recorded
//! length and holder count before anything is read, and a counter is only
//! ever read at an index this process computed itself, so a bad header or
//! descriptor is a protocol error, never a stray memory access or a panic.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::sync::lock;
use crate::wire::ShmDesc;

mod arena;

pub(crate) use arena::Arena;
pub use arena::{arena_prefix, ARENA_DIR, ARENA_PREFIX};

/// Where a slot header's counters start (the owner's own, then holder i
/// at `COUNTERS + 8 * (1 + i)`).
const COUNTERS: u64 = 16;
/// The low half of a counter word: the count (the high half is the slot's
/// generation).
const COUNT: u64 = 0xffff_ffff;
/// Slots are aligned to this.
pub(super) const ALIGN: u64 = 64;
/// Payloads smaller than this go inline (a descriptor saves nothing).
pub const SHM_MIN_PAYLOAD: usize = 16 * 1024;

/// Bytes of a slot header on a host of `holders` ranks (see the module
/// documentation for its layout).
pub(crate) fn header_bytes(holders: usize) -> u64 {
    (COUNTERS + 8 * (holders as u64 + 1)).div_ceil(ALIGN) * ALIGN
}

/// The generation of a counter word.
fn gen_of(w: u64) -> u32 {
    (w >> 32) as u32
}

/// Add one reference of generation `gen` to a counter; refused if the
/// counter belongs to another generation or is full.
fn take(c: &AtomicU64, gen: u32) -> bool {
    c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
        (gen_of(w) == gen && w & COUNT < COUNT).then_some(w + 1)
    })
    .is_ok()
}

/// Drop one reference of generation `gen` from a counter (never below 0,
/// never another generation's).
fn release(c: &AtomicU64, gen: u32) {
    let _ = c.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
        (gen_of(w) == gen && w & COUNT > 0).then(|| w - 1)
    });
}

/// The owner's live slots.
#[derive(Debug, Default)]
struct Slots {
    /// Every live slot: offset → bytes (header included).
    live: BTreeMap<u64, u64>,
    /// The same offsets in allocation order, oldest first.
    order: VecDeque<u64>,
    /// Where the newest slot ends: the next one goes there if it fits
    /// (next-fit), so that payloads follow each other through the arena
    /// as in a ring while nothing is held long.
    head: u64,
    /// The generation of the newest slot.
    gen: u32,
}

impl Slots {
    /// Where `total` bytes fit in an arena of `size`: the first gap at or
    /// after `head`, else the first gap from the start (offsets and sizes
    /// are multiples of `ALIGN`).
    fn fit(&self, size: u64, total: u64) -> Option<u64> {
        let mut first = None;
        let mut end = 0;
        let gaps = self.live.iter().map(|(&o, &t)| (o, t)).chain([(size, 0)]);
        for (off, t) in gaps {
            if off >= end.max(self.head).saturating_add(total) {
                return Some(end.max(self.head));
            }
            if first.is_none() && off >= end.saturating_add(total) {
                first = Some(end);
            }
            end = end.max(off.saturating_add(t));
        }
        first
    }
}

/// A slot reference this process holds: which counter it is on.
#[derive(Clone, Copy, Debug)]
struct Held {
    owner: usize,
    slot: u64,
    /// Bytes of data from the reference's start.
    len: usize,
    /// The counter: 0 for the owner's own, 1 + i for holder i.
    counter: usize,
    gen: u32,
}

/// What this process knows of the host's arenas.
pub(crate) struct Shm {
    me: usize,
    /// Every arena of the host by owner rank (ours included).
    arenas: Vec<Option<Arc<Arena>>>,
    /// Each rank's index among the host's ranks (those with an arena).
    local: Vec<Option<usize>>,
    /// Holders lost without goodbye, by index: their counters in our arena
    /// no longer count.
    lost: Vec<AtomicBool>,
    /// Bytes of every slot header on this host.
    header: u64,
    slots: Mutex<Slots>,
    /// Every live slot reference in this process by data start. Lets a
    /// writer find the slot of any `Bytes` that points into an arena
    /// (including sub-slices of a root's message).
    held: Mutex<BTreeMap<usize, Held>>,
    /// Descriptors sent (payloads that did not cross a socket).
    pub(crate) sent: AtomicU64,
}

impl std::fmt::Debug for Shm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shm").field("me", &self.me).finish()
    }
}

/// The owner of `Bytes` that point into an arena: drops its slot reference
/// when the last of them goes.
struct SlotRef {
    shm: Arc<Shm>,
    data: u64,
    held: Held,
}

impl AsRef<[u8]> for SlotRef {
    fn as_ref(&self) -> &[u8] {
        match self.shm.arena(self.held.owner) {
            Some(a) => a.bytes(self.data, self.held.len),
            None => &[],
        }
    }
}

/// A fresh slot of this rank's arena, being filled ([`Shm::slot`]): no
/// descriptor to it has left yet, so its bytes are this process's alone
/// until [`SlotFill::into_bytes`].
pub(crate) struct SlotFill {
    dst: *mut u8,
    len: usize,
    bytes: Bytes,
}

// SAFETY: `dst` points into a mapping that `bytes` keeps alive, and only the
// holder of the `SlotFill` writes there (see above).
unsafe impl Send for SlotFill {}

impl SlotFill {
    /// The slot's bytes, to fill (they hold whatever the slot held before).
    pub(crate) fn buf(&mut self) -> &mut [u8] {
        // SAFETY: `dst..dst + len` lies in the slot, which nobody else reads
        // or writes until `into_bytes` (no descriptor to it exists yet).
        unsafe { std::slice::from_raw_parts_mut(self.dst, self.len) }
    }

    /// The slot's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The filled slot, as bytes that describe themselves to this host.
    pub(crate) fn into_bytes(self) -> Bytes {
        self.bytes
    }
}

/// A slot of this rank's arena being filled from the message it carries
/// ([`Shm::filling`]), a range at a time: each packet's range is copied
/// just before the packet leaves ([`Filling::to`]), so a root's first
/// packets are on their way, and read by this host's ranks, while it
/// still copies the rest (the copy overlaps the sends). Whatever is left
/// is copied on [`Filling::finish`] or drop, before the post returns.
///
/// Sound because a range is only ever read through a packet (a
/// descriptor to this host's ranks, or bytes written to a socket), and a
/// packet leaves after its range is copied; the ranges still being
/// written are those no packet has yet described.
pub(crate) struct Filling<'a> {
    slot: SlotFill,
    src: &'a [u8],
    done: usize,
}

impl Filling<'_> {
    /// Copy the message up to byte `upto` (from where the last copy ended).
    pub(crate) fn to(&mut self, upto: usize) {
        let upto = upto.min(self.src.len()).min(self.slot.len);
        if upto <= self.done {
            return;
        }
        // SAFETY: `done..upto` lies in the slot (`upto` <= its length) and
        // in `src`; no packet describing it has left yet, so nobody reads
        // it (see the type's doc), and `src` is the caller's, not shared
        // memory, so the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.src.as_ptr().add(self.done),
                self.slot.dst.add(self.done),
                upto - self.done,
            );
        }
        self.done = upto;
    }

    /// Copy whatever is left.
    pub(crate) fn finish(&mut self) {
        self.to(self.src.len());
    }
}

impl Drop for Filling<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Drop for SlotRef {
    fn drop(&mut self) {
        let h = self.held;
        if let Some(a) = self.shm.arena(h.owner) {
            lock(&self.shm.held).remove(&(a.base as usize + self.data as usize));
            if let Some(c) = self.shm.counter(a, h.slot, h.counter) {
                release(c, h.gen);
            }
        }
    }
}

impl Shm {
    /// `arenas[r]` is rank r's arena if r shares this host (ours at `me`).
    pub(crate) fn new(me: usize, arenas: Vec<Option<Arc<Arena>>>) -> Shm {
        let mut k = 0;
        let local: Vec<Option<usize>> = arenas
            .iter()
            .map(|a| {
                a.as_ref().map(|_| {
                    k += 1;
                    k - 1
                })
            })
            .collect();
        Shm {
            me,
            arenas,
            local,
            lost: (0..k).map(|_| AtomicBool::new(false)).collect(),
            header: header_bytes(k),
            slots: Mutex::new(Slots::default()),
            held: Mutex::new(BTreeMap::new()),
            sent: AtomicU64::new(0),
        }
    }

    fn arena(&self, owner: usize) -> Option<&Arena> {
        self.arenas.get(owner).and_then(|a| a.as_deref())
    }

    /// The counter of holder `rank` (1 + its index), if it is on this host.
    fn holder(&self, rank: usize) -> Option<usize> {
        self.local.get(rank).copied().flatten().map(|i| i + 1)
    }

    /// Counter `counter` of the slot at `slot` of arena `a` (checked: the
    /// header lies in the arena, aligned, and has that counter).
    fn counter<'a>(&self, a: &'a Arena, slot: u64, counter: usize) -> Option<&'a AtomicU64> {
        if counter > self.lost.len() || !a.slot_ok(slot, self.header) {
            return None;
        }
        a.word(slot + COUNTERS + 8 * counter as u64)
    }

    /// Whether nobody holds our slot at `slot` (a lost holder's count
    /// does not count).
    fn free(&self, a: &Arena, slot: u64) -> bool {
        (0..=self.lost.len()).all(|c| {
            (c > 0 && self.lost[c - 1].load(Ordering::Acquire))
                || self
                    .counter(a, slot, c)
                    .is_some_and(|w| w.load(Ordering::Acquire) & COUNT == 0)
        })
    }

    fn wrap(self: &Arc<Self>, data: u64, held: Held) -> Bytes {
        if let Some(a) = self.arena(held.owner) {
            lock(&self.held).insert(a.base as usize + data as usize, held);
        }
        Bytes::from_owner(SlotRef {
            shm: self.clone(),
            data,
            held,
        })
    }

    /// Copy `data` into a fresh slot of our arena; `None` if it is full (or
    /// `data` is too small to be worth it).
    #[cfg(test)]
    pub(crate) fn copy_in(self: &Arc<Self>, data: &[u8]) -> Option<Bytes> {
        let (bytes, mut fill) = self.filling(data)?;
        fill.finish();
        Some(bytes)
    }

    /// A fresh slot of our arena for `src`, filled a range at a time as the
    /// packets that carry each range leave ([`Filling`]): the bytes to
    /// post, and the copy still to make. `None` as for [`Shm::slot`].
    pub(crate) fn filling<'a>(self: &Arc<Self>, src: &'a [u8]) -> Option<(Bytes, Filling<'a>)> {
        let slot = self.slot(src.len())?;
        let bytes = slot.bytes.clone();
        Some((bytes, Filling { slot, src, done: 0 }))
    }

    /// A fresh slot of our arena for `len` bytes, for the caller to fill
    /// (a payload read from a socket straight into shared memory, so that
    /// forwarding it to this host's ranks costs a descriptor, not a copy);
    /// `None` if the arena is full or `len` is too small to be worth it.
    pub(crate) fn slot(self: &Arc<Self>, len: usize) -> Option<SlotFill> {
        if len < SHM_MIN_PAYLOAD {
            return None;
        }
        let arena = self.arena(self.me)?;
        let total = (self.header + len as u64).div_ceil(ALIGN) * ALIGN;
        let size = arena.len as u64;
        let (slot, gen) = {
            let mut r = lock(&self.slots);
            // The oldest slots first, as long as they are free (cheap: the
            // usual case, where payloads are taken in the order they came).
            while let Some(&off) = r.order.front() {
                if !self.free(arena, off) {
                    break;
                }
                r.order.pop_front();
                r.live.remove(&off);
            }
            if r.live.is_empty() {
                // Start again at the arena's first bytes, still in cache
                // and mapped: payloads taken as fast as they come reuse
                // one slot's memory instead of walking the whole arena.
                r.head = 0;
            }
            let off = match r.fit(size, total) {
                Some(off) => off,
                None => {
                    // Full, or one held slot pins the oldest end: look at
                    // every slot, so that the free ones behind a held one
                    // come back too.
                    let Slots { live, order, .. } = &mut *r;
                    live.retain(|&off, _| !self.free(arena, off));
                    order.retain(|off| live.contains_key(off));
                    r.fit(size, total)?
                }
            };
            r.live.insert(off, total);
            r.order.push_back(off);
            r.head = off + total;
            r.gen = r.gen.wrapping_add(1);
            (off, r.gen)
        };
        // The slot [slot, slot + total) is ours alone until a descriptor
        // to it is sent, and lies inside the mapping.
        let fresh = u64::from(gen) << 32;
        for c in 1..=self.lost.len() {
            self.counter(arena, slot, c)?
                .store(fresh, Ordering::Release);
        }
        self.counter(arena, slot, 0)?
            .store(fresh | 1, Ordering::Release);
        arena.word(slot)?.store(len as u64, Ordering::Release);
        arena
            .word(slot + 8)?
            .store(self.lost.len() as u64, Ordering::Release);
        let at = slot + self.header;
        let held = Held {
            owner: self.me,
            slot,
            len,
            counter: 0,
            gen,
        };
        Some(SlotFill {
            // SAFETY: as above: [at, at + len) lies in the slot.
            dst: unsafe { arena.base.add(at as usize) },
            len,
            bytes: self.wrap(at, held),
        })
    }

    /// If `payload` points into an arena, take one more reference to its slot
    /// for receiver `to` and describe it.
    pub(crate) fn describe(&self, payload: &Bytes, to: usize) -> Option<ShmDesc> {
        if payload.len() < SHM_MIN_PAYLOAD {
            return None;
        }
        let counter = self.holder(to)?;
        if self.lost[counter - 1].load(Ordering::Acquire) {
            return None;
        }
        let p = payload.as_ptr() as usize;
        let (start, h) = {
            let held = lock(&self.held);
            let (&start, &h) = held.range(..=p).next_back()?;
            (start, h)
        };
        if p + payload.len() > start + h.len {
            return None;
        }
        let arena = self.arena(h.owner)?;
        let data = arena.contains(payload.as_ptr(), payload.len())?;
        if !take(self.counter(arena, h.slot, counter)?, h.gen) {
            return None;
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        Some(ShmDesc {
            owner: h.owner as u32,
            len: payload.len() as u32,
            slot: h.slot,
            data,
        })
    }

    /// Turn a received descriptor into `Bytes` (taking over the reference
    /// the sender added to our counter).
    pub(crate) fn open_desc(self: &Arc<Self>, d: &ShmDesc) -> Result<Bytes, String> {
        let owner = d.owner as usize;
        let arena = self
            .arena(owner)
            .ok_or_else(|| format!("descriptor into rank {owner}'s arena, which is not shared"))?;
        if !arena.slot_ok(d.slot, self.header) {
            return Err(format!("descriptor slot {} out of bounds", d.slot));
        }
        let header = |at: u64| {
            arena
                .word(d.slot + at)
                .map_or(0, |w| w.load(Ordering::Acquire))
        };
        let (slot_len, holders) = (header(0), header(8));
        if holders != self.lost.len() as u64 {
            return Err(format!(
                "descriptor into slot {} of {holders} holders, not {}",
                d.slot,
                self.lost.len()
            ));
        }
        let first = d.slot + self.header; // slot_ok: no overflow
        let slot_end = first.saturating_add(slot_len);
        let end = d.data.checked_add(d.len as u64);
        if d.data < first || end.is_none_or(|e| e > slot_end || e > arena.len as u64) {
            return Err(format!(
                "descriptor [{}, +{}) outside slot {} of {slot_len} bytes",
                d.data, d.len, d.slot
            ));
        }
        let w = self
            .holder(self.me)
            .and_then(|c| Some((c, self.counter(arena, d.slot, c)?.load(Ordering::Acquire))))
            .filter(|&(_, w)| w & COUNT > 0);
        let Some((counter, w)) = w else {
            return Err(format!(
                "descriptor into slot {} that holds no reference for rank {}",
                d.slot, self.me
            ));
        };
        let held = Held {
            owner,
            slot: d.slot,
            len: d.len as usize,
            counter,
            gen: gen_of(w),
        };
        Ok(self.wrap(d.data, held))
    }

    /// Release a reference taken by `describe` for a descriptor to `to` that
    /// was never sent.
    #[cfg(test)]
    pub(crate) fn undo(&self, d: &ShmDesc, to: usize) {
        let arena = self.arena(d.owner as usize);
        let c = self.holder(to).zip(arena);
        if let Some(c) = c.and_then(|(c, a)| self.counter(a, d.slot, c)) {
            release(c, gen_of(c.load(Ordering::Acquire)));
        }
    }

    /// Rank `rank` was lost without goodbye: drop every reference it held
    /// to our arena's slots (and ignore any it is later given). A rank that
    /// said goodbye dropped its own; each owner resets only its own arena.
    pub(crate) fn holder_lost(&self, rank: usize) {
        let Some(counter) = self.holder(rank).filter(|_| rank != self.me) else {
            return;
        };
        self.lost[counter - 1].store(true, Ordering::Release);
        let Some(arena) = self.arena(self.me) else {
            return;
        };
        let r = lock(&self.slots);
        for &slot in r.live.keys() {
            if let Some(c) = self.counter(arena, slot, counter) {
                c.fetch_and(!COUNT, Ordering::AcqRel);
            }
        }
    }

    /// Remove our arena's file once every peer has it open.
    pub(crate) fn unlink_own(&self) {
        if let Some(a) = self.arena(self.me) {
            a.unlink();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
