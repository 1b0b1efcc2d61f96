//! `--bind-to core`: each rank of a host on a CPU of its own, round-robin
//! over the CPUs the process that starts it (mclaunch, or the host's proxy)
//! may run on, as Open MPI's `mpirun --bind-to core` and Hydra's
//! `-bind-to core` do. The default is `none` (the scheduler places the
//! ranks), which is also what Open MPI does when a host is oversubscribed.
//!
//! The CPU is chosen before the rank is forked and set in the child before
//! it runs the program (`sched_setaffinity`), so every thread the rank
//! starts inherits it.

use std::fmt;
use std::str::FromStr;

/// The environment variable that gives `--bind-to` when it is not on the
/// command line (as Open MPI's `OMPI_MCA_hwloc_base_binding_policy`).
pub const ENV_BIND_TO: &str = "MCAST_BIND_TO";

/// Where ranks run on their host (`--bind-to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BindTo {
    /// Anywhere the scheduler puts them.
    #[default]
    None,
    /// One CPU each, round-robin over the launcher's CPUs.
    Core,
}

impl FromStr for BindTo {
    type Err = String;
    /// `none` or `core`, in any case.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(BindTo::None),
            "core" => Ok(BindTo::Core),
            _ => Err(format!("--bind-to {s}: none or core")),
        }
    }
}

impl fmt::Display for BindTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BindTo::None => "none",
            BindTo::Core => "core",
        })
    }
}

/// The CPUs this process may run on, in increasing order (empty if the
/// kernel will not say).
pub use mcast::placement::allowed_cpus;

/// The CPU of the `local`-th rank started on this host (0-based), under
/// `bind`: round-robin over `cpus`; `None` unbound (or no CPU known).
pub fn cpu_for(bind: BindTo, cpus: &[usize], local: usize) -> Option<usize> {
    match bind {
        BindTo::None => None,
        BindTo::Core if cpus.is_empty() => None,
        BindTo::Core => Some(cpus[local % cpus.len()]),
    }
}

/// The set holding only `cpu`, made before the fork (the child only
/// installs it, with [`bind_self`]).
pub(crate) use mcast::placement::cpu_set;

/// Bind the calling process to `set` (between fork and exec: one system
/// call, async-signal-safe).
pub(crate) use mcast::placement::set_mask as bind_self;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_go_round_robin_over_the_allowed_cpus() {
        let cpus = [2, 3, 5];
        let got: Vec<_> = (0..7).map(|l| cpu_for(BindTo::Core, &cpus, l)).collect();
        assert_eq!(
            got,
            [2, 3, 5, 2, 3, 5, 2].map(Some).to_vec(),
            "oversubscribed ranks share CPUs in turn"
        );
        assert_eq!(cpu_for(BindTo::None, &cpus, 1), None);
        assert_eq!(cpu_for(BindTo::Core, &[], 1), None);
    }

    #[test]
    fn bind_to_parses_as_open_mpi_spells_it() {
        assert_eq!("core".parse(), Ok(BindTo::Core));
        assert_eq!("None".parse(), Ok(BindTo::None));
        assert!("socket"
            .parse::<BindTo>()
            .unwrap_err()
            .contains("none or core"));
        assert!(!allowed_cpus().is_empty(), "this process may run somewhere");
    }
}
