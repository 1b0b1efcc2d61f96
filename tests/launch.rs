//! Whole-system tests: real processes through mclaunch, over loopback TCP.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{bin, check_timeline, mclaunch, run_bounded, text};

/// Run `mclaunch -n N [mclaunch options] mcast-selftest [selftest options]`
/// with small packets, and check every rank reported success.
fn run_selftest(n: usize, launch: &[&str], selftest: &[&str], env: &[(&str, &str)]) {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", &n.to_string(), "--timeout", "240"])
        .args(launch)
        .arg(bin("mcast-selftest"))
        .args(selftest)
        .env("MCAST_PACKET_BYTES", "4096")
        .env("MCAST_TIMEOUT_SECS", "60")
        .envs(env.iter().copied());
    let out = run_bounded(cmd, Duration::from_secs(300));
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "n={n} {launch:?} {env:?}: {:?}\nstdout:\n{so}\nstderr:\n{se}",
        out.status
    );
    for r in 0..n {
        assert!(
            so.contains(&format!("rank {r} of {n} ok")),
            "rank {r} missing:\n{so}"
        );
    }
}

/// `mclaunch -n N mcast-selftest` with the given forwarding discipline: every
/// root × algorithm × size {0, 1, P−1, P, P+1, 3P+7, 8 MiB}, random multicast
/// subsets (including the empty set and the source alone) and bursts.
fn selftest(n: usize, forwarding: &str) {
    run_selftest(n, &[], &[], &[("MCAST_FORWARDING", forwarding)]);
}

#[test]
fn selftest_1_fpfs() {
    selftest(1, "fpfs");
}
#[test]
fn selftest_2_fpfs() {
    selftest(2, "fpfs");
}
#[test]
fn selftest_3_fcfs() {
    selftest(3, "fcfs");
}
#[test]
fn selftest_3_fpfs() {
    selftest(3, "fpfs");
}
#[test]
fn selftest_5_fpfs() {
    selftest(5, "fpfs");
}
#[test]
fn selftest_5_fcfs() {
    selftest(5, "fcfs");
}
#[test]
fn selftest_8_fpfs() {
    selftest(8, "fpfs");
}
#[test]
fn selftest_8_fcfs() {
    selftest(8, "fcfs");
}
/// The other transport and the sleeping (no polling) wait path.
#[test]
fn selftest_5_tcp_without_spinning() {
    run_selftest(
        5,
        &[],
        &[],
        &[("MCAST_TRANSPORT", "tcp"), ("MCAST_SPIN_US", "0")],
    );
}
/// `--transport quic` on one host: the links stay Unix sockets and rings,
/// but the rendezvous runs over TLS with the job's CA (every rank presents
/// its certificate; the server accepts nothing else), so the job completing
/// is the TLS rendezvous working end to end.
#[test]
fn selftest_3_quic_on_one_host_meets_over_tls() {
    run_selftest(
        3,
        &["--transport", "quic"],
        &["--sizes", "0,1,P+1,3P+7"],
        &[],
    );
}

/// QUIC between every pair of ranks of one host (`--transport quic-all`):
/// every rank reports QUIC links only.
#[test]
fn selftest_3_quic_all() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "3", "--timeout", "120", "--transport", "quic-all"])
        .arg(bin("mcast-selftest"))
        .env("MCAST_PACKET_BYTES", "4096");
    let out = run_bounded(cmd, Duration::from_secs(180));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{:?}\n{so}\n{se}", out.status);
    for r in 0..3 {
        let line = so
            .lines()
            .find(|l| l.contains(&format!("rank {r} of 3 ok")));
        let line = line.unwrap_or_else(|| panic!("rank {r} missing:\n{so}"));
        assert!(line.ends_with("links quic)"), "{line}");
    }
}

#[test]
fn without_mclaunch_a_program_is_a_single_rank() {
    let mut cmd = Command::new(bin("mcast-selftest"));
    cmd.env_remove("MCAST_RANK")
        .args(["--multicast-rounds", "5"]);
    let out = run_bounded(cmd, Duration::from_secs(60));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{se}");
    assert!(so.contains("rank 0 of 1 ok"), "{so}");
}

#[test]
fn a_crashing_rank_fails_the_job_and_is_named() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "4", "--timeout", "60"])
        .arg(bin("mcast-selftest"))
        .args(["--crash-rank", "2"]);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (_, se) = text(&out);
    assert_eq!(out.status.code(), Some(3), "stderr:\n{se}");
    assert!(se.contains("rank 2"), "stderr does not name rank 2:\n{se}");
}

#[test]
fn mcbench_json_under_mclaunch() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "3", "--timeout", "60"])
        .arg(bin("mcbench"))
        .args([
            "-m",
            "1:8192",
            "-i",
            "5",
            "-x",
            "1",
            "--algo",
            "kbinomial",
            "--json",
        ]);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{se}");
    let v: serde_json::Value = serde_json::from_str(&so).expect("json");
    assert_eq!(v["ranks"], 3);
    assert_eq!(v["algorithm"], "kbinomial");
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 14); // 1, 2, 4, ..., 8192
    for r in rows {
        let (min, avg, max) = (
            r["min_us"].as_f64().unwrap(),
            r["avg_us"].as_f64().unwrap(),
            r["max_us"].as_f64().unwrap(),
        );
        assert!(min <= avg && avg <= max && min >= 0.0, "{r}");
    }
}

/// `mcbench --timeline DIR`: one file per rank, a row per timed iteration
/// and size, and (the ranks share this machine's clock) what a bcast and a
/// barrier promise holds in the rows: no receiver has the data before the
/// root called its bcast, and no rank leaves a barrier before every rank
/// entered it.
#[test]
fn mcbench_timeline_rows_obey_the_barrier() {
    let dir = std::env::temp_dir().join(format!("mcast-timeline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "4", "--timeout", "60"])
        .arg(bin("mcbench"))
        .args([
            "-m",
            "1:4096",
            "-i",
            "50",
            "-x",
            "2",
            "--json",
            "--timeline",
        ])
        .arg(&dir);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (_, se) = text(&out);
    let checked = check_timeline(&dir, 4, 13 * 50);
    let pids: Vec<Option<u32>> = (0..4)
        .map(|rank| {
            let f = std::fs::read_to_string(dir.join(format!("rank-{rank}.pid"))).ok()?;
            f.trim().parse().ok()
        })
        .collect();
    // `bench/timeline.py --sched`, on a scheduler trace made up from these
    // rows: where each rank ran, iteration by iteration.
    // Run before the directory goes, asserted after.
    let layouts = pids
        .iter()
        .all(Option::is_some)
        .then(|| sched_layouts(&dir, &pids.iter().flatten().copied().collect::<Vec<_>>()));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{se}");
    let mut distinct = pids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(
        pids.iter().all(|p| p.is_some_and(|p| p > 0)) && distinct.len() == 4,
        "every rank wrote its own process id: {pids:?}"
    );
    let layouts = layouts
        .expect("pids were read")
        .unwrap_or_else(|e| panic!("timeline.py: {e}"));
    // Iterations 0-24 in the first layout; 25 begins with the second
    // layout's switches while the first's last runs still hold the CPUs
    // (ranks 1 and 3 each on both), so it counts as moved; 26-48 in the
    // second (49 iterations end at the 50th's bcast call).
    let count = |key: &str| {
        layouts
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<usize>().ok())
    };
    for (key, want) in [
        ("CPU 0: 0 1 | CPU 1: 2 3 ", 25),
        ("(a rank moved between CPUs) ", 1),
        ("CPU 0: 0 2 | CPU 1: 1 3 ", 23),
    ] {
        assert_eq!(count(key), Some(want), "{key:?} in\n{layouts}");
    }
    // 13 sizes of 50 iterations.
    checked.unwrap_or_else(|e| panic!("{e}"));
}

/// Write a `perf script` trace of `sched:sched_switch` for the 1-byte rows
/// of the timeline in `dir` (ranks `pids`, by rank): in the first 25
/// iterations ranks 0 and 1 run on CPU 0 and ranks 2 and 3 on CPU 1, then
/// ranks 0 and 2 on CPU 0 and 1 and 3 on CPU 1. Returns what
/// `bench/timeline.py DIR --sched TRACE --size 1` prints, or why it failed
/// (the caller asserts once the directory is removed).
fn sched_layouts(dir: &std::path::Path, pids: &[u32]) -> Result<String, String> {
    let root = std::fs::read_to_string(dir.join("rank-0.tsv")).unwrap_or_default();
    let mut trace = String::new();
    for l in root.lines().skip(1) {
        let v: Vec<u64> = l.split('\t').filter_map(|x| x.parse().ok()).collect();
        if v.len() != 6 || v[0] != 1 {
            continue;
        }
        let on: [[usize; 2]; 2] = if v[1] < 25 {
            [[0, 1], [2, 3]]
        } else {
            [[0, 2], [1, 3]]
        };
        for (cpu, ranks) in on.iter().enumerate() {
            for (k, &r) in ranks.iter().enumerate() {
                let t = v[2] + 100 * (k as u64 + 1);
                trace += &format!(
                    "  mcbench [{cpu:03}] {}.{:09}: sched:sched_switch: prev_comm=x prev_pid=1 \
                     prev_prio=120 prev_state=R ==> next_comm=mcbench next_pid={} next_prio=120\n",
                    t / 1_000_000_000,
                    t % 1_000_000_000,
                    pids[r]
                );
            }
        }
    }
    let path = dir.join("sched.txt");
    std::fs::write(&path, trace).map_err(|e| format!("writing the trace: {e}"))?;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/timeline.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .arg(dir)
        .arg("--sched")
        .arg(&path)
        .args(["--size", "1"]);
    let out = run_bounded(cmd, Duration::from_secs(60));
    let (so, se) = text(&out);
    if !out.status.success() {
        return Err(se);
    }
    Ok(so)
}

/// Two ranks of one host hold the barrier as an exchange of flags: each
/// stores its arrival in the other's segment and waits for the other's. A
/// rank that leaves first may store its next arrival over this one before
/// the other has looked; a wait for exactly this barrier's number then
/// never ends (it did, within 4,000 barriers, while this was written).
#[test]
fn two_ranks_hold_many_barriers_in_a_row() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "2", "--timeout", "60"])
        .args(["-x", "MCAST_TIMEOUT_SECS=10"])
        .arg(bin("mcbench"))
        .args(["-m", "1:1", "-i", "100000", "-x", "0", "--json"]);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{se}");
    let v: serde_json::Value = serde_json::from_str(&so).expect("json");
    assert_eq!(v["links"], "ring", "{so}");
}

/// On one host the barrier runs on flags in shared memory. With more ranks
/// than cores and no spinning (`MCAST_SPIN_US=0`), every barrier has
/// ranks asleep when the last one arrives; its bell must wake them. A poll
/// that saw the bell but took no packet once counted as nothing, and the
/// rank slept a whole nap (50 ms) before it looked at its flags: 54 ms per
/// iteration here, where a woken rank takes about 30 µs.
#[test]
fn barrier_flags_wake_sleeping_ranks() {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let n = (cores + 2).clamp(4, 9);
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", &n.to_string(), "--timeout", "60"])
        .args(["-x", "MCAST_SPIN_US=0"])
        .arg(bin("mcbench"))
        .args(["-m", "1:1", "-i", "40", "-x", "2", "--json"]);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{se}");
    let v: serde_json::Value = serde_json::from_str(&so).expect("json");
    assert_eq!(v["links"], "ring", "{so}");
    let cycle = v["results"][0]["cycle_us"].as_f64().unwrap();
    assert!(cycle < 10_000.0, "{cycle} µs per bcast + barrier: {so}");
}

/// `--throughput` sends far more than the flow-control budget lets a peer
/// have in flight (here 1 MiB over 2 peers: 8 messages of 64 KiB each),
/// and still ends: it must receive while it sends (it once sent everything
/// first, and every rank then waited on a rank that was sending).
#[test]
fn mcbench_throughput_beyond_the_flow_budget() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "3", "--timeout", "60"])
        .arg(bin("mcbench"))
        .args(["--throughput", "-m", "65536", "-i", "40", "--json"])
        .env("MCAST_FLOW_BYTES", "1048576")
        .env("MCAST_TIMEOUT_SECS", "20");
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{se}");
    let v: serde_json::Value = serde_json::from_str(&so).expect("json");
    assert_eq!(
        (v["ranks"].as_u64(), v["messages_per_rank"].as_u64()),
        (Some(3), Some(40))
    );
    assert!(v["bytes_per_s"].as_f64().unwrap() > 0.0, "{v}");
}

#[test]
fn mcbench_launches_itself_and_prints_the_osu_table() {
    let mut cmd = Command::new(bin("mcbench"));
    cmd.env_remove("MCAST_RANK").args([
        "-n",
        "2",
        "-m",
        "4:64",
        "-i",
        "3",
        "-x",
        "1",
        "--algo",
        "chain",
        "--forwarding",
        "fcfs",
    ]);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{se}");
    assert!(
        so.contains(
            "# Size       Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations"
        ),
        "{so}"
    );
    assert!(so.contains("forwarding: fcfs"), "{so}");
    let sizes: Vec<&str> = so
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(sizes, ["4", "8", "16", "32", "64"]);
}

/// `mcbench --coll X` for every X at 3 ranks, tiny sizes: the table (OSU
/// columns) and the JSON both parse, with the sizes each collective keeps
/// (f32 for the reductions: sizes below one element per block skipped).
#[test]
fn mcbench_measures_every_collective() {
    let colls: &[(&str, &[u64])] = &[
        ("allreduce", &[4, 8, 16]),
        ("reduce", &[4, 8, 16]),
        ("gather", &[1, 2, 4, 8, 16]),
        ("scatter", &[1, 2, 4, 8, 16]),
        ("allgather", &[1, 2, 4, 8, 16]),
        ("alltoall", &[1, 2, 4, 8, 16]),
        ("reduce_scatter", &[16]),
        ("scan", &[4, 8, 16]),
        ("latency", &[1, 2, 4, 8, 16]),
    ];
    for &(coll, sizes) in colls {
        let run = |json: bool| {
            let mut cmd = Command::new(mclaunch());
            cmd.args(["-n", "3", "--timeout", "60"])
                .arg(bin("mcbench"))
                .args(["--coll", coll, "-m", "1:16", "-i", "3", "-x", "1"]);
            if json {
                cmd.arg("--json");
            }
            let out = run_bounded(cmd, Duration::from_secs(90));
            let (so, se) = text(&out);
            assert!(out.status.success(), "{coll}: {se}");
            so
        };
        let v: serde_json::Value = serde_json::from_str(&run(true)).expect("json");
        assert_eq!(v["benchmark"], coll);
        assert_eq!(v["ranks"], 3);
        let rows = v["results"].as_array().unwrap();
        let got: Vec<u64> = rows.iter().map(|r| r["size"].as_u64().unwrap()).collect();
        assert_eq!(got, sizes, "{coll}");
        for r in rows {
            let (min, avg, max) = (
                r["min_us"].as_f64().unwrap(),
                r["avg_us"].as_f64().unwrap(),
                r["max_us"].as_f64().unwrap(),
            );
            assert!(min <= avg && avg <= max && min > 0.0, "{coll}: {r}");
        }
        let so = run(false);
        assert!(so.contains(&format!("(osu_{coll} method")), "{so}");
        let cols = if coll == "latency" { 2 } else { 5 };
        let mut got = Vec::new();
        for l in so.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), cols, "{coll}: {l}");
            got.push(f[0].parse::<u64>().unwrap());
            for x in &f[1..] {
                x.parse::<f64>().unwrap();
            }
        }
        assert_eq!(got, sizes, "{coll}:\n{so}");
    }
}

/// Topology-aware trees under `mclaunch --topology`: every root, every chain
/// and topology algorithm, edge-case sizes (without the 8 MiB case, to keep 16
/// ranks on two cores quick), multicast subsets and bursts.
fn topology_selftest(n: usize, topology: &str) {
    run_selftest(
        n,
        &["--topology", topology],
        &["--sizes", "0,1,P-1,P,P+1,3P+7,100000"],
        &[],
    );
}

#[test]
fn topology_hypercube_3_with_8_ranks() {
    topology_selftest(8, "hypercube:3");
}

#[test]
fn topology_torus_4x4_with_16_ranks() {
    topology_selftest(16, "torus:4x4");
}

#[test]
fn topology_algorithm_without_a_topology_is_refused() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "2", "--timeout", "60"])
        .arg(bin("mcast-selftest"))
        .args(["--algos", "utorus", "--multicast-rounds", "0"]);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (_, se) = text(&out);
    assert!(!out.status.success());
    assert!(se.contains("needs a topology"), "{se}");
}

/// A root whose peers are all behind TCP lends its buffer to the sockets
/// for the length of a bcast or a multicast (`net::lend`) and takes back, by copying,
/// what they have not taken when the call returns. A flat tree over 4
/// ranks puts 3 × 4 MiB into the sockets at once, more than they hold, and
/// mcbench's root refills its buffer with the next iteration's bytes right
/// after each call: a receiver that got any of them in the old message
/// fails its check (and a packet still pointing into the buffer stops the
/// root).
#[test]
fn a_root_lends_its_buffer_to_tcp_and_reuses_it_at_once() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "4", "--timeout", "120"])
        .arg(bin("mcbench"))
        .args(["-m", "65536:4194304", "-i", "8", "-x", "1", "--json"])
        .env("MCAST_TRANSPORT", "tcp")
        .env("MCAST_ALGORITHM", "flat");
    let out = run_bounded(cmd, Duration::from_secs(180));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{se}");
    let v: serde_json::Value = serde_json::from_str(&so).expect("json");
    assert_eq!(v["links"], "tcp", "{so}");
    assert_eq!(v["results"].as_array().map(Vec::len), Some(7), "{so}");
    // Multicast sources lend too: every rank sends 1 MiB multicasts to a
    // peer while it receives, each received one checked.
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "4", "--timeout", "120"])
        .arg(bin("mcbench"))
        .args(["--throughput", "-m", "1048576", "-i", "20", "--json"])
        .env("MCAST_TRANSPORT", "tcp");
    let out = run_bounded(cmd, Duration::from_secs(180));
    let (_, se) = text(&out);
    assert!(out.status.success(), "{se}");
}
