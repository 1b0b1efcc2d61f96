//! mcast: an MPI-like, multicast-centred collective runtime.
//!
//! ```no_run
//! let comm = mcast::init()?;
//! let mut buf = vec![0u8; 1024];
//! if comm.rank() == 0 { buf.fill(7); }
//! comm.bcast(0, &mut buf)?;
//! assert!(buf.iter().all(|&b| b == 7));
//! # Ok::<(), mcast::Error>(())
//! ```
//!
//! Layout: [`comm`] is the API; [`engine`] the sans-IO smart-NI engine;
//! [`wire`] the packet format; `net` the tokio driver and its transports
//! (socket mesh, fabric link); [`bootstrap`] the control plane with
//! mclaunch; [`config`] every `MCAST_*` setting. The modules form layers
//! without import cycles (ARCHITECTURE.md, "Layers (invariants)", checked by
//! `runtime/tests/layers.rs`).

pub mod algorithm;
pub mod bootstrap;
mod bufpool;
pub mod comm;
pub mod config;
pub mod control;
mod drive;
pub mod engine;
pub mod error;
pub mod fabric;
mod fasthash;
pub mod hostlist;
pub mod hostni;
mod inbox;
pub mod launched;
pub mod logging;
mod net;
pub mod netif;
mod outq;
pub mod placement;
pub mod pmi2;
pub mod quic;
pub mod rendezvous;
mod report;
pub mod ring;
mod shm;
mod shmfile;
mod sync;
mod tree_kind;
pub mod wire;
pub mod worms;

pub use algorithm::{Algorithm, Medium};
pub use comm::{init, Comm, Element, Link, Message, Op, Received, Request};
pub use config::{AllgatherAlgorithm, AllreduceAlgorithm, AlltoallAlgorithm, TreeAlgorithm};
pub use config::{Config, Forwarding, Transport};
pub use error::Error;
pub use fabric::ModelLatency;
pub use shm::{arena_prefix, ARENA_DIR, ARENA_PREFIX};
