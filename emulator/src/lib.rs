//! mcast-emulator: drivers that run mcast's sans-IO engines without sockets.
//!
//! So far: [`unitstep`], a discrete-event driver that runs the real smart-NI
//! engine ([`mcast::engine::NiEngine`]) of every rank in the paper's unit-step
//! time model (digest 000 §4.4, §8.3). The switch engine, the cost model and the
//! socket fabric belong to the emulator issue.

pub mod unitstep;
