//! Multicast in a wrap-around multistage interconnection network (MIN) with a
//! fixed-size region header and two passes
//! [Park 1996].
//!
//! * [`header`]: the 2n-bit (min, max) region header, its byte codec and the
//!   switch's split [`decide`];
//! * [`network`]: the 2^n-node MIN of 2×2 replicating SEs ([`Min`]), with the
//!   paper's wiring (Definition 1: shuffle into the first stage, butterflies
//!   between stages) or the omega wiring; [`Min::trace`] follows one packet,
//!   [`Min::wave`] runs one lock-step pass of several packets under
//!   upper-input-first (or random) arbitration and records the wait-for graph;
//! * [`twopass`]: the two-pass multicast through f consecutive relays and its
//!   oracle ([`check_two_pass`]);
//! * [`model`]: the throughput model, Eqs. (1)–(2), η and the copy rates;
//! * [`slotted`]: a slot-synchronous Monte-Carlo of the unbuffered MIN
//!   (drop on block, all-or-nothing loser) to check the model against.
//!
//! Nothing here does I/O, and no public function panics on bad input.
//!
//! # Where the paper, our reading of it and the brief differ, and choices made
//! * The brief asks for an *omega* network; the paper's network is a
//!   broadcast banyan with the Definition 1 wiring ("results hold for all
//!   topologically equivalent networks"). [`Wiring::Banyan`] (the paper's, the
//!   default, needed for the link vectors of the tests) and [`Wiring::Omega`] are
//!   both provided; in both a packet from s enters stage i on input port s_i.
//! * The paper picks s "randomly"; a region header cannot wrap, so s is drawn
//!   from `0..=2^n − f` ([`Start::Seeded`]) or given ([`Start::Fixed`]).
//! * The source may not be a destination (the paper is silent).
//! * The paper calls a packet accepted only when all f copies arrive, but its
//!   η counts delivered copies / f [Park 1996, §4.2, Figs 6–7, derived]; [`model`] reproduces the
//!   formula as printed.
//! * The paper's Fig. 4 text says packet 15 requests both outputs at μ; the
//!   bit-level trace [Park 1996, §3.2, Fig 4] finds it needs one. The deadlock mechanism
//!   is the same; the tests use the trace.
//! * Eq. (1) is reproduced exactly only if the loser of an SE gets nothing
//!   when its request overlaps the winner's (all-or-nothing); [`Min::wave`]
//!   arbitrates that way.

pub mod header;
pub mod model;
pub mod network;
pub mod slotted;
pub mod twopass;

pub use header::{decide, MinHeaderError, RegionHeader, SeDecision};
pub use model::{copy_rates, throughput, CopyCase, ModelError, Throughput};
pub use network::{bit_reverse, Arbitration, Min, MinError, MinTrace, Wave, Wiring};
pub use slotted::{simulate, SlottedError, SlottedParams, SlottedResult};
pub use twopass::{check_two_pass, two_pass, MinSend, Start, TwoPassOracleError, TwoPassPlan};
