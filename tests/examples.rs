//! Every program in `examples/` runs under `mclaunch -n 4`, exits 0 and
//! prints one line per rank.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{bin, mclaunch, run_bounded, text};

const EXAMPLES: &[&str] = &[
    "allreduce",
    "reduce",
    "gather",
    "scatter",
    "allgather",
    "alltoall",
    "reduce_scatter",
    "scan",
    "send_recv",
    "bcast",
    "multicast",
    "split",
    "nonblocking",
];

#[test]
fn every_example_runs_under_mclaunch() {
    let dir = bin("mcbench").with_file_name("examples");
    for name in EXAMPLES {
        let exe = dir.join(name);
        assert!(
            exe.exists(),
            "{} is missing: `cargo test` builds the examples (or run `cargo build --examples`)",
            exe.display()
        );
        let mut cmd = Command::new(mclaunch());
        cmd.args(["-n", "4", "--timeout", "60"]).arg(&exe);
        let out = run_bounded(cmd, Duration::from_secs(90));
        let (so, se) = text(&out);
        assert!(out.status.success(), "{name}: stdout:\n{so}\nstderr:\n{se}");
        assert_eq!(so.lines().count(), 4, "{name}: one line per rank:\n{so}");
        for r in 0..4 {
            assert!(
                so.lines().any(|l| l.starts_with(&format!("rank {r}:"))),
                "{name}: no line from rank {r}:\n{so}"
            );
        }
    }
}

#[test]
fn the_examples_compute_what_they_say() {
    let dir = bin("mcbench").with_file_name("examples");
    let run = |name: &str| {
        let mut cmd = Command::new(mclaunch());
        cmd.args(["-n", "4", "--timeout", "60"]).arg(dir.join(name));
        let out = run_bounded(cmd, Duration::from_secs(90));
        text(&out).0
    };
    let so = run("scan");
    assert!(so.contains("rank 3: scan sum = 10"), "{so}");
    let so = run("alltoall");
    assert!(so.contains("alltoall gave [1, 11, 21, 31]"), "{so}");
    let so = run("nonblocking");
    assert_eq!(so.matches("iallreduce sum = 10 ").count(), 4, "{so}");
    let so = run("split");
    for line in [
        "rank 2: rank 1 of 2 in communicator 1; sum of its world ranks = 2; bcast: from world rank 0",
        "rank 3: rank 1 of 2 in communicator 2; sum of its world ranks = 4; bcast: from world rank 1",
    ] {
        assert!(so.contains(line), "{so}");
    }
}
