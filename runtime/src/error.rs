//! The runtime's error type.

use std::time::Duration;

/// Everything a collective or the bootstrap can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A peer's connection broke without an orderly goodbye: the rank died.
    #[error("rank {rank} was lost: {reason}")]
    PeerLost { rank: usize, reason: String },
    /// A wait inside an operation exceeded the configured bound.
    #[error("{op} timed out after {after:?} ({detail})")]
    Timeout {
        op: String,
        after: Duration,
        detail: String,
    },
    /// Ranks called the same collective with incompatible arguments, or
    /// different collectives at the same point; `detail` says what differed.
    #[error("argument mismatch in {op}: {detail}")]
    Mismatch { op: String, detail: String },
    /// The caller passed an argument that can never be valid.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A peer or the launcher sent something that violates the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The runtime was shut down (or its NI runtime stopped) while in use.
    #[error("runtime stopped: {0}")]
    Stopped(String),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The rank this error names, if any.
    pub fn rank(&self) -> Option<usize> {
        match self {
            Error::PeerLost { rank, .. } => Some(*rank),
            _ => None,
        }
    }
}

impl Clone for Error {
    fn clone(&self) -> Self {
        match self {
            Error::PeerLost { rank, reason } => Error::PeerLost {
                rank: *rank,
                reason: reason.clone(),
            },
            Error::Timeout { op, after, detail } => Error::Timeout {
                op: op.clone(),
                after: *after,
                detail: detail.clone(),
            },
            Error::Mismatch { op, detail } => Error::Mismatch {
                op: op.clone(),
                detail: detail.clone(),
            },
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::Protocol(s) => Error::Protocol(s.clone()),
            Error::Stopped(s) => Error::Stopped(s.clone()),
            Error::Io(e) => Error::Io(std::io::Error::new(e.kind(), e.to_string())),
        }
    }
}
