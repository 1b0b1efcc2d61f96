//! mcast under Slurm, whole system: `srun --mpi=pmi2 -N3 -n6 mcast-selftest`
//! on the test cluster (three hosts, network namespaces with a slurmd each;
//! bench/cluster/up.sh) succeeds with every rank on the host Slurm put it
//! on; so does plain `srun` (no PMI: task 0 serves the rendezvous); and
//! `salloc -N3 -n6 mclaunch mcast-selftest` runs on the allocation's nodes,
//! its proxies started with srun, with TCP and with QUIC links between the
//! hosts.
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
fn srun_and_salloc_start_mcast_jobs() {
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
    two_per_host(&so, &se);

    // 2. Plain srun (no PMI): task 0 serves the rendezvous on the first
    //    node, at the port the job and step ids give; the same placement.
    let (code, so, se) = cluster.srun(JOB_NAME, &["--mpi=none", "-N3", "-n6", selftest]);
    assert_eq!(
        code, 0,
        "srun --mpi=none failed\nstdout:\n{so}\nstderr:\n{se}"
    );
    two_per_host(&so, &se);

    // 3. mclaunch inside an allocation (no hostfile, no launch agent): the
    //    allocation's nodes and tasks, proxies started with srun, ranks
    //    placed by slot: 0 and 1 on the first node, and so on. Then the
    //    same with QUIC links between the hosts (each rank's identity
    //    travels over srun's channel to its proxy).
    let mclaunch = common::mclaunch();
    for (transport, links) in [(None, None), (Some("quic"), Some("links quic,ring)"))] {
        let mut args = vec!["-N3", "-n6", mclaunch.to_str().unwrap(), "--tag-output"];
        if let Some(t) = transport {
            args.extend(["--transport", t]);
        }
        args.push(selftest);
        let (code, so, se) = cluster.salloc(JOB_NAME, &args);
        assert_eq!(
            code, 0,
            "salloc mclaunch {transport:?} failed\nstdout:\n{so}\nstderr:\n{se}"
        );
        assert_eq!(
            hosts_of_ranks(&so, &se),
            ["h1", "h1", "h2", "h2", "h3", "h3"],
            "stdout:\n{so}"
        );
        for r in 0..6 {
            let line = so
                .lines()
                .find(|l| l.starts_with(&format!("[{r}] selftest: rank {r} of 6 ok")));
            let line = line.unwrap_or_else(|| panic!("rank {r} missing:\n{so}"));
            if let Some(links) = links {
                assert!(line.ends_with(links), "{line}");
            }
        }
    }
}

/// Slurm's default (block) distribution: ranks 2i and 2i+1 on node i, three
/// nodes.
fn two_per_host(so: &str, se: &str) {
    let host = hosts_of_ranks(so, se);
    for i in 0..3 {
        assert_eq!(host[2 * i], host[2 * i + 1], "hosts {host:?}");
    }
    let distinct: BTreeSet<&String> = host.iter().collect();
    assert_eq!(distinct.len(), 3, "three hosts expected: {host:?}");
}

/// The host each of the 6 ranks names in its line `selftest: rank R of 6
/// ok on host H (...`.
fn hosts_of_ranks(so: &str, se: &str) -> Vec<String> {
    (0..6)
        .map(|r| {
            let line = so
                .lines()
                .find(|l| l.contains(&format!("selftest: rank {r} of 6 ok")))
                .unwrap_or_else(|| panic!("rank {r} missing:\n{so}\n{se}"));
            line.split_once(" on host ")
                .and_then(|(_, h)| h.split_whitespace().next())
                .map(String::from)
                .unwrap_or_else(|| panic!("rank {r} names no host: {line}"))
        })
        .collect()
}
