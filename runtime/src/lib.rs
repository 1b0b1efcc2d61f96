//! mcast: an MPI-like, multicast-centred collective runtime.

pub mod algorithm;
pub mod bootstrap;
pub mod config;
pub mod error;

pub use algorithm::Algorithm;
pub use config::{Config, Forwarding};
pub use error::Error;
