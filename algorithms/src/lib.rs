//! Pure multicast planning for mcast.
//!
//! Nothing in this crate does I/O. A planner takes an ordered chain of
//! participants (position 0 is the source) and returns, for every position, the
//! ordered list of children it sends to and the contiguous chain range each child
//! becomes responsible for. The same split function is what a smart NI evaluates
//! when a packet arrives, so a node needs nothing but the header to know what to
//! forward (DESIGN.md, idea 3).

pub mod kbinomial;
pub mod shape;

pub use kbinomial::{ceil_log2, l1, n_nodes, optimal_k};
pub use shape::{split, Shape, ShapeError};
