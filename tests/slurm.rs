//! mcast under Slurm, whole system: `srun --mpi=pmi2 -N3 -n6 mcast-selftest`
//! on the test cluster (three hosts, network namespaces with a slurmd each;
//! bench/cluster/up.sh) succeeds with every rank on the host Slurm put it
//! on, and plain `srun` (no PMI) fails with the error that says what to do.
//!
//! Uses the running cluster, else brings one up with `bench/cluster/up.sh
//! 3` (root only) and tears it down at the end (`tests/common/cluster.rs`).

mod common;

use std::collections::BTreeSet;

use common::bin;
use common::cluster::Cluster;

/// Every job this test submits carries this name, so it can be cancelled.
const JOB_NAME: &str = "mcast-slurm-test";

/// Cancels this test's jobs, however the test ends.
struct Cancel<'a>(&'a Cluster);

impl Drop for Cancel<'_> {
    fn drop(&mut self) {
        self.0.scancel(JOB_NAME);
    }
}

#[test]
fn srun_starts_mcast_jobs_through_pmi2_and_refuses_without_it() {
    let cluster = Cluster::ensure();
    let _cancel = Cancel(&cluster);
    let selftest = bin("mcast-selftest");
    let selftest = selftest.to_str().unwrap();

    // 1. srun --mpi=pmi2 -N3 -n6: every rank ok, two per host, three hosts.
    let (code, so, se) = cluster.srun(JOB_NAME, &["--mpi=pmi2", "-N3", "-n6", selftest]);
    assert_eq!(
        code, 0,
        "srun --mpi=pmi2 failed\nstdout:\n{so}\nstderr:\n{se}"
    );
    let mut host = vec![String::new(); 6];
    for (r, h) in host.iter_mut().enumerate() {
        let line = so
            .lines()
            .find(|l| l.starts_with(&format!("selftest: rank {r} of 6 ok")))
            .unwrap_or_else(|| panic!("rank {r} missing:\n{so}\n{se}"));
        *h = line
            .split_once(" on host ")
            .and_then(|(_, h)| h.split_whitespace().next())
            .map(String::from)
            .unwrap_or_else(|| panic!("rank {r} names no host: {line}"));
    }
    // Slurm's default (block) distribution: ranks 2i and 2i+1 on node i.
    for i in 0..3 {
        assert_eq!(host[2 * i], host[2 * i + 1], "hosts {host:?}");
    }
    let distinct: BTreeSet<&String> = host.iter().collect();
    assert_eq!(distinct.len(), 3, "three hosts expected: {host:?}");

    // 2. Plain srun (no PMI): every task fails, saying what to do.
    let (code, so, se) = cluster.srun(JOB_NAME, &["--mpi=none", "-N3", "-n6", selftest]);
    assert_ne!(code, 0, "srun without PMI succeeded:\n{so}\n{se}");
    assert!(
        se.contains("started by srun with 6 tasks but without PMI-2 (PMI_FD is unset)")
            && se.contains("srun --mpi=pmi2"),
        "no clear error:\nstdout:\n{so}\nstderr:\n{se}"
    );
    assert!(!so.contains(" ok on host "), "a rank ran alone:\n{so}");
}
