//! mclaunch end to end: exit statuses, environment, output, timeouts, signals.
//! Ranks are small shell scripts; every wait is bounded.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::process::ExitStatusExt;

use common::*;

#[test]
fn help_describes_the_options() {
    let out = run(mclaunch().arg("--help"));
    assert!(out.status.success(), "{out:?}");
    for needle in [
        "-n, --np",
        "--timeout",
        "--rendezvous-timeout",
        "--tag-output",
        "-x, --export",
        "MCAST_RENDEZVOUS_TIMEOUT_SECS",
        "Exit status",
    ] {
        assert!(
            out.stdout.contains(needle),
            "--help lacks {needle:?}:\n{}",
            out.stdout
        );
    }
}

#[test]
fn all_ranks_succeed() {
    let out = run(mclaunch().args(["-n", "3", "sh", "-c", "exit 0"]));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Nothing but, on a machine of fewer than 3 cores, the warning.
    assert!(
        out.stderr.lines().all(|l| l.contains("oversubscribed")),
        "{out:?}"
    );
}

#[test]
fn oversubscription_is_warned_in_one_line() {
    let cores = std::thread::available_parallelism().unwrap().get();
    let n = (cores + 1).to_string();
    let out = run(mclaunch().args(["-n", &n, "sh", "-c", "exit 0"]));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(
        out.stderr.starts_with(&format!(
            "mclaunch: warning: {n} ranks on {cores} cores: the ranks are oversubscribed"
        )),
        "{out:?}"
    );
    let out = run(mclaunch().args(["-n", "1", "sh", "-c", "exit 0"]));
    assert_eq!(out.stderr, "", "{out:?}");
}

#[test]
fn env_vars_are_set_and_ranks_distinct() {
    let out = run(mclaunch().args([
        "-n",
        "4",
        "sh",
        "-c",
        r#"echo "$MCAST_RANK $MCAST_SIZE $MCAST_RENDEZVOUS $MCAST_TOKEN""#,
    ]));
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<Vec<&str>> = out.stdout.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(lines.len(), 4, "{out:?}");
    let ranks: BTreeSet<&str> = lines.iter().map(|l| l[0]).collect();
    assert_eq!(ranks, BTreeSet::from(["0", "1", "2", "3"]));
    for l in &lines {
        assert_eq!(l.len(), 4, "{l:?}");
        assert_eq!(l[1], "4");
        assert!(l[2].starts_with("127.0.0.1:"), "{l:?}");
        assert_ne!(l[2], "127.0.0.1:0");
        assert_eq!(l[2], lines[0][2], "one rendezvous for all");
        assert_eq!(l[3].len(), 32, "128-bit hex token: {l:?}");
        assert!(l[3].bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(l[3], lines[0][3], "one token per job");
    }
    // A new job gets a new token.
    let again = run(mclaunch().args(["-n", "1", "sh", "-c", r#"echo "$MCAST_TOKEN""#]));
    assert_ne!(again.stdout.trim(), lines[0][3]);
}

#[test]
fn failing_rank_stops_the_job_with_its_status() {
    let dir = scratch("exit7");
    // Rank 2 fails once every rank has recorded its pid; the others sleep.
    let script = format!(
        r#"{RECORD_PID}
        if [ "$MCAST_RANK" = 2 ]; then
            i=0
            while [ "$(ls "$D" | grep -c '\.pid$')" -lt 4 ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
            exit 7
        fi
        sleep 30"#
    );
    let out = run(mclaunch()
        .args(["-n", "4", "-x"])
        .arg(format!("D={}", dir.display()))
        .args(["sh", "-c", &script]));
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert!(
        out.stderr.contains("mclaunch: rank 2 (pid ")
            && out.stderr.contains(") exited with status 7"),
        "{out:?}"
    );
    assert!(out.elapsed < PROMPT, "took {:?}", out.elapsed);
    let pids = wait_for_pid_files(&dir, 4, LIMIT);
    assert_all_gone(&pids, PROMPT);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn killed_rank_reports_the_signal() {
    let out = run(mclaunch().args([
        "-n",
        "3",
        "sh",
        "-c",
        r#"if [ "$MCAST_RANK" = 1 ]; then echo "pid=$$"; kill -9 $$; fi; exec sleep 30"#,
    ]));
    assert_eq!(out.status.code(), Some(128 + 9), "{out:?}");
    let pid = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .expect("rank 1 printed its pid")
        .trim()
        .to_string();
    assert!(
        out.stderr.contains(&format!(
            "mclaunch: rank 1 (pid {pid}) was killed by signal 9 (SIGKILL)"
        )),
        "{out:?}"
    );
    assert!(out.elapsed < PROMPT, "took {:?}", out.elapsed);
}

#[test]
fn tag_output_prefixes_every_line() {
    let out = run(mclaunch().args([
        "-n",
        "2",
        "--tag-output",
        "sh",
        "-c",
        r#"echo "out$MCAST_RANK"; echo "two words"; echo "err$MCAST_RANK" >&2; printf "last$MCAST_RANK""#,
    ]));
    assert!(out.status.success(), "{out:?}");
    let stdout: BTreeSet<&str> = out.stdout.lines().collect();
    assert_eq!(
        stdout,
        BTreeSet::from([
            "[0] out0",
            "[0] two words",
            "[0] last0",
            "[1] out1",
            "[1] two words",
            "[1] last1"
        ]),
        "{out:?}"
    );
    assert_eq!(out.stdout.lines().count(), 6);
    assert!(out.stdout.ends_with('\n'));
    let stderr: BTreeSet<&str> = out.stderr.lines().collect();
    assert_eq!(stderr, BTreeSet::from(["[0] err0", "[1] err1"]), "{out:?}");
}

#[test]
fn without_tag_output_ranks_write_directly() {
    let out = run(mclaunch().args(["-n", "2", "sh", "-c", "printf x; printf y >&2"]));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "xx");
    assert_eq!(out.stderr, "yy");
}

#[test]
fn export_sets_and_copies_variables() {
    let out = run(mclaunch().env("MCLAUNCH_TEST_COPY", "copied").args([
        "-n",
        "2",
        "-x",
        "MCLAUNCH_TEST_COPY",
        "-x",
        "MCLAUNCH_TEST_SET=a=b c",
        "sh",
        "-c",
        r#"echo "$MCLAUNCH_TEST_COPY|$MCLAUNCH_TEST_SET""#,
    ]));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "copied|a=b c\ncopied|a=b c\n");

    let unset = run(mclaunch().env_remove("MCLAUNCH_TEST_UNSET").args([
        "-n",
        "2",
        "-x",
        "MCLAUNCH_TEST_UNSET",
        "sh",
        "-c",
        "echo ran",
    ]));
    assert_eq!(unset.status.code(), Some(2), "{unset:?}");
    assert!(unset.stderr.contains("MCLAUNCH_TEST_UNSET"), "{unset:?}");
    assert_eq!(unset.stdout, "", "no rank may start");

    let reserved = run(mclaunch().args(["-n", "1", "-x", "MCAST_RANK=5", "true"]));
    assert_eq!(reserved.status.code(), Some(2), "{reserved:?}");
}

#[test]
fn timeout_kills_the_job() {
    let dir = scratch("timeout");
    let out = run(mclaunch()
        .args(["-n", "2", "--timeout", "1", "-x"])
        .arg(format!("D={}", dir.display()))
        .args(["sh", "-c", &format!("{RECORD_PID}; exec sleep 30")]));
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    assert!(
        out.stderr.contains("timed out after 1 s") && out.stderr.contains("ranks 0, 1"),
        "{out:?}"
    );
    assert!(out.elapsed < PROMPT, "took {:?}", out.elapsed);
    let pids = wait_for_pid_files(&dir, 2, LIMIT);
    assert_all_gone(&pids, PROMPT);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn missing_program_exits_127() {
    let out = run(mclaunch().args(["-n", "2", "/nonexistent/mclaunch-test-program"]));
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    assert!(out.stderr.contains("cannot start rank 0"), "{out:?}");
}

/// Signal mclaunch once every rank (a shell with a background `sleep`) is up,
/// and check it exits 128+signal leaving no process behind.
fn signal_leaves_no_orphans(signal: i32, name: &str) {
    let dir = scratch(name);
    let job = start(
        mclaunch()
            .args(["-n", "3", "-x"])
            .arg(format!("D={}", dir.display()))
            .args(["sh", "-c", &format!("sleep 30 & {RECORD_PIDS}; wait")]),
    );
    let pids = wait_for_pid_files(&dir, 3, LIMIT);
    assert_eq!(pids.len(), 6);
    job.signal(signal);
    let out = job.finish(PROMPT);
    assert_eq!(out.status.code(), Some(128 + signal), "{out:?}");
    assert!(
        out.stderr.contains(&format!("received signal {signal}")),
        "{out:?}"
    );
    assert_all_gone(&pids, PROMPT);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_to_mclaunch_leaves_no_orphans() {
    signal_leaves_no_orphans(libc::SIGTERM, "sigterm");
}

#[test]
fn sigint_to_mclaunch_leaves_no_orphans() {
    signal_leaves_no_orphans(libc::SIGINT, "sigint");
}

#[test]
fn sigkill_to_mclaunch_kills_the_ranks() {
    let dir = scratch("sigkill");
    let job = start(
        mclaunch()
            .args(["-n", "3", "-x"])
            .arg(format!("D={}", dir.display()))
            .args(["sh", "-c", &format!("{RECORD_PID}; exec sleep 30")]),
    );
    let pids = wait_for_pid_files(&dir, 3, LIMIT);
    job.signal(libc::SIGKILL);
    let out = job.finish(PROMPT);
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{out:?}");
    assert_all_gone(&pids, PROMPT);
    let _ = fs::remove_dir_all(&dir);
}

/// The live processes whose environment holds `var_eq` (`NAME=value`).
fn marked(var_eq: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = fs::read(e.path().join("environ")) else {
            continue; // gone, or not ours
        };
        if env.split(|&b| b == 0).any(|kv| kv == var_eq.as_bytes()) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn sigkill_to_mclaunch_kills_programs_behind_wrappers() {
    // Each rank is `sh`, which runs `sleep` as its child (not exec): the
    // sleeps are not mclaunch's children and get no parent-death signal.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mark = format!("MCLAUNCH_TEST_MARK={}-{nanos}", std::process::id());
    let job = start(mclaunch().args([
        "-n",
        "8",
        "-x",
        &mark,
        "sh",
        "-c",
        "sleep 300; echo wrapped",
    ]));
    let end = std::time::Instant::now() + LIMIT;
    let sleeps = |pids: &[i32]| {
        pids.iter()
            .filter(|p| {
                fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
            })
            .count()
    };
    while sleeps(&marked(&mark)) < 8 {
        assert!(std::time::Instant::now() < end, "the ranks did not start");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    job.signal(libc::SIGKILL);
    // Look for survivors before collecting mclaunch's output: a survivor
    // would hold its stdout open.
    let end = std::time::Instant::now() + PROMPT;
    loop {
        let left = marked(&mark);
        if left.is_empty() {
            break;
        }
        if std::time::Instant::now() >= end {
            for p in &left {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(*p, libc::SIGKILL) };
            }
            panic!("processes {left:?} outlived mclaunch");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = job.finish(PROMPT);
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{out:?}");
}

#[test]
fn ranks_ignoring_sigterm_are_killed_after_the_grace_period() {
    let dir = scratch("stubborn");
    // Ranks 1 and 2 ignore SIGTERM; rank 0 fails once all have recorded pids.
    let script = format!(
        r#"{RECORD_PID}
        if [ "$MCAST_RANK" = 0 ]; then
            i=0
            while [ "$(ls "$D" | grep -c '\.pid$')" -lt 3 ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
            exit 1
        fi
        trap '' TERM
        exec sleep 30"#
    );
    let out = run(mclaunch()
        .args(["-n", "3", "-x"])
        .arg(format!("D={}", dir.display()))
        .args(["sh", "-c", &script]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("rank 0 (pid ") && out.stderr.contains(") exited with status 1"),
        "{out:?}"
    );
    assert!(out.elapsed < PROMPT, "took {:?}", out.elapsed);
    let pids = wait_for_pid_files(&dir, 3, LIMIT);
    assert_all_gone(&pids, PROMPT);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn on_failure_continue_lets_the_survivors_finish() {
    let dir = scratch("continue");
    // Rank 1 fails at once; the others wait until it is gone, give mclaunch
    // a second in which it must NOT stop them, then finish cleanly.
    let script = r#"
        if [ "$MCAST_RANK" = 1 ]; then echo "$$" > "$D/dead.pid"; exit 3; fi
        i=0
        while [ ! -s "$D/dead.pid" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
        while kill -0 "$(cat "$D/dead.pid")" 2>/dev/null && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
        sleep 1
        echo "rank $MCAST_RANK survived""#;
    let out = run(mclaunch()
        .args(["-n", "3", "--on-failure", "continue", "-x"])
        .arg(format!("D={}", dir.display()))
        .args(["sh", "-c", script]));
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let pid = fs::read_to_string(dir.join("dead.pid")).unwrap();
    assert!(
        out.stderr.contains(&format!(
            "mclaunch: rank 1 (pid {}) exited with status 3",
            pid.trim()
        )),
        "{out:?}"
    );
    assert!(out.stderr.contains("the other ranks run on"), "{out:?}");
    for r in [0, 2] {
        assert!(
            out.stdout.contains(&format!("rank {r} survived")),
            "{out:?}"
        );
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn on_failure_rejects_unknown_modes() {
    let out = run(mclaunch().args(["-n", "1", "--on-failure", "retry", "true"]));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `--bind-to core` puts rank r on the r-th CPU mclaunch may use (round
/// robin); without it every rank may run wherever mclaunch may.
#[test]
fn bind_to_core_gives_each_rank_a_cpu_in_turn() {
    let allowed = mclaunch::bind::allowed_cpus();
    let script = "echo $MCAST_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)";
    let lists = |bind: &str| -> Vec<(usize, String)> {
        let out = run(mclaunch().args(["-n", "3", "--bind-to", bind, "sh", "-c", script]));
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let mut v: Vec<(usize, String)> = out
            .stdout
            .lines()
            .map(|l| {
                let (r, cpus) = l.split_once(' ').expect("rank and list");
                (r.parse().expect("rank"), cpus.to_string())
            })
            .collect();
        v.sort();
        v
    };
    let bound = lists("core");
    assert_eq!(bound.len(), 3, "{bound:?}");
    for (r, cpus) in &bound {
        assert_eq!(cpus, &allowed[r % allowed.len()].to_string(), "{bound:?}");
    }
    let free = lists("none");
    let ours = std::fs::read_to_string("/proc/self/status").unwrap();
    let ours = ours
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    assert!(free.iter().all(|(_, c)| *c == ours), "{free:?} vs {ours}");
    let out = run(mclaunch().args(["-n", "1", "--bind-to", "socket", "true"]));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stderr.contains("none or core"), "{out:?}");
    // MCAST_BIND_TO stands in for the option; the option wins.
    let env_cpus = |val: &str, opt: &[&str]| {
        let out = run(mclaunch()
            .env("MCAST_BIND_TO", val)
            .args(["-n", "1"])
            .args(opt)
            .args(["sh", "-c", script]));
        (out.status.code(), out.stdout, out.stderr)
    };
    let (code, so, _) = env_cpus("core", &[]);
    assert_eq!(
        (code, so.trim()),
        (Some(0), format!("0 {}", allowed[0]).as_str())
    );
    let (code, so, _) = env_cpus("core", &["--bind-to", "none"]);
    assert_eq!((code, so.trim()), (Some(0), format!("0 {ours}").as_str()));
    let (code, _, se) = env_cpus("socket", &[]);
    assert_eq!(code, Some(2), "{se}");
    assert!(
        se.contains("MCAST_BIND_TO") && se.contains("none or core"),
        "{se}"
    );
}
