//! What to launch: the resolved form of the command line.
//!
//! [`JobSpec`] is independent of clap so that other front ends (a Slurm step,
//! tests) can build one directly. New launch modes slot in here: `--hostfile`
//! becomes another [`Placement`], `--topology` / `--fabric` become fields that
//! add per-rank environment and emulator setup before the ranks start.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use mcast::config::{
    ENV_QUIC_IDENTITY, ENV_RANK, ENV_RENDEZVOUS, ENV_RENDEZVOUS_TIMEOUT_SECS, ENV_SIZE, ENV_TOKEN,
    ENV_TRANSPORT,
};

use crate::error::LaunchError;

/// How long ranks have to join the rendezvous, counted from the first hello.
pub const DEFAULT_RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(30);

/// How long ranks get between SIGTERM and SIGKILL when the job is torn down.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// Environment variables mclaunch sets itself; `-x` may not override them.
pub const RESERVED_ENV: [&str; 5] = [
    ENV_RANK,
    ENV_SIZE,
    ENV_RENDEZVOUS,
    ENV_TOKEN,
    ENV_QUIC_IDENTITY,
];

/// What happens to the ranks' stdout and stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// Ranks write straight to mclaunch's stdout and stderr.
    #[default]
    Inherit,
    /// Every line of rank r is forwarded with a `[r] ` prefix.
    Tagged,
}

/// What mclaunch does when a rank fails (exits non-zero or is killed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Stop the whole job at once (SIGTERM, then SIGKILL) and exit with the
    /// failed rank's status, like mpirun.
    #[default]
    Stop,
    /// Let the other ranks run on (they see `Error::PeerLost`); exit with the
    /// first failed rank's status once every rank has ended.
    Continue,
}

impl std::str::FromStr for OnFailure {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "stop" => Ok(OnFailure::Stop),
            "continue" => Ok(OnFailure::Continue),
            other => Err(format!("{other:?}: expected stop or continue")),
        }
    }
}

/// Where the ranks run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Placement {
    /// All ranks are child processes on this machine, and the rendezvous
    /// listens on loopback.
    #[default]
    Local,
    /// Ranks on several hosts (`--hostfile`, `--host`, a Slurm
    /// allocation): a host that is this
    /// machine gets child processes, every other host a proxy started
    /// through the launch agent, and the rendezvous binds an address the
    /// hosts reach.
    Hosts(HostPlan),
}

/// Which rank runs on which host, and how the hosts are reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPlan {
    /// The hosts, in the order they were given.
    pub hosts: Vec<PlannedHost>,
    /// Each rank's host: an index into `hosts`.
    pub rank_host: Vec<usize>,
    /// How the proxy is started on a remote host.
    pub agent: LaunchAgent,
    /// The mclaunch binary the agent runs on a remote host, as `--proxy`.
    pub proxy_program: String,
    /// The address the rendezvous binds.
    pub bind: IpAddr,
}

/// What starts `mclaunch --proxy` on a remote host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchAgent {
    /// An ssh-like program and its arguments (`ssh`, `ssh -F
    /// cluster/ssh_config`), to which the host name and a shell command are
    /// appended.
    Shell(Vec<String>),
    /// Slurm's `srun`, inside an allocation: one step of one task on the
    /// host, running the proxy directly (no shell).
    Srun,
}

impl LaunchAgent {
    /// The program the agent runs.
    pub fn program(&self) -> &str {
        match self {
            LaunchAgent::Shell(words) => words.first().map_or("", String::as_str),
            LaunchAgent::Srun => "srun",
        }
    }
}

impl std::fmt::Display for LaunchAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchAgent::Shell(words) => f.write_str(&words.join(" ")),
            LaunchAgent::Srun => f.write_str("srun"),
        }
    }
}

/// One host of a [`HostPlan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedHost {
    /// Its name as given.
    pub name: String,
    /// It is this machine: its ranks are started directly, without an agent.
    pub local: bool,
}

impl HostPlan {
    /// The host of `rank`, if it runs elsewhere (through a proxy).
    pub fn remote_host(&self, rank: u32) -> Option<usize> {
        let h = *self.rank_host.get(rank as usize)?;
        (!self.hosts[h].local).then_some(h)
    }
}

impl Placement {
    /// The address the rendezvous server binds (port 0: any free port).
    pub fn rendezvous_bind(&self) -> IpAddr {
        match self {
            Placement::Local => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Placement::Hosts(plan) => plan.bind,
        }
    }

    /// The host plan, when ranks may run elsewhere.
    pub fn hosts(&self) -> Option<&HostPlan> {
        match self {
            Placement::Local => None,
            Placement::Hosts(plan) => Some(plan),
        }
    }
}

/// A fully resolved job description.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Number of ranks (at least 1).
    pub nranks: u32,
    /// The program every rank runs.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment for every rank (from `-x`), applied before the
    /// `MCAST_*` variables mclaunch sets itself.
    pub env: Vec<(OsString, OsString)>,
    /// How rank output is handled.
    pub output: OutputMode,
    /// Whole-job deadline, counted from launch.
    pub timeout: Option<Duration>,
    /// Deadline for all ranks to join the rendezvous, counted from the first hello.
    pub rendezvous_timeout: Duration,
    /// Time between SIGTERM and SIGKILL on teardown.
    pub kill_grace: Duration,
    /// Where ranks run.
    pub placement: Placement,
    /// What a rank's failure does to the job.
    pub on_failure: OnFailure,
    /// Run every packet through an emulated switch fabric.
    pub fabric: Option<FabricJob>,
    /// Where each rank runs on its host (`--bind-to`).
    pub bind: crate::bind::BindTo,
}

/// `--fabric`: the switch fabric mclaunch emulates for the job.
#[derive(Debug, Clone, PartialEq)]
pub struct FabricJob {
    /// The spec as given (`torus:4x4@num_vcs=4`).
    pub spec: String,
    /// The cost model after `--fabric-config` (the spec's knobs are applied
    /// on top when the fabric starts).
    pub cost: mcast_emulator::cost::FabricCostModel,
    /// Print the fabric's counters as JSON on stderr at the end.
    pub stats: bool,
}

impl JobSpec {
    /// A job of `nranks` local ranks running `program args...` with default settings.
    pub fn new(nranks: u32, program: impl Into<OsString>, args: Vec<OsString>) -> JobSpec {
        JobSpec {
            nranks,
            program: program.into(),
            args,
            env: Vec::new(),
            output: OutputMode::Inherit,
            timeout: None,
            rendezvous_timeout: DEFAULT_RENDEZVOUS_TIMEOUT,
            kill_grace: DEFAULT_KILL_GRACE,
            placement: Placement::Local,
            on_failure: OnFailure::Stop,
            fabric: None,
            bind: crate::bind::BindTo::None,
        }
    }

    /// Whether the ranks run with `MCAST_TRANSPORT=quic` or `quic-all`
    /// (from `--transport` or `-x`, else mclaunch's own environment, which
    /// local ranks inherit): then each gets a certificate of the job's CA.
    pub fn quic(&self) -> bool {
        let set = self.env.iter().rev().find(|(k, _)| k == ENV_TRANSPORT);
        let value = match set {
            Some((_, v)) => Some(v.clone()),
            None => std::env::var_os(ENV_TRANSPORT),
        };
        value.is_some_and(|v| {
            v.to_string_lossy()
                .parse::<mcast::Transport>()
                .is_ok_and(|t| t.is_quic())
        })
    }
}

/// Parse a positive number of seconds (fractions allowed) into a duration.
pub fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !(secs > 0.0 && secs.is_finite() && secs < 1e9) {
        return Err(format!("{s:?}: expected a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The rendezvous timeout: the command-line value if given, else
/// `MCAST_RENDEZVOUS_TIMEOUT_SECS` from `lookup`, else the default.
pub fn rendezvous_timeout(
    flag: Option<Duration>,
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Result<Duration, LaunchError> {
    if let Some(d) = flag {
        return Ok(d);
    }
    match lookup(ENV_RENDEZVOUS_TIMEOUT_SECS) {
        None => Ok(DEFAULT_RENDEZVOUS_TIMEOUT),
        Some(v) => {
            let v = v.to_string_lossy();
            parse_secs(&v)
                .map_err(|e| LaunchError::Usage(format!("{ENV_RENDEZVOUS_TIMEOUT_SECS}: {e}")))
        }
    }
}

/// Resolve one `-x` argument: `VAR=VAL` sets VAR to VAL; `VAR` copies mclaunch's
/// own value of VAR (found with `lookup`), which must be set.
pub fn parse_export(
    arg: &str,
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Result<(OsString, OsString), LaunchError> {
    let (name, value) = match arg.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (arg, None),
    };
    if name.is_empty() || name.contains('\0') || value.is_some_and(|v| v.contains('\0')) {
        return Err(LaunchError::Usage(format!(
            "-x {arg:?}: expected VAR=VALUE or VAR"
        )));
    }
    if RESERVED_ENV.contains(&name) {
        return Err(LaunchError::Usage(format!(
            "-x {name}: mclaunch sets {name} itself"
        )));
    }
    let value = match value {
        Some(v) => OsString::from(v),
        None => lookup(name).ok_or_else(|| {
            LaunchError::Usage(format!(
                "-x {name}: {name} is not set in mclaunch's environment (use -x {name}=VALUE)"
            ))
        })?,
    };
    Ok((OsString::from(name), value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env as env;

    #[test]
    fn exports() {
        let look = env(&[("HOME", "/h")]);
        assert_eq!(
            parse_export("A=b=c", &look).unwrap(),
            ("A".into(), "b=c".into())
        );
        assert_eq!(parse_export("A=", &look).unwrap(), ("A".into(), "".into()));
        assert_eq!(
            parse_export("HOME", &look).unwrap(),
            ("HOME".into(), "/h".into())
        );
        assert!(parse_export("NOPE", &look).is_err());
        assert!(parse_export("=x", &look).is_err());
        assert!(parse_export("", &look).is_err());
        assert!(parse_export("MCAST_RANK=3", &look).is_err());
        // Other MCAST_ settings are the user's to pass.
        assert!(parse_export("MCAST_TIMEOUT_SECS=5", &look).is_ok());
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_secs("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_secs("0.25").unwrap(), Duration::from_millis(250));
        assert!(parse_secs("0").is_err());
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("inf").is_err());
        assert!(parse_secs("x").is_err());
    }

    #[test]
    fn rendezvous_timeout_sources() {
        let none = env(&[]);
        assert_eq!(
            rendezvous_timeout(None, &none).unwrap(),
            DEFAULT_RENDEZVOUS_TIMEOUT
        );
        let set = env(&[(ENV_RENDEZVOUS_TIMEOUT_SECS, "4")]);
        assert_eq!(
            rendezvous_timeout(None, &set).unwrap(),
            Duration::from_secs(4)
        );
        assert_eq!(
            rendezvous_timeout(Some(Duration::from_secs(1)), &set).unwrap(),
            Duration::from_secs(1)
        );
        let bad = env(&[(ENV_RENDEZVOUS_TIMEOUT_SECS, "soon")]);
        assert!(rendezvous_timeout(None, &bad).is_err());
    }
}
