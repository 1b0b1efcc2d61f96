//! Who failed first in time: bookkeeping over the ranks' exits and their
//! departure reports, without processes (the supervisor feeds it events).
//!
//! A rank's failure enters the order when a peer declares it lost, or when
//! it exits non-zero without having declared a peer lost itself. A rank that
//! did declare one and then fails is a casualty: it is blamed only if no
//! rank in the order failed (its peer left without goodbye but exited 0).

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use crate::reports::Lost;

/// What is known of one rank.
#[derive(Debug, Default)]
pub(crate) struct Entry {
    /// How it ended, once reaped.
    pub status: Option<ExitStatus>,
    /// It declared a peer lost (so its own failure is that peer's doing).
    pub reported: bool,
    /// The first peer to declare it lost, and when mclaunch heard of it.
    pub declared: Option<(Lost, Instant)>,
    /// mclaunch killed it after this grace period.
    pub killed_after: Option<Duration>,
}

/// The failure order of a job.
#[derive(Debug, Default)]
pub(crate) struct Blame {
    ranks: Vec<Entry>,
    /// Ranks in the order they failed in time.
    order: Vec<u32>,
    /// Ranks that exited non-zero after declaring a peer lost, in order.
    excused: Vec<u32>,
}

impl Blame {
    /// Rank `rank` has started (ranks start in order).
    pub(crate) fn started(&mut self) {
        self.ranks.push(Entry::default());
    }

    pub(crate) fn entry(&self, rank: u32) -> Option<&Entry> {
        self.ranks.get(rank as usize)
    }

    /// Rank `rank` ended with `status`.
    pub(crate) fn exited(&mut self, rank: u32, status: ExitStatus) {
        let Some(r) = self.ranks.get_mut(rank as usize) else {
            return;
        };
        r.status = Some(status);
        if !status.success() {
            if r.reported {
                self.excused.push(rank);
            } else if !self.order.contains(&rank) {
                self.order.push(rank);
            }
        }
    }

    /// A rank declared a peer lost (heard of at `now`).
    pub(crate) fn lost(&mut self, lost: Lost, now: Instant) {
        if let Some(r) = self.ranks.get_mut(lost.by as usize) {
            r.reported = true;
        }
        let peer = lost.peer;
        let Some(r) = self.ranks.get_mut(peer as usize) else {
            return;
        };
        if r.declared.is_some() || r.status.is_some_and(|s| s.success()) {
            return;
        }
        let casualty = r.reported;
        r.declared = Some((lost, now));
        if !casualty && !self.order.contains(&peer) {
            self.order.push(peer);
        }
    }

    /// mclaunch killed `rank` after `grace`.
    pub(crate) fn killed(&mut self, rank: u32, grace: Duration) {
        if let Some(r) = self.ranks.get_mut(rank as usize) {
            r.killed_after = Some(grace);
        }
    }

    /// Ranks declared lost, still running and not yet killed, with the time
    /// they are to be killed.
    pub(crate) fn to_kill(&self, grace: Duration) -> impl Iterator<Item = (u32, Instant)> + '_ {
        (0u32..)
            .zip(&self.ranks)
            .filter_map(move |(rank, r)| match &r.declared {
                Some((_, at)) if r.status.is_none() && r.killed_after.is_none() => {
                    Some((rank, *at + grace))
                }
                _ => None,
            })
    }

    /// The failure to report now, if one is certain: the first in time whose
    /// exit is a failure. `None` while an earlier rank in the order has not
    /// ended (it may still fail, or succeed).
    pub(crate) fn first_failure(&self) -> Option<u32> {
        for &rank in &self.order {
            match self.entry(rank).and_then(|r| r.status) {
                None => return None,
                Some(s) if !s.success() => return Some(rank),
                Some(_) => {}
            }
        }
        None
    }

    /// Once every rank has ended: the failed ranks, first in time first
    /// (casualties after the others).
    pub(crate) fn failures(&self) -> Vec<u32> {
        let failed = |rank: &u32| {
            self.entry(*rank)
                .and_then(|r| r.status)
                .is_some_and(|s| !s.success())
        };
        let mut all: Vec<u32> = self.order.iter().copied().filter(failed).collect();
        for &r in &self.excused {
            if !all.contains(&r) {
                all.push(r);
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    const KILLED: i32 = libc::SIGKILL;
    fn exit(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }
    fn lost(by: u32, peer: u32) -> Lost {
        Lost {
            by,
            peer,
            reason: "gone".into(),
        }
    }
    fn job(n: usize) -> Blame {
        let mut b = Blame::default();
        for _ in 0..n {
            b.started();
        }
        b
    }

    #[test]
    fn a_casualty_reaped_first_is_not_blamed() {
        let mut b = job(4);
        let t = Instant::now();
        b.lost(lost(1, 3), t);
        b.exited(1, exit(1));
        // Rank 3 was declared first and has not ended: no verdict yet.
        assert_eq!(b.first_failure(), None);
        b.lost(lost(2, 1), t); // 1 is a casualty: not put before anyone
        b.exited(3, ExitStatus::from_raw(KILLED));
        assert_eq!(b.first_failure(), Some(3));
        b.exited(0, exit(0));
        b.exited(2, exit(1));
        assert_eq!(b.failures(), vec![3, 1, 2]);
    }

    #[test]
    fn an_unexplained_failure_is_blamed_at_once() {
        let mut b = job(3);
        b.exited(2, exit(5));
        assert_eq!(b.first_failure(), Some(2));
        // Peers that then report it lost change nothing.
        b.lost(lost(0, 2), Instant::now());
        assert_eq!(b.first_failure(), Some(2));
        assert_eq!(b.failures(), vec![2]);
    }

    #[test]
    fn a_declared_rank_that_succeeds_leaves_the_casualty_blamed() {
        let mut b = job(2);
        b.lost(lost(0, 1), Instant::now());
        b.exited(0, exit(1));
        b.exited(1, exit(0));
        assert_eq!(b.first_failure(), None);
        assert_eq!(b.failures(), vec![0]);
    }

    #[test]
    fn declared_ranks_are_killed_after_the_grace_period_once() {
        let mut b = job(3);
        let t = Instant::now();
        let grace = Duration::from_secs(2);
        b.lost(lost(0, 2), t);
        b.lost(lost(1, 2), t + grace); // the first report counts
        assert_eq!(b.to_kill(grace).collect::<Vec<_>>(), vec![(2, t + grace)]);
        b.killed(2, grace);
        assert_eq!(b.to_kill(grace).count(), 0);
        b.exited(2, ExitStatus::from_raw(KILLED));
        assert_eq!(b.first_failure(), Some(2));
        assert_eq!(b.entry(2).unwrap().killed_after, Some(grace));
    }
}
