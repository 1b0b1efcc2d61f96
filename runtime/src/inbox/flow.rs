//! End-to-end flow control: byte credits per (source, destination) pair,
//! one window per traffic class.
//!
//! # The scheme (README "Failure semantics", "Memory")
//! * A source may have at most `window` bytes outstanding at each
//!   destination: sent, and not yet taken by that destination's host. Each
//!   packet counts its payload plus [`PACKET_OVERHEAD`] (so a stream of tiny
//!   messages is bounded too).
//! * Before a root posts a bcast (every other rank is a destination) or a
//!   source a multicast (its members), its host reserves the message's cost
//!   at every destination, all or nothing, waiting (and driving the NI) until
//!   there is room. A message larger than the window goes whole once less
//!   than a quarter window is outstanding at each destination, so a message
//!   of any size makes progress, and at most one such message per source is
//!   ever outstanding.
//! * A destination's host gives credit back when it *takes* data (a bcast's
//!   packets in `bcast`, a multicast in `recv_multicast`), in batches of a
//!   quarter window, as a [`Control::Credit`](crate::control::Control)
//!   message to the source alone.
//! * Forwarders never block: a packet is forwarded as soon as it arrives
//!   (FPFS stays FPFS). Every packet a forwarder queues for a child is one
//!   the child has not yet taken, so it holds that child's credit: what sits
//!   in a rank's queues for a child is bounded by the child's windows.
//!   Because nothing inside the network waits for room, the cycles of
//!   buffer dependencies that deadlock store-and-forward networks cannot
//!   form; only hosts wait, for credit of earlier collectives, which every
//!   rank completes in the same order.
//! * Collectives (`Class::Coll`) and multicasts (`Class::Mcast`) have
//!   separate windows, so a receiver that never calls `recv_multicast`
//!   stalls the multicasts aimed at it (its source gets `Timeout` naming
//!   it), never a collective.
//!
//! * A collective's internal point-to-point messages (barrier, reduce,
//!   gather, ...) count in `Class::Coll` at their one destination; the
//!   user's `send`s in a third class, `Class::P2p`: a rank that never calls
//!   `recv` stalls the sends aimed at it (the sender gets `Timeout` naming
//!   it once the window is full), never a collective or a multicast, and
//!   what waits in its memory stays within the window per sender.

use std::time::Duration;

use super::{Inbox, State};
use crate::error::Error;

/// What each packet counts on top of its payload (its header and queue
/// entries, roughly).
pub const PACKET_OVERHEAD: u64 = 64;

/// The cost of a message of `len` bytes in `packets` packets.
pub fn message_cost(len: usize, packets: usize) -> u64 {
    len as u64 + PACKET_OVERHEAD * packets as u64
}

/// The cost of one packet with `payload` bytes.
pub(super) fn packet_cost(payload: usize) -> u64 {
    payload as u64 + PACKET_OVERHEAD
}

/// The traffic classes, each with its own window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Collectives (bcast).
    Coll = 0,
    /// Multicasts.
    Mcast = 1,
    /// The user's point-to-point messages (`send`/`recv`).
    P2p = 2,
}

/// How many classes there are.
const CLASSES: usize = 3;

impl Class {
    pub fn from_code(c: u8) -> Option<Class> {
        match c {
            0 => Some(Class::Coll),
            1 => Some(Class::Mcast),
            2 => Some(Class::P2p),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Class::Coll => "collective data",
            Class::Mcast => "multicasts",
            Class::P2p => "point-to-point messages",
        }
    }
}

/// What a source is about to post, for [`Inbox::reserve`].
#[derive(Debug, Clone, Copy)]
pub enum Post<'a> {
    /// Bcast number `seq` from this rank: every other rank is a destination.
    Bcast { seq: u64 },
    /// Bcast number `seq` of a sub-communicator from this rank: the other
    /// members, `dests`, are the destinations.
    BcastAmong { seq: u64, dests: &'a [usize] },
    /// A multicast to `dests`.
    Multicast { dests: &'a [usize] },
    /// A message of collective `seq` from this rank to `dest` alone.
    Coll { seq: u64, dest: &'a usize },
    /// A user message to `dest`.
    Send { dest: &'a usize },
}

impl Post<'_> {
    fn class(self) -> Class {
        match self {
            Post::Bcast { .. } | Post::BcastAmong { .. } | Post::Coll { .. } => Class::Coll,
            Post::Multicast { .. } => Class::Mcast,
            Post::Send { .. } => Class::P2p,
        }
    }
}

/// A credit return due: give `bytes` of `class` back to rank `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreditDue {
    pub to: usize,
    pub class: Class,
    pub bytes: u64,
}

/// The per-pair window for a job of `size` ranks: the rank's budget shared
/// among its peers, but never under four packets (so that a credit batch,
/// a quarter window, always leaves room for a packet). 0: no flow control.
pub fn pair_window(budget: u64, size: usize, packet_bytes: usize) -> u64 {
    if budget == 0 {
        return 0;
    }
    let peers = size.saturating_sub(1).max(1) as u64;
    (budget / peers).max(4 * packet_cost(packet_bytes))
}

/// Both sides of flow control at one rank.
#[derive(Debug, Default)]
pub(super) struct Flow {
    /// Bytes per pair and class; 0 turns flow control off.
    window: u64,
    /// As a source: bytes outstanding at each peer, per class.
    out: Vec<[u64; CLASSES]>,
    /// As a destination: bytes taken from each source and not yet returned.
    owed: Vec<[u64; CLASSES]>,
    due: Vec<CreditDue>,
    /// Credit messages received: a waiting source's progress.
    returns: u64,
}

impl Flow {
    fn slot(v: &mut Vec<[u64; CLASSES]>, peer: usize) -> &mut [u64; CLASSES] {
        if v.len() <= peer {
            v.resize(peer + 1, [0; CLASSES]);
        }
        &mut v[peer]
    }

    /// Whether `cost` more bytes may go to `peer`.
    fn room(&self, class: Class, peer: usize, cost: u64) -> bool {
        let out = self.out.get(peer).map_or(0, |o| o[class as usize]);
        self.window == 0 || out + cost <= self.window || out < self.window / 4
    }

    /// As a destination: the host took `cost` bytes from `source`.
    pub(super) fn took(&mut self, class: Class, source: usize, cost: u64) {
        if self.window == 0 {
            return;
        }
        let w = self.window;
        let owed = &mut Flow::slot(&mut self.owed, source)[class as usize];
        *owed += cost;
        if *owed >= w / 4 {
            self.due.push(CreditDue {
                to: source,
                class,
                bytes: std::mem::take(owed),
            });
        }
    }

    /// As a source: `peer` gave back `bytes`.
    pub(super) fn returned(&mut self, class: Class, peer: usize, bytes: u64) {
        let out = &mut Flow::slot(&mut self.out, peer)[class as usize];
        *out = out.saturating_sub(bytes);
        self.returns += 1;
    }

    /// `peer` is gone: nothing is owed to it, nothing waits on it.
    pub(super) fn forget(&mut self, peer: usize) {
        if let Some(o) = self.owed.get_mut(peer) {
            *o = [0; CLASSES];
        }
        if let Some(o) = self.out.get_mut(peer) {
            *o = [0; CLASSES];
        }
        self.due.retain(|d| d.to != peer);
    }
}

impl Inbox {
    /// Set the per-pair window for a job of `size` ranks (see
    /// [`pair_window`]); 0 turns flow control off.
    pub fn set_flow(&self, size: usize, window: u64) {
        let mut st = self.lock();
        st.flow.window = window;
        st.flow.out = vec![[0; CLASSES]; size];
        st.flow.owed = vec![[0; CLASSES]; size];
    }

    /// The per-pair window in force (0: off).
    pub fn flow_window(&self) -> u64 {
        self.lock().flow.window
    }

    /// As a source: bytes outstanding at `peer` in `class`.
    #[cfg(test)]
    pub fn outstanding(&self, class: Class, peer: usize) -> u64 {
        let st = self.lock();
        st.flow.out.get(peer).map_or(0, |o| o[class as usize])
    }

    /// Host side, before posting `post`, a message of `cost` bytes: wait
    /// until every destination
    /// has room for it, then count it as outstanding there. Fails as the
    /// class's calls fail (a lost destination, a mismatch, a stopped NI),
    /// or with `Timeout` naming the destination that did not take its data
    /// within `timeout` of the last progress.
    pub fn reserve(
        &self,
        post: Post<'_>,
        cost: u64,
        timeout: Duration,
        op: &dyn Fn() -> String,
    ) -> Result<(), Error> {
        let class = post.class();
        let dests = match post {
            Post::Bcast { .. } => None,
            Post::Multicast { dests } | Post::BcastAmong { dests, .. } => Some(dests),
            Post::Coll { dest, .. } | Post::Send { dest } => Some(std::slice::from_ref(dest)),
        };
        let blocker = std::cell::Cell::new(None::<(usize, u64)>);
        let window = self.flow_window();
        // Progress is credit coming back, not deliveries: a source that
        // receives from others while it waits for room still times out.
        self.wait(
            timeout,
            |st| st.flow.returns,
            || {
                let detail = match blocker.get() {
                    Some((rank, out)) => format!(
                        "rank {rank} has not taken the {out} bytes of earlier {} this \
                         rank sent it (flow-control window {window} bytes per pair; \
                         see MCAST_FLOW_BYTES)",
                        class.name()
                    ),
                    None => "waiting for flow-control credit".into(),
                };
                (op(), detail)
            },
            &mut None,
            |st| {
                if let Some(e) = st.blocked_for(post) {
                    return Err(e);
                }
                let me = st.me;
                let size = st.flow.out.len();
                let mut all = (0..size).filter(|&p| p != me);
                let mut some = dests.unwrap_or(&[]).iter().copied();
                let peers: &mut dyn Iterator<Item = usize> = match dests {
                    Some(_) => &mut some,
                    None => &mut all,
                };
                let mut full = None;
                for p in peers {
                    // The window first: the goodbyes are a hash lookup.
                    if !st.flow.room(class, p, cost) && !st.byes.contains(&p) {
                        full = Some(p);
                        break;
                    }
                }
                if let Some(p) = full {
                    let out = st.flow.out.get(p).map_or(0, |o| o[class as usize]);
                    blocker.set(Some((p, out)));
                    return Ok(None);
                }
                if st.flow.window > 0 {
                    let c = class as usize;
                    match dests {
                        Some(d) => d
                            .iter()
                            .for_each(|&p| Flow::slot(&mut st.flow.out, p)[c] += cost),
                        None => (0..size)
                            .filter(|&p| p != me)
                            .for_each(|p| st.flow.out[p][c] += cost),
                    }
                }
                Ok(Some(()))
            },
        )
    }

    /// The credit returns due, to send now.
    pub fn credits_due(&self) -> Vec<CreditDue> {
        let mut st = self.lock();
        if st.flow.due.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut st.flow.due)
    }
}

impl State {
    /// Why `post` cannot go on, if it cannot.
    fn blocked_for(&mut self, post: Post<'_>) -> Option<Error> {
        let dests = match post {
            Post::Bcast { seq } | Post::BcastAmong { seq, .. } | Post::Coll { seq, .. } => {
                return self.collective_blocked(seq)
            }
            Post::Multicast { dests } => dests,
            Post::Send { dest } => std::slice::from_ref(dest),
        };
        if let Some(e) = &self.fatal {
            return Some(e.clone());
        }
        let lost = self.lost.iter().find(|(r, _)| dests.contains(r)).cloned()?;
        Some(self.report_lost(lost.0, lost.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_shares_the_budget_but_holds_four_packets() {
        assert_eq!(pair_window(0, 8, 65536), 0);
        assert_eq!(pair_window(70 << 20, 8, 65536), 10 << 20);
        assert_eq!(pair_window(1 << 20, 256, 65536), 4 * (65536 + 64));
        assert_eq!(pair_window(1 << 20, 1, 1000), 1 << 20);
    }

    #[test]
    fn room_counts_the_window_and_lets_a_large_message_go_alone() {
        let mut f = Flow {
            window: 1000,
            ..Flow::default()
        };
        assert!(f.room(Class::Coll, 3, 1000));
        assert!(
            f.room(Class::Coll, 3, 5000),
            "an empty pair takes any message"
        );
        Flow::slot(&mut f.out, 3)[0] = 600;
        assert!(f.room(Class::Coll, 3, 400));
        assert!(!f.room(Class::Coll, 3, 401));
        assert!(
            f.room(Class::Mcast, 3, 1000),
            "classes have their own windows"
        );
        Flow::slot(&mut f.out, 3)[0] = 249;
        assert!(
            f.room(Class::Coll, 3, 5000),
            "under a quarter: a big one goes"
        );
        f.returned(Class::Coll, 3, 10_000);
        assert_eq!(f.out[3][0], 0, "a hostile return cannot go negative");
    }

    #[test]
    fn a_source_waits_for_credit_and_a_timeout_names_the_rank() {
        use crate::control::Control;
        let inbox = Inbox::new(0, 1 << 20);
        inbox.set_flow(4, 1000);
        let short = Duration::from_millis(50);
        let op = || "bcast #7".to_string();
        inbox
            .reserve(Post::Bcast { seq: 7 }, 700, short, &op)
            .unwrap();
        assert_eq!(inbox.outstanding(Class::Coll, 3), 700);
        // Ranks 1 and 3 give back; rank 2 does not.
        for r in [1, 3] {
            inbox.control(
                r,
                Control::Credit {
                    class: 0,
                    bytes: 700,
                },
            );
        }
        match inbox.reserve(Post::Bcast { seq: 7 }, 700, short, &op) {
            Err(Error::Timeout { op, detail, .. }) => {
                assert_eq!(op, "bcast #7");
                assert!(
                    detail.starts_with("rank 2 has not taken the 700 bytes"),
                    "{detail}"
                );
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert_eq!(inbox.outstanding(Class::Coll, 1), 0, "all or nothing");
        // Multicasts have their own window; only the destinations count.
        inbox
            .reserve(Post::Multicast { dests: &[2] }, 900, short, &op)
            .unwrap();
        inbox
            .reserve(Post::Multicast { dests: &[1, 3] }, 900, short, &op)
            .unwrap();
        // A lost destination fails the wait with its name.
        inbox.lost(2, "killed".into());
        match inbox.reserve(Post::Multicast { dests: &[2] }, 1, short, &op) {
            Err(Error::PeerLost { rank: 2, .. }) => {}
            other => panic!("expected rank 2 lost, got {other:?}"),
        }
    }

    #[test]
    fn credit_goes_back_in_quarter_windows() {
        let mut f = Flow {
            window: 1000,
            ..Flow::default()
        };
        f.took(Class::Mcast, 2, 200);
        assert!(f.due.is_empty());
        f.took(Class::Mcast, 2, 60);
        assert_eq!(
            f.due,
            vec![CreditDue {
                to: 2,
                class: Class::Mcast,
                bytes: 260
            }]
        );
        f.took(Class::Coll, 5, 300);
        f.forget(5);
        assert_eq!(f.due.len(), 1, "nothing is owed to a lost rank");
        let mut off = Flow::default();
        off.took(Class::Coll, 1, 1 << 40);
        assert!(off.due.is_empty() && off.room(Class::Coll, 1, u64::MAX / 2));
    }
}
