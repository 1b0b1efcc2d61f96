//! mclaunch inside a Slurm allocation (an `salloc` shell or command, a
//! batch script), as Open MPI's `mpirun` does it: with no `--hostfile` or
//! `--host`, the hosts are the allocation's nodes (`SLURM_JOB_NODELIST`,
//! expanded with [`mcast::hostlist::expand`]), each with as many slots as
//! Slurm gave it tasks (`SLURM_TASKS_PER_NODE`, else
//! `SLURM_JOB_CPUS_PER_NODE`, else 1), and the proxies are started with
//! `srun` ([`crate::spec::LaunchAgent::Srun`]).
//!
//! Pure: an environment lookup in, the hosts out.

use std::ffi::OsString;
use std::fmt;

use crate::error::LaunchError;
use crate::hosts::HostSlots;

/// The job's id; set in an allocation and in its steps.
pub const ENV_JOB_ID: &str = "SLURM_JOB_ID";
/// The allocation's nodes, in Slurm's hostlist form (`h[1-3]`).
pub const ENV_JOB_NODELIST: &str = "SLURM_JOB_NODELIST";
/// Set only inside a job step (a task started by `srun`).
pub const ENV_STEP_ID: &str = "SLURM_STEP_ID";
/// Tasks per node, compressed (`2(x3)`, `3(x2),1`).
pub const ENV_TASKS_PER_NODE: &str = "SLURM_TASKS_PER_NODE";
/// CPUs per node, in the same form; the fallback for the slots.
pub const ENV_JOB_CPUS_PER_NODE: &str = "SLURM_JOB_CPUS_PER_NODE";

/// A malformed per-node count list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountsError(String);

impl fmt::Display for CountsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CountsError {}

/// The most nodes a count list may describe (as many as a hostlist may name).
const MAX_NODES: u64 = mcast::hostlist::MAX_NAMES;

/// Expand Slurm's compressed per-node counts: comma-separated items, each
/// `N` (one node) or `N(xM)` (M nodes of N each): `2(x3)` is `[2, 2, 2]`,
/// `3(x2),1` is `[3, 3, 1]`. Every count is at least 1.
pub fn parse_counts(s: &str) -> Result<Vec<u32>, CountsError> {
    let bad = |why: &str| CountsError(format!("{s:?}: {why}"));
    let mut out = Vec::new();
    for item in s.trim().split(',') {
        let item = item.trim();
        let (count, repeat) = match item.split_once('(') {
            None => (item, 1u64),
            Some((count, rest)) => {
                let times = rest
                    .strip_prefix('x')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| bad("expected N or N(xM)"))?;
                let times: u64 = times
                    .parse()
                    .map_err(|_| bad(&format!("{times:?} is not a repeat count")))?;
                (count, times)
            }
        };
        let count: u32 = count
            .parse()
            .map_err(|_| bad(&format!("{count:?} is not a count")))?;
        if count == 0 || repeat == 0 {
            return Err(bad("a count of 0"));
        }
        if out.len() as u64 + repeat > MAX_NODES {
            return Err(bad(&format!("more than {MAX_NODES} nodes")));
        }
        out.extend(std::iter::repeat_n(count, repeat as usize));
    }
    Ok(out)
}

/// The hosts and slots of the Slurm allocation this process runs in, or
/// `None` when it runs in none: `SLURM_JOB_ID` and `SLURM_JOB_NODELIST`
/// set, and no `SLURM_STEP_ID` (a task of a step is not the place to start
/// a job of its own). A malformed list is an error naming the variable.
pub fn allocation(
    get: &impl Fn(&str) -> Option<OsString>,
) -> Result<Option<Vec<HostSlots>>, LaunchError> {
    let var = |k: &str| get(k).map(|v| v.to_string_lossy().into_owned());
    if var(ENV_JOB_ID).is_none() || var(ENV_STEP_ID).is_some() {
        return Ok(None);
    }
    let Some(list) = var(ENV_JOB_NODELIST) else {
        return Ok(None);
    };
    let names = mcast::hostlist::expand(&list)
        .map_err(|e| LaunchError::Usage(format!("{ENV_JOB_NODELIST}={list}: {e}")))?;
    if names.is_empty() {
        return Err(LaunchError::Usage(format!(
            "{ENV_JOB_NODELIST}={list:?} names no node"
        )));
    }
    let from = [ENV_TASKS_PER_NODE, ENV_JOB_CPUS_PER_NODE]
        .into_iter()
        .find_map(|k| var(k).map(|v| (k, v)));
    let slots = match from {
        None => vec![1; names.len()],
        Some((k, v)) => {
            let counts = parse_counts(&v).map_err(|e| LaunchError::Usage(format!("{k}: {e}")))?;
            if counts.len() != names.len() {
                return Err(LaunchError::Usage(format!(
                    "{k}={v} gives {} nodes, {ENV_JOB_NODELIST}={list} {}",
                    counts.len(),
                    names.len()
                )));
            }
            counts
        }
    };
    Ok(Some(
        names
            .into_iter()
            .zip(slots)
            .map(|(name, slots)| HostSlots {
                name,
                slots,
                explicit_slots: true,
                max_slots: None,
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env as env;

    fn slots(hosts: &[HostSlots]) -> Vec<(&str, u32)> {
        hosts.iter().map(|h| (h.name.as_str(), h.slots)).collect()
    }

    #[test]
    fn counts() {
        assert_eq!(parse_counts("2(x3)").unwrap(), [2, 2, 2]);
        assert_eq!(parse_counts("2,1").unwrap(), [2, 1]);
        assert_eq!(parse_counts("3(x2),1").unwrap(), [3, 3, 1]);
        assert_eq!(parse_counts("1,4(x1),2(x2)").unwrap(), [1, 4, 2, 2]);
        assert_eq!(parse_counts("16").unwrap(), [16]);
        for bad in [
            "",
            "x",
            "0",
            "2(x0)",
            "2(3)",
            "2(x3",
            "(x3)",
            "-1",
            "2,,1",
            "2(xx)",
            "2(x3)4",
            "2(x99999999999)",
        ] {
            assert!(parse_counts(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn an_allocation_gives_its_nodes_and_tasks() {
        let get = env(&[
            ("SLURM_JOB_ID", "21"),
            ("SLURM_JOB_NODELIST", "h[1-3]"),
            ("SLURM_TASKS_PER_NODE", "2(x2),1"),
            ("SLURM_JOB_CPUS_PER_NODE", "4(x3)"),
        ]);
        let hosts = allocation(&get).unwrap().unwrap();
        assert_eq!(slots(&hosts), [("h1", 2), ("h2", 2), ("h3", 1)]);
        assert!(hosts
            .iter()
            .all(|h| h.explicit_slots && h.max_slots.is_none()));
    }

    #[test]
    fn slots_fall_back_to_cpus_then_one() {
        let cpus = env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_JOB_NODELIST", "n1,n2"),
            ("SLURM_JOB_CPUS_PER_NODE", "8,4"),
        ]);
        assert_eq!(
            slots(&allocation(&cpus).unwrap().unwrap()),
            [("n1", 8), ("n2", 4)]
        );
        let bare = env(&[("SLURM_JOB_ID", "7"), ("SLURM_JOB_NODELIST", "n[1-2]")]);
        assert_eq!(
            slots(&allocation(&bare).unwrap().unwrap()),
            [("n1", 1), ("n2", 1)]
        );
    }

    #[test]
    fn no_allocation_outside_one_or_inside_a_step() {
        assert!(allocation(&env(&[])).unwrap().is_none());
        let no_list = env(&[("SLURM_JOB_ID", "7")]);
        assert!(allocation(&no_list).unwrap().is_none());
        let step = env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_JOB_NODELIST", "h1"),
            ("SLURM_STEP_ID", "0"),
        ]);
        assert!(allocation(&step).unwrap().is_none());
    }

    #[test]
    fn malformed_allocations_name_the_variable() {
        let cases = [
            ("h[1-", "2", "SLURM_JOB_NODELIST"),
            ("h[1-3]", "2(x2)", "SLURM_TASKS_PER_NODE"),
            ("h[1-3]", "two", "SLURM_TASKS_PER_NODE"),
        ];
        for (list, tasks, var) in cases {
            let get = env(&[
                ("SLURM_JOB_ID", "7"),
                ("SLURM_JOB_NODELIST", list),
                ("SLURM_TASKS_PER_NODE", tasks),
            ]);
            match allocation(&get) {
                Err(LaunchError::Usage(m)) => assert!(m.contains(var), "{m}"),
                other => panic!("{list} {tasks}: {other:?}"),
            }
        }
    }
}
