//! Helpers shared by the launcher's integration tests. Every wait is bounded.

#![allow(dead_code)]

use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Upper bound on any one mclaunch run in these tests.
pub const LIMIT: Duration = Duration::from_secs(20);
/// Jobs that must end promptly (a failure, a signal) are expected within this.
pub const PROMPT: Duration = Duration::from_secs(10);

/// A `Command` for the mclaunch binary under test.
pub fn mclaunch() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mclaunch"));
    cmd.stdin(Stdio::null());
    // If the test thread dies (a failed assertion), mclaunch dies with it, and
    // its ranks with mclaunch.
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        });
    }
    cmd
}

/// Path of the `rank_probe` example (built by `cargo test` before the tests run).
pub fn rank_probe() -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_mclaunch"))
        .parent()
        .unwrap()
        .join("examples/rank_probe");
    assert!(
        p.exists(),
        "{} is missing: build it with `cargo build -p mclaunch --examples` \
         (plain `cargo test -p mclaunch` does so)",
        p.display()
    );
    p
}

/// A child being waited for by a thread, so waits can have deadlines.
pub struct Watched {
    pub pid: i32,
    exited: mpsc::Receiver<ExitStatus>,
    stdout: Option<thread::JoinHandle<String>>,
    stderr: Option<thread::JoinHandle<String>>,
    started: Instant,
}

/// The result of a finished mclaunch run.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

fn slurp(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Start `cmd` with captured stdout and stderr.
pub fn start(cmd: &mut Command) -> Watched {
    let mut child: Child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start mclaunch");
    let stdout = child.stdout.take().map(slurp);
    let stderr = child.stderr.take().map(slurp);
    let pid = child.id() as i32;
    let (tx, exited) = mpsc::channel();
    thread::spawn(move || {
        if let Ok(status) = child.wait() {
            let _ = tx.send(status);
        }
    });
    Watched {
        pid,
        exited,
        stdout,
        stderr,
        started: Instant::now(),
    }
}

impl Watched {
    /// Wait up to `limit` for the child to exit; on expiry kill it and panic.
    pub fn finish(mut self, limit: Duration) -> Finished {
        let status = match self.exited.recv_timeout(limit) {
            Ok(status) => status,
            Err(_) => {
                // SAFETY: the waiter thread has not reaped the child, so the pid is ours.
                unsafe { libc::kill(self.pid, libc::SIGKILL) };
                let _ = self.exited.recv_timeout(Duration::from_secs(5));
                panic!("mclaunch did not finish within {limit:?}; killed it");
            }
        };
        let elapsed = self.started.elapsed();
        let stdout = self
            .stdout
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        Finished {
            status,
            stdout,
            stderr,
            elapsed,
        }
    }

    /// Send `signal` to the child.
    pub fn signal(&self, signal: i32) {
        // SAFETY: the child has not been reaped (it is waited for in `finish`).
        unsafe { libc::kill(self.pid, signal) };
    }
}

/// Run `cmd` to completion within [`LIMIT`].
pub fn run(cmd: &mut Command) -> Finished {
    start(cmd).finish(LIMIT)
}

/// A fresh, empty scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mclaunch-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A shell snippet that records the rank's shell pid (and, with `extra`, the
/// pid in `$!`) in `$D/$MCAST_RANK.pid`, written atomically.
pub const RECORD_PID: &str =
    r#"echo "$$" > "$D/$MCAST_RANK.tmp" && mv "$D/$MCAST_RANK.tmp" "$D/$MCAST_RANK.pid""#;
/// Like [`RECORD_PID`], recording `$$` and `$!`.
pub const RECORD_PIDS: &str =
    r#"echo "$$ $!" > "$D/$MCAST_RANK.tmp" && mv "$D/$MCAST_RANK.tmp" "$D/$MCAST_RANK.pid""#;

/// Poll (bounded by `limit`) until `dir` holds `n` `*.pid` files; return all
/// pids they list.
pub fn wait_for_pid_files(dir: &Path, n: usize, limit: Duration) -> Vec<i32> {
    let end = Instant::now() + limit;
    loop {
        let files: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pid"))
            .collect();
        if files.len() >= n {
            return files
                .iter()
                .flat_map(|f| {
                    fs::read_to_string(f)
                        .unwrap()
                        .split_whitespace()
                        .map(|p| p.parse::<i32>().unwrap())
                        .collect::<Vec<_>>()
                })
                .collect();
        }
        assert!(
            Instant::now() < end,
            "only {} of {n} ranks recorded their pid within {limit:?}",
            files.len()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// True if `pid` is a process that has not exited (a zombie counts as exited).
pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next())
                .unwrap_or("?");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

/// Poll (bounded by `limit`) until none of `pids` is alive; panic naming survivors.
pub fn assert_all_gone(pids: &[i32], limit: Duration) {
    let end = Instant::now() + limit;
    loop {
        let alive: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if alive.is_empty() {
            return;
        }
        if Instant::now() >= end {
            for &p in &alive {
                // SAFETY: best-effort cleanup of the survivors before failing.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            panic!("processes {alive:?} outlived mclaunch");
        }
        thread::sleep(Duration::from_millis(10));
    }
}
