//! mclaunch: start the ranks of an mcast job, like `mpirun`.
//!
//! ```text
//! mclaunch -n N [--timeout SECS] [--rendezvous-timeout SECS] [--tag-output] [-x VAR[=VAL]]... PROGRAM [ARGS...]
//! ```
//!
//! mclaunch starts N local processes, each with `MCAST_RANK`, `MCAST_SIZE`,
//! `MCAST_RENDEZVOUS` and `MCAST_TOKEN` in its environment, serves the
//! rendezvous through which the ranks exchange data addresses
//! ([`mcast::bootstrap`]), optionally tags their output, and supervises them:
//! the first rank to fail stops the job, and mclaunch exits with that rank's
//! status. Nothing it started outlives it (process groups, `PR_SET_PDEATHSIG`,
//! and a guardian process that kills the groups if mclaunch is killed).
//!
//! The pieces: [`cli`] parses the command line into a [`JobSpec`]; [`run`]
//! executes a job and returns its [`Outcome`], whose
//! [`exit_code`](Outcome::exit_code) and [`message`](Outcome::message) are what
//! the binary reports.

#![warn(missing_docs)]

pub mod bind;
mod blame;
pub mod cli;
pub mod error;
mod guardian;
pub mod hosts;
pub mod output;
pub mod placement;
mod procs;
pub mod proxy;
mod remote;
mod rendezvous;
mod reports;
pub mod slurm;
pub mod spawn;
pub mod spec;
pub mod status;
mod supervisor;
pub mod token;

pub use cli::Cli;
pub use error::LaunchError;
pub use spec::{JobSpec, OutputMode, Placement};
pub use supervisor::{run, Outcome};

/// Print `mclaunch: {msg}` on stderr, ignoring failures (stderr may be closed).
pub fn note(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "mclaunch: {msg}");
}

/// An environment lookup over `pairs`, for tests of code that reads one.
#[cfg(test)]
pub(crate) fn test_env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<std::ffi::OsString> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    move |k| {
        pairs
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, b)| std::ffi::OsString::from(b))
    }
}
