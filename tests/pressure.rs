//! Bounded memory under sustained load (README "Failure semantics",
//! "Memory"): every rank's peak RSS, read from `/proc/PID/status` while the
//! job runs, stays under the stated ceiling.
//!
//! The scenarios run for `MCAST_PRESSURE_SECS` seconds (default 60) with a
//! small flow-control budget and no shared-memory arena, so what a rank
//! holds is in its own heap and the ceiling is tight. Before flow control
//! the same runs grew a rank past 1 GB within 10 s (bench/results/issue15).

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{bin, mclaunch};

/// The flow-control budget the scenarios run with.
const FLOW_BYTES: u64 = 8 << 20;
/// What a rank may use besides data: program, runtime, socket buffers
/// copied in flight, allocator slack.
const BASE_BYTES: u64 = 40 << 20;

/// The README's ceiling: the base, plus per class (collectives, multicasts)
/// the budget of unconsumed data and as much again queued for children.
fn ceiling() -> u64 {
    BASE_BYTES + 2 * 2 * FLOW_BYTES
}

fn secs() -> f64 {
    std::env::var("MCAST_PRESSURE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60.0)
}

fn vm_hwm(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

struct Run {
    peaks: BTreeMap<usize, u64>,
    stdout: Vec<String>,
    stderr: String,
    ok: bool,
}

/// Run `mcast-pressure` under mclaunch, sampling every rank's peak RSS.
fn run(n: usize, scenario: &[&str], env: &[(&str, &str)]) -> Run {
    let secs = secs();
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", &n.to_string()])
        .arg(bin("mcast-pressure"))
        .args(scenario)
        .args(["--secs", &secs.to_string()])
        .env("MCAST_FLOW_BYTES", FLOW_BYTES.to_string())
        .env("MCAST_SHM_BYTES", "0")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn mclaunch");
    let pids: Arc<Mutex<BTreeMap<usize, u32>>> = Arc::default();
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let out = child.stdout.take().expect("stdout");
    let (p2, l2) = (pids.clone(), lines.clone());
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("READY ") {
                let kv: BTreeMap<&str, &str> =
                    rest.split(' ').filter_map(|f| f.split_once('=')).collect();
                if let (Some(r), Some(p)) = (kv.get("rank"), kv.get("pid")) {
                    if let (Ok(r), Ok(p)) = (r.parse(), p.parse()) {
                        p2.lock().unwrap().insert(r, p);
                    }
                }
            }
            l2.lock().unwrap().push(line);
        }
    });
    let mut err = child.stderr.take().expect("stderr");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs_f64(secs + 120.0);
    let mut peaks = BTreeMap::new();
    let status = loop {
        for (&r, &pid) in pids.lock().unwrap().iter() {
            if let Some(b) = vm_hwm(pid) {
                let p = peaks.entry(r).or_insert(0);
                *p = (*p).max(b);
            }
        }
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if Instant::now() > deadline {
            // SIGTERM lets mclaunch take its ranks down.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let _ = child.wait();
            panic!("{scenario:?} did not finish by its deadline");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    reader.join().expect("reader");
    let stderr = err_reader.join().expect("stderr reader");
    let stdout = lines.lock().unwrap().clone();
    Run {
        peaks,
        stdout,
        stderr,
        ok: status.success(),
    }
}

fn assert_bounded(what: &str, n: usize, r: &Run) {
    assert!(
        r.ok,
        "{what} failed:\n{}\n{}",
        r.stdout.join("\n"),
        r.stderr
    );
    assert_eq!(r.peaks.len(), n, "{what}: not every rank was sampled");
    let (rank, peak) = r
        .peaks
        .iter()
        .max_by_key(|(_, &b)| b)
        .map(|(&r, &b)| (r, b))
        .unwrap();
    eprintln!(
        "{what}: max peak RSS {:.1} MiB (rank {rank}), ceiling {:.1} MiB",
        peak as f64 / 1048576.0,
        ceiling() as f64 / 1048576.0
    );
    assert!(
        peak < ceiling(),
        "{what}: rank {rank} peaked at {peak} bytes, over the ceiling of {} ({:?})",
        ceiling(),
        r.peaks
    );
}

#[test]
fn a_bcast_loop_stays_under_the_ceiling() {
    let r = run(8, &["bcast-loop", "--bytes", "1000"], &[]);
    assert_bounded("bcast loop of 1000 bytes", 8, &r);
    let done = r.stdout.iter().filter(|l| l.starts_with("DONE")).count();
    assert_eq!(done, 8, "{:?}", r.stdout);
}

#[test]
fn a_flood_to_slow_receivers_stays_under_the_ceiling() {
    let r = run(8, &["flood", "--bytes", "65536", "--sleep-us", "1000"], &[]);
    assert_bounded("multicast flood to receivers sleeping 1 ms", 8, &r);
}

#[test]
fn a_receiver_that_never_receives_stalls_its_source_not_memory() {
    // The source stalls on the idle rank and, after MCAST_TIMEOUT_SECS,
    // gets a Timeout naming it.
    let timeout = (secs() / 4.0).max(2.0);
    let r = run(
        4,
        &["never-recv", "--bytes", "65536", "--idle", "1"],
        &[("MCAST_TIMEOUT_SECS", &timeout.to_string())],
    );
    assert_bounded("multicasts to a rank that never receives", 4, &r);
    let blocked = r
        .stdout
        .iter()
        .find(|l| l.starts_with("BLOCKED rank=0"))
        .unwrap_or_else(|| panic!("the source never stalled: {:?}", r.stdout));
    assert!(
        blocked.contains("rank 1 has not taken"),
        "the stall does not name the idle rank: {blocked}"
    );
}
