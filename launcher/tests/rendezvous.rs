//! The rendezvous, end to end, with `examples/rank_probe.rs` as the rank.

mod common;

use std::collections::BTreeSet;

use common::*;

#[test]
fn rendezvous_hands_out_the_table() {
    let out = run(mclaunch().arg("-n").arg("3").arg(rank_probe()));
    assert!(out.status.success(), "{out:?}");
    let lines: BTreeSet<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{out:?}");
    let mut jobs = BTreeSet::new();
    for rank in 0..3 {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("rank {rank}: table ")))
            .unwrap_or_else(|| panic!("no table for rank {rank}: {out:?}"));
        assert!(
            line.ends_with(" addrs=127.0.0.1:1000,127.0.0.1:1001,127.0.0.1:1002"),
            "{line}"
        );
        jobs.insert(line.split_whitespace().nth(3).unwrap().to_string());
    }
    assert_eq!(jobs.len(), 1, "every rank sees the same job id: {jobs:?}");
}

#[test]
fn rendezvous_deadline_names_the_missing_rank() {
    let out = run(mclaunch()
        .args(["-n", "3", "--rendezvous-timeout", "1"])
        .arg(rank_probe())
        .args(["--skip", "1"]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("mclaunch: rendezvous failed: rank 1 did not join"),
        "{out:?}"
    );
    assert!(out.elapsed < PROMPT, "took {:?}", out.elapsed);
}

#[test]
fn rendezvous_deadline_from_the_environment() {
    let out = run(mclaunch()
        .env("MCAST_RENDEZVOUS_TIMEOUT_SECS", "0.5")
        .args(["-n", "4"])
        .arg(rank_probe())
        .args(["--skip", "1", "--skip", "3"]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stderr.contains("ranks 1, 3 did not join"), "{out:?}");
    assert!(out.elapsed < PROMPT, "took {:?}", out.elapsed);
}

#[test]
fn rendezvous_deadline_spares_programs_that_never_join() {
    // Nobody says hello, so no rendezvous deadline applies.
    let out = run(mclaunch()
        .env("MCAST_RENDEZVOUS_TIMEOUT_SECS", "0.1")
        .args(["-n", "2", "sh", "-c", "sleep 0.5"]));
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn rank_exiting_before_joining_fails_the_rendezvous_at_once() {
    let out = run(mclaunch().args(["-n", "3"]).arg(rank_probe()).args([
        "--skip",
        "1",
        "--skip-action",
        "exit",
    ]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("rank 1 exited with status 0 before joining the rendezvous"),
        "{out:?}"
    );
    assert!(out.elapsed < PROMPT, "took {:?}", out.elapsed);
}

#[test]
fn wrong_token_is_refused_and_the_job_still_succeeds() {
    let out = run(mclaunch()
        .args(["-n", "3"])
        .arg(rank_probe())
        .arg("--stray"));
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.contains("stray rejected"), "{out:?}");
    assert!(out.stderr.contains("wrong job token"), "{out:?}");
    assert_eq!(out.stdout.matches(": table ").count(), 3, "{out:?}");
}
