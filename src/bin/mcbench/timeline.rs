//! `mcbench --timeline DIR`: when each rank called and left its bcast and
//! its barrier, iteration by iteration, so that the ranks' times can be
//! lined up (`bench/timeline.py DIR`): who got the data when, who entered
//! the barrier last, how long the release took to reach each rank.
//!
//! The times are `CLOCK_MONOTONIC` nanoseconds, one clock per machine: the
//! ranks of one host, or of the namespace test cluster (`bench/cluster`),
//! share it; ranks on different machines do not, and their rows cannot be
//! compared.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Timed iterations kept per size (the first ones).
const KEPT: usize = 10_000;

/// One rank's timeline file.
pub struct Timeline {
    out: BufWriter<File>,
    path: PathBuf,
    rows: Vec<[u64; 4]>,
}

/// `CLOCK_MONOTONIC` now, in nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

impl Timeline {
    /// Create `DIR/rank-<rank>.tsv` (and DIR), with its header line, and
    /// `DIR/rank-<rank>.pid`, this process's id (`bench/timeline.py
    /// --sched` finds the rank's thread in a scheduler trace by it).
    pub fn create(dir: &Path, rank: usize) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the timeline directory {}", dir.display()))?;
        let pid_path = dir.join(format!("rank-{rank}.pid"));
        std::fs::write(&pid_path, format!("{}\n", std::process::id()))
            .with_context(|| format!("writing {}", pid_path.display()))?;
        let path = dir.join(format!("rank-{rank}.tsv"));
        let f = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = BufWriter::new(f);
        writeln!(
            out,
            "size\titeration\tbcast_call_ns\tbcast_done_ns\tbarrier_call_ns\tbarrier_done_ns"
        )
        .with_context(|| format!("writing {}", path.display()))?;
        Ok(Self {
            out,
            path,
            rows: Vec::with_capacity(KEPT),
        })
    }

    /// Keep one timed iteration's four times (beyond `KEPT`, nothing).
    pub fn push(&mut self, times: [u64; 4]) {
        if self.rows.len() < KEPT {
            self.rows.push(times);
        }
    }

    /// Write the kept iterations of `size` and start the next size.
    pub fn flush_size(&mut self, size: usize) -> Result<()> {
        for (i, t) in self.rows.drain(..).enumerate() {
            writeln!(
                self.out,
                "{size}\t{i}\t{}\t{}\t{}\t{}",
                t[0], t[1], t[2], t[3]
            )
            .with_context(|| format!("writing {}", self.path.display()))?;
        }
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))
    }
}
