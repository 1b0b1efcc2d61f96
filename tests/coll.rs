//! The data collectives and point-to-point, end to end: `mcast-colltest`
//! under mclaunch at 1, 2, 3, 5 and 8 ranks (every collective, root, size
//! class, element type and operator against a local computation), plus
//! mismatches, a lost rank and a receiver that never receives.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{bin, mclaunch, run_bounded, text};

/// `mclaunch -n N [launch] mcast-colltest [args]` with 4 KiB packets;
/// returns (exit code, stdout, stderr).
fn colltest(
    n: usize,
    launch: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", &n.to_string(), "--timeout", "120"])
        .args(launch)
        .arg(bin("mcast-colltest"))
        .args(args)
        .env("MCAST_PACKET_BYTES", "4096")
        .env("MCAST_TIMEOUT_SECS", "30")
        .envs(env.iter().copied());
    let out = run_bounded(cmd, Duration::from_secs(180));
    let (so, se) = text(&out);
    (out.status.code().unwrap_or(-1), so, se)
}

fn all_ok(n: usize, args: &[&str]) -> String {
    let (code, so, se) = colltest(n, &[], args, &[]);
    assert_eq!(code, 0, "n={n} {args:?}\nstdout:\n{so}\nstderr:\n{se}");
    for r in 0..n {
        assert!(
            so.contains(&format!("rank {r} of {n} ok")),
            "rank {r} missing:\n{so}\n{se}"
        );
    }
    so
}

#[test]
fn collectives_1() {
    all_ok(1, &[]);
}
#[test]
fn collectives_2() {
    all_ok(2, &[]);
}
#[test]
fn collectives_3() {
    all_ok(3, &[]);
}
#[test]
fn collectives_5() {
    all_ok(5, &[]);
}
#[test]
fn collectives_8() {
    all_ok(8, &[]);
}

#[test]
fn mismatches_fail_every_rank() {
    for (n, kind) in [
        (2, "op"),
        (3, "count"),
        (3, "type"),
        (3, "root"),
        (5, "root"),
        (3, "collective"),
        (3, "algorithm"),
        (4, "algorithm"),
        (3, "barrier"),
        (4, "barrier"),
    ] {
        let so = all_ok(n, &["--mismatch", kind]);
        assert_eq!(so.matches("mismatch ok").count(), n, "{kind}:\n{so}");
    }
}

#[test]
fn a_dead_rank_fails_allreduce_with_its_name() {
    let (code, so, se) = colltest(
        4,
        &["--on-failure", "continue"],
        &["--crash-rank", "2"],
        &[],
    );
    assert_eq!(code, 3, "stdout:\n{so}\nstderr:\n{se}");
    for r in [0, 1, 3] {
        assert!(
            so.contains(&format!("rank {r} of 4 ok: allreduce lost rank 2")),
            "{so}\n{se}"
        );
    }
}

/// On one host the barrier runs on flags in shared memory, not messages:
/// a rank that dies before it arrives is still named, whether it is the
/// rank that releases the others (0) or one that the others wait for;
/// between two ranks (the exchange of flags), whichever dies.
#[test]
fn a_dead_rank_fails_the_barrier_with_its_name() {
    for (n, dead) in [(4, 2), (4, 0), (2, 1), (2, 0)] {
        let d = dead.to_string();
        let (code, so, se) = colltest(
            n,
            &["--on-failure", "continue"],
            &["--crash-rank", &d, "--crash-in", "barrier"],
            &[],
        );
        assert_eq!(code, 3, "stdout:\n{so}\nstderr:\n{se}");
        for r in (0..n).filter(|&r| r != dead) {
            assert!(
                so.contains(&format!("rank {r} of {n} ok: barrier lost rank {dead}")),
                "{so}\n{se}"
            );
        }
    }
}

#[test]
fn a_receiver_that_never_receives_stalls_its_sender() {
    let env = [("MCAST_TIMEOUT_SECS", "2"), ("MCAST_FLOW_BYTES", "1000000")];
    let (code, so, se) = colltest(2, &[], &["--stall"], &env);
    assert_eq!(code, 0, "stdout:\n{so}\nstderr:\n{se}");
    assert!(
        so.contains("rank 0 stalled ok: rank 1 has not taken"),
        "{so}"
    );
}

/// Through an emulated fabric (`mclaunch --fabric`): point-to-point and
/// collective messages cross the switch emulator like any packet.
#[test]
fn collectives_through_a_fabric() {
    let (code, so, se) = colltest(4, &["--fabric", "crossbar:4"], &["--big", "1048576"], &[]);
    assert_eq!(code, 0, "stdout:\n{so}\nstderr:\n{se}");
    assert_eq!(so.matches(" of 4 ok").count(), 4, "{so}\n{se}");
}

/// The other transport and the sleeping (no polling) wait path.
#[test]
fn collectives_5_tcp_without_spinning() {
    let env = [("MCAST_TRANSPORT", "tcp"), ("MCAST_SPIN_US", "0")];
    let (code, so, se) = colltest(5, &[], &[], &env);
    assert_eq!(code, 0, "stdout:\n{so}\nstderr:\n{se}");
    assert_eq!(so.matches(" of 5 ok").count(), 5, "{so}\n{se}");
}

/// Every collective with allgather's, alltoall's and gather/scatter's
/// algorithms forced (`MCAST_ALLGATHER`, `MCAST_ALLTOALL`, `MCAST_GATHER`),
/// at power-of-two rank counts and at others (where doubling falls back to
/// the ring).
#[test]
fn forced_data_movement_algorithms() {
    for (n, ag, a2a, gather) in [
        (8, "ring", "pairwise", "linear"),
        (8, "doubling", "bruck", "binomial"),
        (5, "multicast", "bruck", "binomial"),
        (3, "multicast", "pairwise", "linear"),
    ] {
        let env = [
            ("MCAST_ALLGATHER", ag),
            ("MCAST_ALLTOALL", a2a),
            ("MCAST_GATHER", gather),
        ];
        let (code, so, se) = colltest(n, &[], &[], &env);
        assert_eq!(
            code, 0,
            "n={n} {ag} {a2a} {gather}\nstdout:\n{so}\nstderr:\n{se}"
        );
        assert_eq!(so.matches(&format!("of {n} ok")).count(), n, "{so}\n{se}");
    }
}

/// Everything again on sub-communicators (`--split`: the even and the odd
/// world ranks, each in reverse order), at 5 ranks (sub-communicators of 3
/// and 2) and 8 (4 and 4); a mismatch on them; and a dead rank, which fails
/// its own sub-communicator's allreduce only.
#[test]
fn collectives_on_sub_communicators() {
    for n in [5, 8] {
        all_ok(n, &["--split", "--big", "1048576"]);
    }
    let so = all_ok(5, &["--split", "--mismatch", "op"]);
    assert_eq!(so.matches("mismatch ok").count(), 5, "{so}");
    let (code, so, se) = colltest(
        4,
        &["--on-failure", "continue"],
        &["--split", "--crash-rank", "2"],
        &[],
    );
    assert_eq!(code, 3, "stdout:\n{so}\nstderr:\n{se}");
    assert!(
        so.contains("rank 0 of 4 ok: allreduce lost rank 2"),
        "{so}\n{se}"
    );
    for r in [1, 3] {
        assert!(
            so.contains(&format!("rank {r} of 4 ok: allreduce without rank 2")),
            "{so}\n{se}"
        );
    }
}

/// colltest's allreduce checks (every element type and operator, sizes 0,
/// 1, odd, a packet ± 1 and 8 MiB, each in the forced algorithm's
/// documented order, and the f64 bits gathered and compared across ranks)
/// under each allreduce algorithm forced (`MCAST_ALLREDUCE`), at a rank
/// count that folds to a power of two and at one that does not.
#[test]
fn forced_allreduce_algorithms() {
    for algo in ["doubling", "rabenseifner", "ring", "reduce_bcast"] {
        for n in [5, 8] {
            let env = [("MCAST_ALLREDUCE", algo)];
            let (code, so, se) = colltest(n, &[], &["--allreduce-only"], &env);
            assert_eq!(code, 0, "n={n} {algo}\nstdout:\n{so}\nstderr:\n{se}");
            assert_eq!(so.matches(&format!("of {n} ok")).count(), n, "{so}\n{se}");
        }
    }
}
