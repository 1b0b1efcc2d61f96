//! mcast under Slurm, whole system: `srun --mpi=pmi2 -N3 -n6 mcast-selftest`
//! on the test cluster (three hosts, network namespaces with a slurmd each;
//! bench/cluster/up.sh) succeeds with every rank on the host Slurm put it
//! on, and plain `srun` (no PMI) fails with the error that says what to do.
//!
//! Uses the running cluster if `/tmp/mcast-cluster/env.sh` exists; else
//! brings one up with `bench/cluster/up.sh 3` (root only) and tears it down
//! at the end. Build the binary first: `cargo build --bin mcast-selftest`,
//! then `cargo test --test slurm`.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{bin, run_bounded, text};

const ENV_SH: &str = "/tmp/mcast-cluster/env.sh";
/// Every job this test submits carries this name, so it can be cancelled.
const JOB_NAME: &str = "mcast-slurm-test";

/// The cluster's environment (`SLURM_CONF`, ...); tears the cluster down on
/// drop if this test brought it up, and cancels this test's jobs.
struct Cluster {
    env: Vec<(String, String)>,
    brought_up: bool,
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

impl Cluster {
    fn get() -> Cluster {
        let mut brought_up = false;
        if !Path::new(ENV_SH).exists() {
            let up = workspace().join("bench/cluster/up.sh");
            assert!(
                up.exists(),
                "no Slurm test cluster: {ENV_SH} does not exist and {} is not in this tree",
                up.display()
            );
            assert!(
                unsafe { libc::geteuid() } == 0,
                "no Slurm test cluster ({ENV_SH} does not exist), and bringing one up \
                 with bench/cluster/up.sh needs root: run this test as root, or start \
                 the cluster first"
            );
            let mut cmd = Command::new(&up);
            cmd.arg("3").current_dir(workspace());
            let out = run_bounded(cmd, Duration::from_secs(600));
            let (so, se) = text(&out);
            assert!(
                out.status.success(),
                "bench/cluster/up.sh 3 failed:\n{so}\n{se}"
            );
            brought_up = true;
        }
        let env = std::fs::read_to_string(ENV_SH)
            .expect("reading the cluster's env.sh")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("export "))
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .collect();
        Cluster { env, brought_up }
    }

    /// `timeout 120 srun -J NAME ARGS`, bounded here too; returns (exit
    /// code, stdout, stderr).
    fn srun(&self, args: &[&str]) -> (i32, String, String) {
        let mut cmd = Command::new("timeout");
        cmd.args(["120", "srun", "-J", JOB_NAME])
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("MCAST_TIMEOUT_SECS", "60")
            .current_dir("/tmp");
        let out = run_bounded(cmd, Duration::from_secs(150));
        let (so, se) = text(&out);
        (out.status.code().unwrap_or(-1), so, se)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut cancel = Command::new("scancel");
        cancel
            .args(["-n", JOB_NAME])
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let _ = run_bounded(cancel, Duration::from_secs(30));
        if self.brought_up {
            let mut down = Command::new(workspace().join("bench/cluster/down.sh"));
            down.current_dir(workspace());
            let _ = run_bounded(down, Duration::from_secs(300));
        }
    }
}

#[test]
fn srun_starts_mcast_jobs_through_pmi2_and_refuses_without_it() {
    let cluster = Cluster::get();
    let selftest = bin("mcast-selftest");
    let selftest = selftest.to_str().unwrap();

    // 1. srun --mpi=pmi2 -N3 -n6: every rank ok, two per host, three hosts.
    let (code, so, se) = cluster.srun(&["--mpi=pmi2", "-N3", "-n6", selftest]);
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
            .rsplit_once(" on ")
            .map(|(_, h)| h.trim().to_string())
            .unwrap_or_else(|| panic!("rank {r} names no host: {line}"));
    }
    // Slurm's default (block) distribution: ranks 2i and 2i+1 on node i.
    for i in 0..3 {
        assert_eq!(host[2 * i], host[2 * i + 1], "hosts {host:?}");
    }
    let distinct: BTreeSet<&String> = host.iter().collect();
    assert_eq!(distinct.len(), 3, "three hosts expected: {host:?}");

    // 2. Plain srun (no PMI): every task fails, saying what to do.
    let (code, so, se) = cluster.srun(&["--mpi=none", "-N3", "-n6", selftest]);
    assert_ne!(code, 0, "srun without PMI succeeded:\n{so}\n{se}");
    assert!(
        se.contains("started by srun with 6 tasks but without PMI-2 (PMI_FD is unset)")
            && se.contains("srun --mpi=pmi2"),
        "no clear error:\nstdout:\n{so}\nstderr:\n{se}"
    );
    assert!(!so.contains("ok ("), "a rank ran alone:\n{so}");
}
