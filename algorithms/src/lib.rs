//! Pure multicast planning for mcast.
//!
//! Nothing in this crate does I/O. A planner takes an ordered chain of
//! participants (position 0 is the source) and returns, for every position, the
//! ordered list of children it sends to and the contiguous chain range each child
//! becomes responsible for. The same split function is what a smart NI evaluates
//! when a packet arrives, so a node needs nothing but the header to know what to
//! forward (DESIGN.md, idea 3).
//!
//! * [`kbinomial`]: N(s,k), L1(n,k) and the optimal k of Theorem 3.
//! * [`shape`]: tree shapes and the one-level [`split`] an NI evaluates.
//! * [`chain_tree`]: a whole [`ChainTree`] over chain positions, built from `split`.
//! * [`plan`]: a [`Plan`] over real node ids (DESIGN.md idea 1).
//! * [`oracle`]: delivery and responsibility checks for any plan.
//! * [`unitstep`]: the unit-step FPFS/FCFS model of the paper's §4.
//! * [`path`]: path-based multicast with intermediate reception on
//!   unidirectional tori (R_UTPR, S-/M-torus worms, Fig 5.10, SCI models).
//! * [`mesh`]: Qualified Groups, dual-path, multipath and column-path worms
//!   on n-D meshes, with the paper's latency, jitter and traffic metrics.
//! * [`hosts`]: host-aware two-level trees (k-binomial among host leaders,
//!   binomial within each host) for jobs that span hosts.
//! * [`min`]: the wrap-around MIN — region header, switch split, two-pass
//!   multicast, upper-input-first arbitration and the throughput model.

#![warn(missing_docs)]

pub mod chain_tree;
pub mod contention;
pub mod hosts;
pub mod irregular;
pub mod kbinomial;
pub mod mesh;
pub mod min;
pub mod oracle;
pub mod path;
pub mod plan;
pub mod shape;
pub mod topo;
pub mod trees;
pub mod unitstep;

pub use chain_tree::{ChainTree, ChainTreeError};
pub use contention::{ContentionError, ContentionReport};
pub use kbinomial::{ceil_log2, l1, n_nodes, optimal_k};
pub use oracle::{check_delivery, check_responsibility, OracleError};
pub use plan::{Plan, PlanError};
pub use shape::{split, Shape, ShapeError};
pub use topo::{TopoError, TopoSpecError, Topology};
pub use trees::{Multicast, PlannerError, PortModel, TreeAlgorithm};
pub use unitstep::{simulate, Forwarding, Schedule};
