//! Helpers for whole-system tests: find the binaries, run them with a deadline.

#![allow(dead_code)]

pub mod cluster;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A binary of this package.
pub fn bin(name: &str) -> PathBuf {
    match name {
        "mcbench" => PathBuf::from(env!("CARGO_BIN_EXE_mcbench")),
        "mcast-selftest" => PathBuf::from(env!("CARGO_BIN_EXE_mcast-selftest")),
        "mcast-colltest" => PathBuf::from(env!("CARGO_BIN_EXE_mcast-colltest")),
        "mcast-faults" => PathBuf::from(env!("CARGO_BIN_EXE_mcast-faults")),
        "mcast-pressure" => PathBuf::from(env!("CARGO_BIN_EXE_mcast-pressure")),
        "mcquic-raw" => PathBuf::from(env!("CARGO_BIN_EXE_mcquic-raw")),
        other => panic!("unknown binary {other}"),
    }
}

/// mclaunch, built beside this package's binaries by `cargo test --workspace`
/// (or `cargo build --workspace`).
pub fn mclaunch() -> PathBuf {
    let p = bin("mcbench").with_file_name("mclaunch");
    assert!(
        p.exists(),
        "{} is missing: run the tests with `cargo test --workspace` (or `cargo build --workspace` first)",
        p.display()
    );
    p
}

/// Run `cmd` to completion, killing it (and, through mclaunch's own teardown,
/// its ranks) if it is not done within `limit`. Panics on a timeout.
pub fn run_bounded(cmd: Command, limit: Duration) -> Output {
    run_bounded_with_input(cmd, None, limit)
}

/// [`run_bounded`] with `input` on the command's standard input (`None`:
/// none, as from /dev/null).
pub fn run_bounded_with_input(mut cmd: Command, input: Option<&[u8]>, limit: Duration) -> Output {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        use std::io::Write;
        stdin.write_all(input).expect("write standard input");
    }
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            // SIGTERM lets mclaunch tear its ranks down; SIGKILL if it will not go.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            let out = rx.recv_timeout(Duration::from_secs(10));
            if out.is_err() {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            panic!("{cmd:?} did not finish within {limit:?}");
        }
    }
}

pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Check what `mcbench --timeline` wrote to `dir` for `ranks` ranks, each
/// `rows` rows: every row in order (bcast call ≤ done ≤ barrier call ≤
/// done), no rank out of a barrier before every rank entered it, and no
/// receiver with the data before the root (rank 0) called its bcast. The
/// ranks must share one clock (one machine, or namespaces of one). Errors
/// are returned, so that the caller can remove `dir` before it asserts.
pub fn check_timeline(dir: &std::path::Path, ranks: usize, rows: usize) -> Result<(), String> {
    // by_rank[rank][(size, iteration)] = [bcast call, bcast done, barrier call, barrier done]
    let mut by_rank = Vec::new();
    for rank in 0..ranks {
        let path = dir.join(format!("rank-{rank}.tsv"));
        let f = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut lines = f.lines();
        if !lines
            .next()
            .is_some_and(|h| h.starts_with("size\titeration\t"))
        {
            return Err(format!("rank {rank}: no timeline header in\n{f}"));
        }
        let mut m = std::collections::BTreeMap::new();
        for l in lines {
            let v: Vec<u64> = l.split('\t').filter_map(|x| x.parse().ok()).collect();
            if v.len() != 6 || !(v[2] <= v[3] && v[3] <= v[4] && v[4] <= v[5]) {
                return Err(format!("rank {rank}: bad row {l:?}"));
            }
            m.insert((v[0], v[1]), [v[2], v[3], v[4], v[5]]);
        }
        if m.len() != rows {
            return Err(format!("rank {rank}: {} rows, expected {rows}", m.len()));
        }
        by_rank.push(m);
    }
    let Some(root) = by_rank.first() else {
        return Ok(());
    };
    for key in root.keys() {
        let mut at = Vec::with_capacity(ranks);
        for (r, m) in by_rank.iter().enumerate() {
            at.push(*m.get(key).ok_or(format!("rank {r} has no row {key:?}"))?);
        }
        let last_in = at.iter().map(|a| a[2]).max().unwrap_or(0);
        for (r, a) in at.iter().enumerate() {
            if a[3] < last_in {
                return Err(format!(
                    "{key:?}: rank {r} left the barrier before all entered"
                ));
            }
            if a[1] < at[0][0] {
                return Err(format!(
                    "{key:?}: rank {r} had the data before the root sent it"
                ));
            }
        }
    }
    Ok(())
}
