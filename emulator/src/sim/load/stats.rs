//! The statistics of a load run, as BookSim keeps them: which packets are
//! measured (generated in the measurement window), the flits accepted in the
//! window, the measured packets' latencies, and when the drain is over.

use super::traffic::Dests;
use super::LoadConfig;
use crate::sim::SimulatorError;
use crate::switch::Time;

/// One generated packet's outstanding destinations.
struct Rec {
    gen: Time,
    /// The unicast destination not yet reached (u32::MAX: none or multicast).
    one: u32,
    /// Multicast destinations not yet reached.
    left: Vec<u32>,
    measured: bool,
    /// Sum and sum of squares of the destinations' latencies so far.
    sum: f64,
    sum2: f64,
    reached: u32,
    /// The largest latency so far (the message's, once done).
    max: Time,
}

impl Rec {
    /// Tick off `node`; false if it is not an outstanding destination.
    fn reach(&mut self, node: usize) -> bool {
        if self.one != u32::MAX {
            if self.one as usize == node {
                self.one = u32::MAX;
                return true;
            }
            return false;
        }
        match self.left.iter().position(|&d| d as usize == node) {
            Some(p) => {
                self.left.swap_remove(p);
                true
            }
            None => false,
        }
    }

    fn done(&self) -> bool {
        self.one == u32::MAX && self.left.is_empty()
    }
}

/// Warm-up / measure / drain accounting.
pub(super) struct Stats {
    /// The measurement window starts (the warm-up ends).
    start_measure: Time,
    /// The measurement window ends (the drain starts).
    pub(super) end_measure: Time,
    /// The drain gives up.
    hard_end: Time,
    flits: u64,
    recs: Vec<Rec>,
    pub(super) measured: u64,
    pub(super) measured_done: u64,
    lat_sum: u128,
    pub(super) lat_max: Time,
    delivered_flits: u64,
    /// Sum of the measured multicasts' coefficients of variation, and
    /// their number.
    cv_sum: f64,
    cv_n: u64,
}

impl Stats {
    /// The phases of `cfg`, packets of `flits` flits.
    pub(super) fn new(cfg: &LoadConfig, flits: u64) -> Stats {
        let start_measure = cfg.warmup;
        let end_measure = cfg.warmup + cfg.cycles;
        Stats {
            start_measure,
            end_measure,
            hard_end: end_measure + cfg.drain_max,
            flits,
            recs: Vec::new(),
            measured: 0,
            measured_done: 0,
            lat_sum: 0,
            lat_max: 0,
            delivered_flits: 0,
            cv_sum: 0.0,
            cv_n: 0,
        }
    }

    fn in_window(&self, at: Time) -> bool {
        (self.start_measure..self.end_measure).contains(&at)
    }

    /// A packet generated at `at` for `dests`: its id.
    pub(super) fn generated(&mut self, at: Time, dests: Dests) -> u64 {
        let id = self.recs.len() as u64;
        let measured = self.in_window(at);
        let (one, left) = match dests {
            Dests::One(d) => (d as u32, Vec::new()),
            Dests::Many(v) => (u32::MAX, v.iter().map(|&d| d as u32).collect()),
        };
        self.recs.push(Rec {
            gen: at,
            one,
            left,
            measured,
            sum: 0.0,
            sum2: 0.0,
            reached: 0,
            max: 0,
        });
        if measured {
            self.measured += 1;
        }
        id
    }

    /// Packet `id`'s tail reached host `node` at `at`: its flits count,
    /// and `node` has it.
    ///
    /// # Errors
    /// As [`Stats::reached`].
    pub(super) fn arrived(&mut self, id: u64, node: usize, at: Time) -> Result<(), SimulatorError> {
        self.flits_in(at, self.flits);
        self.reached(id, node, at)
    }

    /// `flits` flits reached a host at `at`.
    pub(super) fn flits_in(&mut self, at: Time, flits: u64) {
        if self.in_window(at) {
            self.delivered_flits += flits;
        }
    }

    /// Message `id` is complete at host `node` at `at`.
    ///
    /// # Errors
    /// [`SimulatorError::Internal`] for an unknown message or a host that is
    /// not an outstanding destination (the exactly-once check).
    pub(super) fn reached(&mut self, id: u64, node: usize, at: Time) -> Result<(), SimulatorError> {
        let Some(r) = self.recs.get_mut(id as usize) else {
            return Err(SimulatorError::Internal(format!(
                "unknown packet {id} delivered"
            )));
        };
        if !r.reach(node) {
            return Err(SimulatorError::Internal(format!(
                "packet {id} delivered to host {node}, which is not a destination \
                 or already has it"
            )));
        }
        let l = at.saturating_sub(r.gen);
        r.sum += l as f64;
        r.sum2 += (l as f64).powi(2);
        r.reached += 1;
        r.max = r.max.max(l);
        let l = r.max;
        if r.done() && r.measured {
            self.measured_done += 1;
            self.lat_sum += u128::from(l);
            self.lat_max = self.lat_max.max(l);
            if r.reached > 1 {
                let n = f64::from(r.reached);
                let mean = r.sum / n;
                let var = (r.sum2 / n - mean * mean).max(0.0);
                if mean > 0.0 {
                    self.cv_sum += var.sqrt() / mean;
                    self.cv_n += 1;
                }
            }
        }
        Ok(())
    }

    /// The run is over at `now`: every measured packet is delivered after
    /// the window, or the drain gave up.
    pub(super) fn finished(&self, now: Time) -> bool {
        (now >= self.end_measure && self.measured_done == self.measured) || now >= self.hard_end
    }

    /// Accepted throughput over the window, flits per cycle per host.
    pub(super) fn accepted(&self, hosts: usize, cycles: Time) -> f64 {
        self.delivered_flits as f64 / (hosts as f64 * cycles as f64)
    }

    /// The mean over the delivered measured multicasts (of two or more
    /// destinations) of the coefficient of variation (population SD / mean)
    /// of their destinations' latencies [Al-Dubai 2009, §4.1]; `None` if
    /// there were none.
    pub(super) fn mean_cv(&self) -> Option<f64> {
        (self.cv_n > 0).then(|| self.cv_sum / self.cv_n as f64)
    }

    /// Mean latency of the delivered measured packets (NaN if none).
    pub(super) fn mean_latency(&self) -> f64 {
        if self.measured_done > 0 {
            self.lat_sum as f64 / self.measured_done as f64
        } else {
            f64::NAN
        }
    }
}
