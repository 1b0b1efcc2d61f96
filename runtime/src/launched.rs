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
//!   - Without it, a step of one task runs as a single rank; a step of more
//!     fails here, naming what it tried: mcast has no rendezvous of its own
//!     under plain `srun` yet, and N separate jobs of one rank would be wrong.
//! * **mpirun / mpiexec** (Open MPI's `OMPI_COMM_WORLD_SIZE`, or Hydra's
//!   `PMI_SIZE` / `PMI_RANK` without a Slurm step) with more than one process:
//!   refused with an error saying to use mclaunch or srun; never N jobs of
//!   size 1. With one process it is a single rank.
//! * otherwise: a single rank.

use std::net::IpAddr;

use crate::error::Error;

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
    /// A step of a single task: nobody to meet.
    Alone,
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
                return Err(Error::InvalidArgument(format!(
                    "mcast: started by srun with {size} tasks but without PMI-2 \
                     (PMI_FD is unset): run srun --mpi=pmi2, or launch with mclaunch"
                )))
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
