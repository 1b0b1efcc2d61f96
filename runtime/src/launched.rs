//! How this process was started, from its environment (pure: a lookup in,
//! a [`Launch`] out).
//!
//! * **mclaunch** (`MCAST_RANK` set): the rendezvous path of
//!   `config::JobEnv`. mclaunch wins over Slurm's variables, since mclaunch
//!   may itself run inside `salloc` or a batch script.
//! * **a Slurm job step** (`SLURM_STEP_ID` and `SLURM_PROCID` set, as srun
//!   sets them in every task; a batch script or an `salloc` shell has no
//!   `SLURM_STEP_ID` and runs as a single rank, as before): rank
//!   `SLURM_PROCID`, size `SLURM_STEP_NUM_TASKS` (else `SLURM_NTASKS`, else
//!   `SLURM_NPROCS`), `SLURM_LOCALID`, `SLURM_NODEID`, the node list
//!   `SLURM_STEP_NODELIST` (expanded with [`crate::hostlist::expand`]),
//!   `SLURM_JOB_ID`, `SLURM_STEP_ID`.
//!   - With `PMI_FD` (`srun --mpi=pmi2`: Slurm also sets `PMI_RANK`,
//!     `PMI_SIZE`, `PMI_JOBID` such as `12.0`), the job meets through PMI-2
//!     ([`Bootstrap::Pmi2`], `crate::pmi2`).
//!   - Without it, a step of one task runs as a single rank; in a step of
//!     more, task 0 serves a rendezvous on the step's first node at a port
//!     derived from the job and step ids ([`rendezvous_port`];
//!     `MCAST_RENDEZVOUS_PORT` overrides) and every task registers there
//!     ([`Bootstrap::Rendezvous`]), with a token derived from the job, the
//!     step and `SLURM_JOB_UID`: not secret.
//! * **mpirun / mpiexec** (Open MPI's `OMPI_COMM_WORLD_SIZE`, or Hydra's
//!   `PMI_SIZE` / `PMI_RANK` without a Slurm step) with more than one process:
//!   refused with an error saying to use mclaunch or srun; never N jobs of
//!   size 1. With one process it is a single rank.
//! * otherwise: a single rank.

use std::net::IpAddr;

use crate::error::Error;

/// The port of the rendezvous under plain `srun` (else [`rendezvous_port`]).
pub const ENV_RENDEZVOUS_PORT: &str = "MCAST_RENDEZVOUS_PORT";

/// How the ranks of a Slurm step meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bootstrap {
    /// Through the PMI-2 socket Slurm's step daemon gave this task.
    Pmi2 {
        /// `PMI_FD`: the inherited socket.
        fd: i32,
        /// `PMI_JOBID` (Slurm: `JOB.STEP`).
        jobid: String,
    },
    /// Without PMI, more than one task (plain `srun`): task 0 serves a
    /// rendezvous (`crate::rendezvous`) at `host:port`, the step's first
    /// node, and every task registers there with `token`.
    Rendezvous {
        host: String,
        port: u16,
        /// Derived from the job, the step and the job's uid: it tells jobs
        /// apart, but it is not secret (`srun --mpi=pmi2` gives a random one).
        token: String,
    },
    /// A step of a single task: nobody to meet.
    Alone,
}

/// The rendezvous ports of plain `srun` steps: `BASE..BASE + SPAN`, below
/// Linux's ephemeral ports (32768 on).
const PORT_BASE: u64 = 20000;
const PORT_SPAN: u64 = 12000;
/// Steps of one job get distinct ports for this many step ids.
const PORT_STEPS: u64 = 16;

/// The port task 0 of step `step` of job `job` serves its rendezvous on,
/// when `MCAST_RENDEZVOUS_PORT` does not say: `20000 + (16 job + step) mod
/// 12000`, so consecutive jobs and a job's first 16 steps differ.
pub fn rendezvous_port(job: u64, step: u64) -> u16 {
    let k = job.wrapping_mul(PORT_STEPS).wrapping_add(step) % PORT_SPAN;
    (PORT_BASE + k) as u16
}

/// Where this task sits in a Slurm job step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmStep {
    pub rank: usize,
    pub size: usize,
    /// Rank among the step's tasks on this node (`SLURM_LOCALID`).
    pub local_rank: usize,
    /// Index of this node in `nodes` (`SLURM_NODEID`).
    pub node_index: usize,
    /// The step's nodes, expanded (`SLURM_STEP_NODELIST`).
    pub nodes: Vec<String>,
    pub job_id: String,
    pub step_id: String,
    /// The address of the host srun runs on (`SLURM_LAUNCH_NODE_IPADDR`, else
    /// `SLURM_SRUN_COMM_HOST`), which every node of the step can reach.
    pub launch_host: Option<IpAddr>,
    pub bootstrap: Bootstrap,
}

/// How this process was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// By mclaunch (`MCAST_RANK` set): `config::JobEnv` says the rest.
    Mclaunch,
    /// As task of a Slurm job step.
    Slurm(SlurmStep),
    /// On its own: a single rank.
    Single,
}

/// Decide how this process was started. Errors name what was found and
/// what to do.
pub fn detect(get: &impl Fn(&str) -> Option<String>) -> Result<Launch, Error> {
    if get("MCAST_RANK").is_some() {
        return Ok(Launch::Mclaunch);
    }
    // Before Slurm's variables: under Slurm, Open MPI's daemons are srun
    // tasks, and their processes inherit the daemons' step variables.
    mpi_launcher(get, "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun")?;
    let num = |k: &str| -> Result<Option<usize>, Error> {
        get(k)
            .map(|v| {
                v.trim().parse::<usize>().map_err(|_| {
                    Error::InvalidArgument(format!("{k}={v}: expected a non-negative integer"))
                })
            })
            .transpose()
    };
    if let (Some(step_id), Some(rank)) = (get("SLURM_STEP_ID"), num("SLURM_PROCID")?) {
        let size = match num("SLURM_STEP_NUM_TASKS")? {
            Some(n) => n,
            None => match num("SLURM_NTASKS")? {
                Some(n) => n,
                None => num("SLURM_NPROCS")?.unwrap_or(1),
            },
        };
        if size == 0 || rank >= size {
            return Err(Error::InvalidArgument(format!(
                "Slurm task SLURM_PROCID={rank} is not below the step's {size} tasks"
            )));
        }
        let nodes = match get("SLURM_STEP_NODELIST").or_else(|| get("SLURM_JOB_NODELIST")) {
            Some(list) => crate::hostlist::expand(&list)
                .map_err(|e| Error::InvalidArgument(format!("SLURM_STEP_NODELIST={list}: {e}")))?,
            None => Vec::new(),
        };
        let launch_host = get("SLURM_LAUNCH_NODE_IPADDR")
            .or_else(|| get("SLURM_SRUN_COMM_HOST"))
            .and_then(|h| h.trim().parse().ok());
        let bootstrap = match get("PMI_FD") {
            Some(fd) => {
                let fd = fd
                    .trim()
                    .parse::<i32>()
                    .ok()
                    .filter(|&f| f >= 0)
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!("PMI_FD={fd}: not a file descriptor"))
                    })?;
                if let Some(r) = num("PMI_RANK")? {
                    if r != rank {
                        return Err(Error::InvalidArgument(format!(
                            "PMI_RANK={r} but SLURM_PROCID={rank}"
                        )));
                    }
                }
                Bootstrap::Pmi2 {
                    fd,
                    jobid: get("PMI_JOBID").unwrap_or_default(),
                }
            }
            None if size == 1 => Bootstrap::Alone,
            None => {
                let node = num("SLURM_NODEID")?.unwrap_or(0);
                srun_rendezvous(get, &step_id, (rank, node), size, &nodes)?
            }
        };
        return Ok(Launch::Slurm(SlurmStep {
            rank,
            size,
            local_rank: num("SLURM_LOCALID")?.unwrap_or(0),
            node_index: num("SLURM_NODEID")?.unwrap_or(0),
            nodes,
            job_id: get("SLURM_JOB_ID").unwrap_or_default(),
            step_id,
            launch_host,
            bootstrap,
        }));
    }
    mpi_launcher(get, "PMI_SIZE", "mpiexec (PMI_SIZE is set)")?;
    Ok(Launch::Single)
}

/// Plain `srun` with `size` tasks: the rendezvous task 0 serves on the
/// step's first node (where Slurm puts task 0), at `MCAST_RENDEZVOUS_PORT`
/// or [`rendezvous_port`]. Errors say what was tried.
fn srun_rendezvous(
    get: &impl Fn(&str) -> Option<String>,
    step_id: &str,
    (rank, node_index): (usize, usize),
    size: usize,
    nodes: &[String],
) -> Result<Bootstrap, Error> {
    let what = format!("mcast: started by srun with {size} tasks without PMI-2 (PMI_FD is unset)");
    let job_id = get("SLURM_JOB_ID").unwrap_or_default();
    let number = |k: &str, v: &str| {
        v.trim().parse::<u64>().map_err(|_| {
            Error::InvalidArgument(format!(
                "{what}: {k}={v:?} is not a number, so no rendezvous port derives from it: \
                 set {ENV_RENDEZVOUS_PORT}, or run srun --mpi=pmi2"
            ))
        })
    };
    let port = match get(ENV_RENDEZVOUS_PORT) {
        Some(p) => p
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("{what}: {ENV_RENDEZVOUS_PORT}={p} is not a port"))
            })?,
        None => rendezvous_port(
            number("SLURM_JOB_ID", &job_id)?,
            number("SLURM_STEP_ID", step_id)?,
        ),
    };
    let host = nodes.first().cloned().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{what}: SLURM_STEP_NODELIST is unset, so the step's first node (where task 0 \
             serves the rendezvous) is unknown; run srun --mpi=pmi2"
        ))
    })?;
    if rank == 0 && node_index != 0 {
        return Err(Error::InvalidArgument(format!(
            "{what}: task 0 runs on node {node_index} of the step, not on its first node \
             {host}, where the others look for its rendezvous; run srun --mpi=pmi2"
        )));
    }
    let uid = get("SLURM_JOB_UID").unwrap_or_default();
    Ok(Bootstrap::Rendezvous {
        host,
        port,
        token: format!("srun-{job_id}.{step_id}-uid{uid}"),
    })
}

/// Refuse a start by an MPI launcher (`by`) whose size variable `var` says
/// more than one process. A value that is not a number is someone else's
/// business: ignored.
fn mpi_launcher(get: &impl Fn(&str) -> Option<String>, var: &str, by: &str) -> Result<(), Error> {
    match get(var).and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(n) if n > 1 => Err(Error::InvalidArgument(format!(
            "mcast: started by {by} with {var}={n}: mcast programs do not \
             join MPI launchers' jobs; launch mcast programs with mclaunch or \
             srun --mpi=pmi2"
        ))),
        _ => Ok(()),
    }
}

impl SlurmStep {
    /// The address peers should reach this task toward: the host srun runs
    /// on, else the step's first node if it is written as an address.
    /// (Resolving a node name is left to the caller's resolver.)
    pub fn toward(&self) -> Option<IpAddr> {
        self.launch_host
            .or_else(|| self.nodes.first().and_then(|n| n.parse().ok()))
    }
}

#[cfg(test)]
mod tests;
