//! Errors that stop mclaunch before any rank runs.

use std::fmt;
use std::io;

/// Why a job could not be set up.
///
/// Once ranks are running, every way the job can end is an
/// [`Outcome`](crate::Outcome) instead, so that teardown always happens.
/// `Display` gives the outer message and [`source`](std::error::Error::source)
/// the cause: print it as a chain (anyhow's `{:#}`).
#[derive(Debug)]
pub enum LaunchError {
    /// The command line (or an environment setting it refers to) is invalid.
    Usage(String),
    /// A resource mclaunch needs could not be set up (`what` says which).
    Setup {
        /// What mclaunch was doing, e.g. "cannot start the rendezvous server".
        what: String,
        /// The underlying failure.
        source: io::Error,
    },
}

impl LaunchError {
    pub(crate) fn setup(what: impl Into<String>, source: io::Error) -> Self {
        LaunchError::Setup {
            what: what.into(),
            source,
        }
    }

    /// The process exit code for this error: 2 for usage errors, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            LaunchError::Usage(_) => 2,
            LaunchError::Setup { .. } => 1,
        }
    }
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Usage(msg) => f.write_str(msg),
            LaunchError::Setup { what, .. } => f.write_str(what),
        }
    }
}

impl std::error::Error for LaunchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LaunchError::Usage(_) => None,
            LaunchError::Setup { source, .. } => Some(source),
        }
    }
}
