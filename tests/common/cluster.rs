//! The namespace test cluster (`bench/cluster/`) for whole-system tests:
//! hosts h1..h3, each a network namespace with its own sshd and slurmd.
//! [`Cluster::ensure`] uses a running cluster or brings one up (root
//! only), and takes it down again on drop if it brought it up.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::run_bounded;

/// Where `up.sh` keeps its state (its default).
pub const DIR: &str = "/tmp/mcast-cluster";

/// Whether a running cluster's first host answers over ssh (state left by
/// a cluster whose daemons are gone does not count: `up.sh` clears it).
fn answers() -> bool {
    let mut ssh = Command::new("ssh");
    ssh.arg("-F").arg(Path::new(DIR).join("ssh_config")).args([
        "-o",
        "ConnectTimeout=5",
        "-o",
        "BatchMode=yes",
        "h1",
        "true",
    ]);
    run_bounded(ssh, Duration::from_secs(20)).status.success()
}

/// A cluster of three hosts, up for as long as this lives.
pub struct Cluster {
    /// This test brought the cluster up (and so takes it down).
    owned: bool,
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bench/cluster")
        .join(name)
}

impl Cluster {
    /// Use the running cluster, or start one of 3 hosts (`deps.sh` must
    /// have installed the packages: `.ci/run` does).
    pub fn ensure() -> Cluster {
        if Path::new(DIR).join("env.sh").exists() && answers() {
            return Cluster { owned: false };
        }
        // SAFETY: geteuid has no preconditions.
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "the cluster tests need root (network namespaces, sshd, slurmd): \
             run them as root, or start bench/cluster/up.sh 3 first"
        );
        let mut up = Command::new("bash");
        up.arg(script("up.sh")).arg("3");
        let out = run_bounded(up, Duration::from_secs(120));
        assert!(
            out.status.success(),
            "bench/cluster/up.sh 3 failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Cluster { owned: true }
    }

    /// The hostfile of the cluster (`hI slots=2`).
    pub fn hostfile(&self) -> PathBuf {
        Path::new(DIR).join("hostfile")
    }

    /// The launch agent for mclaunch: ssh with the cluster's config.
    pub fn agent(&self) -> String {
        format!("ssh -F {DIR}/ssh_config")
    }

    /// What `env.sh` exports (`SLURM_CONF`, the munge socket, ...): the
    /// environment Slurm's clients need.
    pub fn env(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(Path::new(DIR).join("env.sh"))
            .expect("reading the cluster's env.sh")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("export "))
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .collect()
    }

    /// `timeout 120 srun -J JOB ARGS` with the cluster's environment,
    /// bounded here too; returns (exit code, stdout, stderr).
    pub fn srun(&self, job: &str, args: &[&str]) -> (i32, String, String) {
        self.client("srun", job, args)
    }

    /// `timeout 120 salloc -J JOB ARGS` (ARGS: salloc's options, then the
    /// command it runs in the allocation), like [`Cluster::srun`], but
    /// without the launch agent of `env.sh`, so mclaunch starts its
    /// proxies with srun.
    pub fn salloc(&self, job: &str, args: &[&str]) -> (i32, String, String) {
        self.client("salloc", job, args)
    }

    fn client(&self, client: &str, job: &str, args: &[&str]) -> (i32, String, String) {
        let mut cmd = Command::new("timeout");
        cmd.args(["120", client, "-J", job])
            .args(args)
            .envs(self.env())
            .env_remove("MCAST_LAUNCH_AGENT")
            .env("MCAST_TIMEOUT_SECS", "60")
            .current_dir("/tmp");
        let out = run_bounded(cmd, Duration::from_secs(150));
        let (so, se) = super::text(&out);
        (out.status.code().unwrap_or(-1), so, se)
    }

    /// Cancel the Slurm jobs named `job` (bounded).
    pub fn scancel(&self, job: &str) {
        let mut cancel = Command::new("scancel");
        cancel.args(["-n", job]).envs(self.env());
        let _ = run_bounded(cancel, Duration::from_secs(30));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.owned {
            let mut down = Command::new("bash");
            down.arg(script("down.sh"));
            let _ = run_bounded(down, Duration::from_secs(120));
        }
    }
}

/// The pids of the processes in host `host`'s network namespace.
pub fn netns_pids(host: &str) -> Vec<i32> {
    let out = Command::new("ip")
        .args(["netns", "pids", &format!("mc-{host}")])
        .output()
        .expect("ip netns pids");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .collect()
}

/// The pids of the processes in host `host`'s namespace whose environment
/// holds `var_eq`.
pub fn marked_on(host: &str, var_eq: &str) -> Vec<i32> {
    netns_pids(host)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == var_eq.as_bytes()))
        })
        .collect()
}
