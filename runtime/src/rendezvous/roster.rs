//! Who has joined the rendezvous ([`Roster`]) and what to do with a hello
//! ([`Verdict`]), without any I/O; and how the rendezvous names ranks and
//! durations in its messages.

use std::time::Duration;

use crate::bootstrap::{job_id_from_token, tokens_equal, Hello, RendezvousReply, PROTOCOL_VERSION};

/// One rank that has joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub pid: u32,
    pub data_addr: String,
}

/// What to do with a hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Take it; `replaces` is true when the same process re-sent its hello
    /// (a retry on a new connection).
    Accept { replaces: bool },
    /// Refuse this connection only (not from this job); keep waiting.
    Stray(String),
    /// Refuse it and fail the job: a rank of this job cannot take part.
    Fatal(String),
}

/// Who has joined: the rendezvous's state, without any I/O.
#[derive(Debug)]
pub struct Roster {
    size: u32,
    token: String,
    members: Vec<Option<Member>>,
    joined: usize,
}

impl Roster {
    pub fn new(size: u32, token: String) -> Roster {
        Roster {
            size,
            token,
            members: vec![None; size as usize],
            joined: 0,
        }
    }

    /// Judge a hello without admitting it.
    pub fn judge(&self, h: &Hello) -> Verdict {
        if !tokens_equal(&h.token, &self.token) {
            return Verdict::Stray("wrong job token".into());
        }
        if h.version != PROTOCOL_VERSION {
            return Verdict::Fatal(format!(
                "rank {} speaks control protocol version {}, the rendezvous {} \
                 (build both against the same mcast)",
                h.rank, h.version, PROTOCOL_VERSION
            ));
        }
        if h.size != self.size {
            return Verdict::Fatal(format!(
                "rank {} believes the job has {} ranks, but the job has {}",
                h.rank, h.size, self.size
            ));
        }
        if h.rank >= self.size {
            return Verdict::Fatal(format!(
                "a process claims rank {} in a job of {} ranks",
                h.rank, self.size
            ));
        }
        if h.data_addr.is_empty() {
            return Verdict::Fatal(format!("rank {} sent an empty data address", h.rank));
        }
        match &self.members[h.rank as usize] {
            None => Verdict::Accept { replaces: false },
            Some(m) if m.pid == h.pid => Verdict::Accept { replaces: true },
            Some(m) => Verdict::Fatal(format!(
                "rank {} joined twice (pids {} and {})",
                h.rank, m.pid, h.pid
            )),
        }
    }

    /// Record an accepted hello.
    pub fn admit(&mut self, h: &Hello) {
        let slot = &mut self.members[h.rank as usize];
        if slot.is_none() {
            self.joined += 1;
        }
        *slot = Some(Member {
            pid: h.pid,
            data_addr: h.data_addr.clone(),
        });
    }

    pub fn has_joined(&self, rank: u32) -> bool {
        self.members.get(rank as usize).is_some_and(|m| m.is_some())
    }

    pub fn complete(&self) -> bool {
        self.joined == self.members.len()
    }

    /// Ranks that have not joined yet.
    pub fn missing(&self) -> Vec<u32> {
        (0..self.size)
            .filter(|&r| self.members[r as usize].is_none())
            .collect()
    }

    /// The address table, once complete.
    pub fn table(&self) -> Option<RendezvousReply> {
        let addrs = self
            .members
            .iter()
            .map(|m| m.as_ref().map(|m| m.data_addr.clone()))
            .collect::<Option<Vec<_>>>()?;
        Some(RendezvousReply::Table {
            job: job_id_from_token(&self.token),
            addrs,
        })
    }
}

/// Format a list of ranks compactly: `"0, 2, 5-9"`. The input need not be sorted.
pub fn format_ranks(ranks: &[u32]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(match end - start {
            0 => format!("{start}"),
            1 => format!("{start}, {end}"),
            _ => format!("{start}-{end}"),
        });
        i += 1;
    }
    parts.join(", ")
}

/// `"rank 3"` or `"ranks 0, 2"`: a noun phrase for a rank set.
pub fn ranks_phrase(ranks: &[u32]) -> String {
    if ranks.len() == 1 {
        format!("rank {}", ranks[0])
    } else {
        format!("ranks {}", format_ranks(ranks))
    }
}

/// A duration for messages: `"30 s"`, `"1.5 s"`.
pub fn format_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(rank: u32, size: u32, token: &str, pid: u32) -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            token: token.into(),
            rank,
            size,
            data_addr: format!("127.0.0.1:{}", 1000 + rank),
            pid,
        }
    }

    #[test]
    fn roster_collects_a_table() {
        let mut r = Roster::new(3, "tok".into());
        assert_eq!(r.missing(), [0, 1, 2]);
        for rank in [2, 0, 1] {
            let h = hello(rank, 3, "tok", 10 + rank);
            assert_eq!(r.judge(&h), Verdict::Accept { replaces: false });
            r.admit(&h);
            assert!(r.has_joined(rank));
        }
        assert!(r.complete());
        assert_eq!(
            r.table(),
            Some(RendezvousReply::Table {
                job: job_id_from_token("tok"),
                addrs: vec![
                    "127.0.0.1:1000".into(),
                    "127.0.0.1:1001".into(),
                    "127.0.0.1:1002".into()
                ],
            })
        );
    }

    #[test]
    fn roster_judges_hellos() {
        let mut r = Roster::new(2, "tok".into());
        assert!(matches!(r.judge(&hello(0, 2, "bad", 1)), Verdict::Stray(_)));
        assert!(matches!(r.judge(&hello(0, 2, "to", 1)), Verdict::Stray(_)));
        assert!(matches!(r.judge(&hello(0, 3, "tok", 1)), Verdict::Fatal(_)));
        assert!(matches!(r.judge(&hello(2, 2, "tok", 1)), Verdict::Fatal(_)));
        let mut old = hello(0, 2, "tok", 1);
        old.version = PROTOCOL_VERSION + 1;
        assert!(matches!(r.judge(&old), Verdict::Fatal(_)));
        let mut empty = hello(0, 2, "tok", 1);
        empty.data_addr.clear();
        assert!(matches!(r.judge(&empty), Verdict::Fatal(_)));

        r.admit(&hello(0, 2, "tok", 1));
        assert_eq!(
            r.judge(&hello(0, 2, "tok", 1)),
            Verdict::Accept { replaces: true }
        );
        assert!(matches!(r.judge(&hello(0, 2, "tok", 2)), Verdict::Fatal(_)));
        assert_eq!(r.missing(), [1]);
        assert!(r.table().is_none());
        // A retry does not count twice.
        r.admit(&hello(0, 2, "tok", 1));
        assert!(!r.complete());
    }

    #[test]
    fn rank_lists() {
        assert_eq!(format_ranks(&[]), "");
        assert_eq!(format_ranks(&[3]), "3");
        assert_eq!(
            format_ranks(&[5, 0, 1, 2, 3, 7, 8, 9, 11]),
            "0-3, 5, 7-9, 11"
        );
        assert_eq!(format_ranks(&[1, 2]), "1, 2");
        assert_eq!(ranks_phrase(&[2]), "rank 2");
        assert_eq!(ranks_phrase(&[0, 1]), "ranks 0, 1");
    }

    #[test]
    fn seconds() {
        assert_eq!(format_secs(Duration::from_secs(30)), "30 s");
        assert_eq!(format_secs(Duration::from_millis(1500)), "1.5 s");
    }
}
