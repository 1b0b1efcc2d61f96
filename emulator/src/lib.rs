//! mcast-emulator: drivers that run mcast's sans-IO engines without sockets.
//!
//! So far: [`lockstep`], a discrete-event driver that runs the real smart-NI
//! engine ([`mcast::engine::NiEngine`]) of every rank in the paper's unit-step
//! time model ([Sivaram 1998, §4.3.2, Fig 8; §4.3.2–4.3.3, derived]; the pure model itself is
//! [`mcast_algorithms::unitstep`]), and [`plan`], the planning half of
//! the `mcsim` binary (`mcsim plan`).
//!
//! The switch emulator and the discrete-event simulator:
//! * [`cost`]: the cost model, the papers' presets and the BookSim-style
//!   `key = value` parser;
//! * [`switch`]: the sans-IO switch engine (input-buffered virtual
//!   cut-through, VCs with the dateline classes, credits, asynchronous
//!   replication) and the routing functions of every fabric, which decode the
//!   unicast, SSR, multi-drop, bit-string, path-worm and MIN region headers
//!   with the `mcast-algorithms` codecs;
//! * [`sim`]: the discrete-event driver of those engines and the hosts' NIs
//!   (`mcsim run`: single multicasts on the real NI engine or with worms;
//!   `mcsim load`: load sweeps with BookSim's phases and a deadlock
//!   watchdog).
//!
//! [`fabric`] is the socket fabric (`mclaunch --fabric`): the same switch
//! engines, one tokio task per switch, real sockets on every link, ranks on
//! loopback TCP host ports.
//!
//! [`plan::path`] answers `mcsim plan` for the path-based (UTPR) worm
//! planners on unidirectional tori; [`model_sci`] is `mcsim model sci`, the
//! SCI-torus paper's latency models.
//!
//! [`plan::mesh`] answers `mcsim plan` for the Qualified Groups paper's mesh
//! schemes and the two-pass MIN multicast; `mcsim model min` is the MIN
//! paper's throughput model ([`mcast_algorithms::min::model`]).
//!
//! [`repro`] is `mcsim repro`: each paper's evaluation rerun on the
//! simulator, figures (CSV, SVG through the shared [`repro::plot`] module)
//! and a verdict per claim.

pub mod cost;
pub mod lockstep;
pub mod model_sci;
pub mod plan;
pub mod repro;
pub mod sim;
pub mod socket_fabric;
pub mod switch;
