//! The command line, parsed with clap and resolved into a [`JobSpec`].

use std::ffi::OsString;
use std::time::Duration;

use clap::Parser;

use crate::error::LaunchError;
use crate::placement::{self, HostOptions};
use crate::spec::{self, JobSpec, OnFailure, OutputMode, Placement, DEFAULT_KILL_GRACE};

const AFTER_HELP: &str = "\
Every rank gets MCAST_RANK, MCAST_SIZE, MCAST_RENDEZVOUS (host:port of mclaunch's
rendezvous server) and MCAST_TOKEN (a random per-job secret) in its environment,
on top of mclaunch's own environment and the -x variables, and MCAST_REPORT_FD
(a pipe on which a rank tells mclaunch which peer it lost). Each rank runs in its
own process group; the group dies with mclaunch, even if mclaunch is killed. A
rank its peers report lost is killed if it has not exited 2 s later. Rank 0's
stdin is mclaunch's stdin unless that is a terminal; all other ranks read
/dev/null. mclaunch warns when the ranks outnumber the cores.

Inside a Slurm allocation (salloc, a batch script: SLURM_JOB_ID and
SLURM_JOB_NODELIST set) with neither --hostfile nor --host, the ranks run on the
allocation's nodes, as many on each as Slurm gave it tasks (SLURM_TASKS_PER_NODE),
and each node's proxy is started with srun.

Environment:
  MCAST_RENDEZVOUS_TIMEOUT_SECS   default for --rendezvous-timeout

Exit status:
  0        every rank exited with status 0
  N        the first rank to fail (in time: not a rank that failed because it
           lost that one) exited with status N (128+S if killed by signal S);
           the other ranks are stopped (SIGTERM, then SIGKILL), or with
           --on-failure continue run on to their end
  1        the rendezvous failed, or mclaunch could not set up the job
  2        invalid command line
  124      --timeout expired
  126/127  PROGRAM could not be executed / was not found
  128+S    mclaunch received signal S (SIGINT: 130, SIGTERM: 143)

Example:
  mclaunch -n 4 --tag-output -x RUST_LOG=debug ./target/release/my_app --size 1M";

/// `mclaunch`: start an mcast job (like mpirun).
#[derive(Debug, Parser)]
#[command(
    name = "mclaunch",
    version,
    override_usage = "mclaunch -n N [OPTIONS] PROGRAM [ARGS]...",
    about = "Launch N ranks of an mcast program on this machine (like mpirun)",
    long_about = "Launch N ranks of an mcast program on this machine (like mpirun).\n\n\
        mclaunch starts the ranks, runs the rendezvous through which they find each \
        other, forwards their output, and stops the whole job as soon as any rank \
        fails, exiting with that rank's status.",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Number of ranks to start [default with --hostfile or --host, or in
    /// a Slurm allocation: the total number of slots].
    #[arg(
        short = 'n',
        long = "np",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub np: Option<u32>,

    /// Run the ranks on the hosts of FILE: one host per line, `host`,
    /// `host slots=N` or `host:N`, `#` comments (Open MPI and Hydra syntax).
    /// Hosts other than this machine are reached through the launch agent.
    #[arg(long, visible_alias = "machinefile", value_name = "FILE")]
    pub hostfile: Option<std::path::PathBuf>,

    /// Run the ranks on these hosts: `h1:2,h2:2,h3` (a host without `:N` has 1 slot).
    #[arg(long, short = 'H', value_name = "LIST")]
    pub host: Option<String>,

    /// Place ranks on the hosts by `slot` (fill each host's slots in turn)
    /// or by `node` (one rank per host, round-robin).
    #[arg(long, value_name = "slot|node", default_value = "slot")]
    pub map_by: crate::hosts::MapBy,

    /// Allow more ranks than slots (the extra ranks are dealt round-robin).
    #[arg(long)]
    pub oversubscribe: bool,

    /// Bind each rank to a CPU (`core`: round-robin over the CPUs mclaunch,
    /// or the host's proxy, may use, per host) or leave the ranks to the
    /// scheduler (`none`), as Open MPI's `--bind-to` [default:
    /// $MCAST_BIND_TO, else none].
    #[arg(long, value_name = "none|core")]
    pub bind_to: Option<crate::bind::BindTo>,

    /// The command that runs mclaunch's proxy on a remote host, with its
    /// arguments; the host name and the proxy command follow it
    /// [default: $MCAST_LAUNCH_AGENT, else srun for the hosts of a Slurm
    /// allocation, else ssh].
    #[arg(long, value_name = "CMD")]
    pub launch_agent: Option<String>,

    /// On remote hosts, run the proxy as DIR/bin/mclaunch [default: this
    /// mclaunch's own path, as on a shared file system].
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<std::path::PathBuf>,

    /// The interfaces ranks and the rendezvous use between hosts: names or
    /// CIDRs, `^` to exclude (`eth0`, `10.0.0.0/8`, `^docker0,lo`)
    /// [default: $MCAST_IF, else the interface that routes to the other
    /// hosts]. Sets MCAST_IF for every rank.
    #[arg(long = "if", value_name = "LIST")]
    pub iface: Option<String>,

    /// Stop the whole job after SECS seconds (fractions allowed) and exit with 124.
    #[arg(long, value_name = "SECS", value_parser = spec::parse_secs)]
    pub timeout: Option<Duration>,

    /// Time all ranks have to join the rendezvous, counted from the first rank's
    /// hello [default: $MCAST_RENDEZVOUS_TIMEOUT_SECS, else 30].
    #[arg(long, value_name = "SECS", value_parser = spec::parse_secs)]
    pub rendezvous_timeout: Option<Duration>,

    /// Prefix every line a rank writes to stdout or stderr with `[RANK] `.
    #[arg(
        long,
        help = "Prefix every line a rank writes to stdout or stderr with \"[RANK] \""
    )]
    pub tag_output: bool,

    /// Set VAR=VAL in every rank's environment, or with a bare VAR pass on
    /// mclaunch's own value of VAR. Repeatable.
    #[arg(short = 'x', long = "export", value_name = "VAR[=VAL]")]
    pub export: Vec<String>,

    /// How ranks reach each other: `auto` (Unix-domain sockets and shared
    /// memory on one host, TCP between hosts), `tcp` (TCP everywhere) or
    /// `quic` (as auto on one host, QUIC between hosts, with mutual TLS
    /// against a certificate authority mclaunch makes for the job) or
    /// `quic-all` (QUIC between every pair of ranks, also of one host: to
    /// measure QUIC on one machine). Sets MCAST_TRANSPORT for every rank.
    #[arg(long, value_name = "auto|tcp|quic|quic-all")]
    pub transport: Option<String>,

    /// Map rank i to node i of a logical topology (`torus:5x5`, `torus:5x5:uni`,
    /// `mesh:4x4`, `hypercube:4`); the topology-aware algorithms (utorus, ucube,
    /// maxport, combine, wsort) and `auto` then plan on it. N may be at most the
    /// number of nodes. Sets MCAST_TOPOLOGY for every rank.
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,

    /// Run every packet through an emulated switch fabric: mclaunch starts
    /// the switches and attaches rank i to host port i. SPEC is
    /// `torus:4x4[:uni]`, `mesh:4x4`, `hypercube:4`, `irregular:...`,
    /// `min:5` (a 5-stage banyan MIN of 32 nodes; `min:5:omega` for the omega wiring) or `crossbar:N`, optionally
    /// with cost knobs (`torus:4x4@preset=ncube2,num_vcs=4`). Messages then
    /// carry a model latency (`Received::model_latency`), and the worm
    /// algorithms the fabric supports become usable. Sets MCAST_FABRIC.
    #[arg(long, value_name = "SPEC")]
    pub fabric: Option<String>,

    /// A BookSim-style cost file (`key = value;` lines) for --fabric,
    /// applied before the knobs on the spec.
    #[arg(long, value_name = "FILE", requires = "fabric")]
    pub fabric_config: Option<std::path::PathBuf>,

    /// Print the fabric's counters (packets, bytes, packet-hops, drops) as
    /// one JSON line on stderr when the job ends.
    #[arg(long, requires = "fabric")]
    pub fabric_stats: bool,

    /// What a failed rank does to the job: `stop` tears the job down at once
    /// (like mpirun); `continue` lets the survivors run on (each sees
    /// `Error::PeerLost` naming the dead rank) and exits non-zero at the end,
    /// naming it.
    #[arg(long, value_name = "stop|continue", default_value = "stop")]
    pub on_failure: OnFailure,

    /// The program every rank runs, followed by its arguments (passed on as
    /// they are, even those that look like mclaunch options).
    #[arg(
        value_name = "PROGRAM",
        required = true,
        num_args = 1..,
        trailing_var_arg = true
    )]
    pub command: Vec<OsString>,
}

impl Cli {
    /// Resolve the command line into a job, reading `-x VAR` values and
    /// `MCAST_RENDEZVOUS_TIMEOUT_SECS` through `lookup` (the process environment
    /// in [`Cli::into_spec`]).
    pub fn into_spec_with(
        self,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<JobSpec, LaunchError> {
        let mut command = self.command.into_iter();
        let program = command
            .next()
            .ok_or_else(|| LaunchError::Usage("no PROGRAM given".into()))?;
        let mut env = self
            .export
            .iter()
            .map(|x| spec::parse_export(x, &lookup))
            .collect::<Result<Vec<_>, _>>()?;
        let mut hosts = HostOptions {
            hostfile: self.hostfile.clone(),
            host: self.host.clone(),
            map_by: self.map_by,
            oversubscribe: self.oversubscribe,
            launch_agent: self.launch_agent.clone(),
            prefix: self.prefix.clone(),
            iface: self.iface.clone().or_else(|| {
                lookup(mcast::config::ENV_IF).map(|v| v.to_string_lossy().into_owned())
            }),
            allocation: None,
        };
        // Inside a Slurm allocation, with no host named, run on its nodes
        // (as mpirun does); --fabric keeps every rank on this machine.
        if !hosts.any() && self.fabric.is_none() {
            hosts.allocation = crate::slurm::allocation(&lookup)?;
        }
        let (np, placement) = if hosts.any() {
            if self.fabric.is_some() {
                return Err(LaunchError::Usage(
                    "--fabric runs every rank on this machine: it cannot be combined \
                     with --hostfile or --host"
                        .into(),
                ));
            }
            let (np, plan) = placement::plan(&hosts, self.np, &lookup)?;
            if let Some(list) = &hosts.iface {
                env.retain(|(k, _)| k != mcast::config::ENV_IF);
                env.push((mcast::config::ENV_IF.into(), list.into()));
            }
            (np, Placement::Hosts(plan))
        } else {
            let np = self.np.ok_or_else(|| {
                LaunchError::Usage(
                    "give the number of ranks with -n N (or hosts with --hostfile or --host, \
                     or run inside a Slurm allocation)"
                        .into(),
                )
            })?;
            (np, Placement::Local)
        };
        if let Some(t) = &self.transport {
            let parsed: mcast::Transport = t
                .parse()
                .map_err(|e| LaunchError::Usage(format!("--transport: {e}")))?;
            env.retain(|(k, _)| k != mcast::config::ENV_TRANSPORT);
            env.push((
                mcast::config::ENV_TRANSPORT.into(),
                parsed.to_string().into(),
            ));
        }
        if let Some(t) = &self.topology {
            let topo: mcast_algorithms::Topology = t
                .parse()
                .map_err(|e| LaunchError::Usage(format!("--topology {t}: {e}")))?;
            if np as usize > topo.nodes() {
                return Err(LaunchError::Usage(format!(
                    "--topology {t} has {} nodes, fewer than the {} ranks asked for",
                    topo.nodes(),
                    np
                )));
            }
            env.retain(|(k, _)| k != mcast::config::ENV_TOPOLOGY);
            env.push((mcast::config::ENV_TOPOLOGY.into(), t.into()));
        }
        let fabric = match &self.fabric {
            None => None,
            Some(f) => Some(fabric_job(
                f,
                self.fabric_config.as_deref(),
                self.fabric_stats,
                np,
            )?),
        };
        let bind = match self.bind_to {
            Some(b) => b,
            None => match lookup(crate::bind::ENV_BIND_TO) {
                Some(v) => v.to_string_lossy().parse().map_err(|e| {
                    LaunchError::Usage(format!("{}: {e}", crate::bind::ENV_BIND_TO))
                })?,
                None => crate::bind::BindTo::None,
            },
        };
        Ok(JobSpec {
            nranks: np,
            program,
            args: command.collect(),
            env,
            output: if self.tag_output {
                OutputMode::Tagged
            } else {
                OutputMode::Inherit
            },
            timeout: self.timeout,
            rendezvous_timeout: spec::rendezvous_timeout(self.rendezvous_timeout, &lookup)?,
            kill_grace: DEFAULT_KILL_GRACE,
            placement,
            on_failure: self.on_failure,
            fabric,
            bind,
        })
    }

    /// Resolve the command line into a job using the process environment.
    pub fn into_spec(self) -> Result<JobSpec, LaunchError> {
        self.into_spec_with(|k| std::env::var_os(k))
    }
}

/// Check `--fabric` (spec, knobs, config file, room for `np` ranks).
fn fabric_job(
    spec: &str,
    config: Option<&std::path::Path>,
    stats: bool,
    np: u32,
) -> Result<crate::spec::FabricJob, LaunchError> {
    use mcast_emulator::cost::FabricCostModel;
    use mcast_emulator::sim::spec::{split_spec, SimFabric};
    let usage = |e: String| LaunchError::Usage(format!("--fabric {spec}: {e}"));
    let mut cost = FabricCostModel::default();
    if let Some(path) = config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LaunchError::Usage(format!("--fabric-config {}: {e}", path.display())))?;
        cost.parse_config(&text)
            .map_err(|e| LaunchError::Usage(format!("--fabric-config {}: {e}", path.display())))?;
    }
    // Validate now (the fabric applies the knobs again when it starts).
    let mut check = cost.clone();
    let bare = split_spec(spec, &mut check).map_err(|e| usage(e.to_string()))?;
    let fabric = SimFabric::parse(bare, check.dateline).map_err(|e| usage(e.to_string()))?;
    if np as usize > fabric.nodes() {
        return Err(usage(format!(
            "{} host ports, fewer than the {np} ranks asked for",
            fabric.nodes()
        )));
    }
    Ok(crate::spec::FabricJob {
        spec: spec.to_string(),
        cost,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mclaunch").chain(args.iter().copied()))
    }

    #[test]
    fn topology_sets_the_environment_and_is_checked() {
        let spec = parse(&["-n", "16", "--topology", "torus:4x4", "prog"])
            .unwrap()
            .into_spec_with(|_| None)
            .unwrap();
        assert!(spec
            .env
            .iter()
            .any(|(k, v)| k == "MCAST_TOPOLOGY" && v == "torus:4x4"));
        let too_many = parse(&["-n", "17", "--topology", "torus:4x4", "prog"]).unwrap();
        assert!(matches!(
            too_many.into_spec_with(|_| None),
            Err(LaunchError::Usage(_))
        ));
        let bad = parse(&["-n", "2", "--topology", "ring:9", "prog"]).unwrap();
        assert!(matches!(
            bad.into_spec_with(|_| None),
            Err(LaunchError::Usage(_))
        ));
    }

    #[test]
    fn transport_sets_the_environment_and_quic_gets_identities() {
        let spec = |args: &[&str]| parse(args).unwrap().into_spec_with(|_| None);
        let quic = spec(&["-n", "2", "--transport", "QUIC", "prog"]).unwrap();
        let set = |s: &JobSpec| {
            s.env
                .iter()
                .filter(|(k, _)| k == mcast::config::ENV_TRANSPORT)
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(set(&quic), ["quic"]);
        assert!(quic.quic());
        let all = spec(&["-n", "2", "--transport", "quic-all", "prog"]).unwrap();
        assert_eq!(set(&all), ["quic-all"]);
        assert!(all.quic());
        let tcp = spec(&[
            "-n",
            "2",
            "-x",
            "MCAST_TRANSPORT=quic",
            "--transport",
            "tcp",
            "p",
        ]);
        assert_eq!(set(tcp.as_ref().unwrap()), ["tcp"]);
        assert!(!tcp.unwrap().quic());
        assert!(matches!(
            spec(&["-n", "2", "--transport", "udp", "prog"]),
            Err(LaunchError::Usage(_))
        ));
        // The bundle is mclaunch's to set, never the user's.
        assert!(matches!(
            spec(&["-n", "2", "-x", "MCAST_QUIC_IDENTITY=00", "prog"]),
            Err(LaunchError::Usage(_))
        ));
    }

    #[test]
    fn a_slurm_allocation_gives_the_hosts_unless_named() {
        let alloc = |k: &str| {
            let v = match k {
                "SLURM_JOB_ID" => "9",
                "SLURM_JOB_NODELIST" => "localhost",
                "SLURM_TASKS_PER_NODE" => "3",
                _ => return None,
            };
            Some(OsString::from(v))
        };
        let spec = parse(&["prog"]).unwrap().into_spec_with(alloc).unwrap();
        assert_eq!(spec.nranks, 3);
        let plan = spec.placement.hosts().expect("the allocation's hosts");
        assert_eq!(plan.agent, crate::spec::LaunchAgent::Srun);
        assert_eq!(plan.hosts[0].name, "localhost");
        // --host wins, and --fabric keeps every rank here.
        let named = parse(&["--host", "localhost:2", "prog"]).unwrap();
        let spec = named.into_spec_with(alloc).unwrap();
        assert_eq!(spec.nranks, 2);
        assert_ne!(
            spec.placement.hosts().unwrap().agent,
            crate::spec::LaunchAgent::Srun
        );
        let fabric = parse(&["-n", "4", "--fabric", "crossbar:4", "prog"]).unwrap();
        assert_eq!(
            fabric.into_spec_with(alloc).unwrap().placement,
            Placement::Local
        );
        // A broken allocation says which variable.
        let broken = |k: &str| match k {
            "SLURM_TASKS_PER_NODE" => Some(OsString::from("2(x")),
            other => alloc(other),
        };
        assert!(matches!(
            parse(&["prog"]).unwrap().into_spec_with(broken),
            Err(LaunchError::Usage(m)) if m.contains("SLURM_TASKS_PER_NODE")
        ));
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn program_arguments_are_not_ours() {
        let cli = parse(&[
            "-n",
            "2",
            "--tag-output",
            "prog",
            "-n",
            "5",
            "--timeout",
            "x",
        ])
        .unwrap();
        assert_eq!(cli.np, Some(2));
        assert!(cli.tag_output);
        assert_eq!(cli.timeout, None);
        let spec = cli.into_spec_with(|_| None).unwrap();
        assert_eq!(spec.program, "prog");
        assert_eq!(spec.args, ["-n", "5", "--timeout", "x"]);
        assert_eq!(spec.output, OutputMode::Tagged);
        let dashed = parse(&["-n", "1", "--", "-prog", "--help"]).unwrap();
        assert_eq!(dashed.command, ["-prog", "--help"]);
    }

    #[test]
    fn options() {
        let cli = parse(&[
            "--np",
            "3",
            "--timeout",
            "1.5",
            "-x",
            "A=1",
            "-x",
            "B",
            "--rendezvous-timeout",
            "4",
            "sh",
            "-c",
            "true",
        ])
        .unwrap();
        let spec = cli
            .into_spec_with(|k| (k == "B").then(|| OsString::from("bee")))
            .unwrap();
        assert_eq!(spec.nranks, 3);
        assert_eq!(spec.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(spec.rendezvous_timeout, Duration::from_secs(4));
        assert_eq!(
            spec.env,
            [("A".into(), "1".into()), ("B".into(), "bee".into())]
        );
        assert_eq!(spec.args, ["-c", "true"]);
    }

    #[test]
    fn rejects_bad_command_lines() {
        // -n is required without hosts (it is checked when the spec is made).
        let no_n = parse(&["prog"]).unwrap();
        assert!(matches!(
            no_n.into_spec_with(|_| None),
            Err(LaunchError::Usage(m)) if m.contains("-n N")
        ));
        assert!(parse(&["-n", "0", "prog"]).is_err());
        assert!(parse(&["-n", "2"]).is_err()); // no program
        assert!(parse(&["-n", "2", "--timeout", "0", "prog"]).is_err());
        assert!(parse(&["-n", "2", "--bogus", "prog"]).is_err());
        let unset = parse(&["-n", "1", "-x", "SURELY_UNSET", "prog"]).unwrap();
        assert!(matches!(
            unset.into_spec_with(|_| None),
            Err(LaunchError::Usage(_))
        ));
    }
}
