//! mcast-emulator: drivers that run mcast's sans-IO engines without sockets.
//!
//! So far: [`unitstep`], a discrete-event driver that runs the real smart-NI
//! engine ([`mcast::engine::NiEngine`]) of every rank in the paper's unit-step
//! time model (digest 000 §4.4, §8.3), and [`plan_json`], the planning half of
//! the `mcsim` binary (`mcsim plan`). The switch engine, the cost model and the
//! socket fabric belong to the emulator issue.

pub mod plan_json;
pub mod unitstep;
