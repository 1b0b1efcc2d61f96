//! The paper's metrics [Al-Dubai 2009, §4.1] under its contention-free latency
//! model (Definition 8, Eqs. 7, 9, 10, 13).
//!
//! # The latency model as read here
//! * A node that injects pays the start-up T_s (33 cycles) once per
//!   message-passing step, however many worms it injects in that step
//!   (all-port). The source first pays the algorithm's preparation time (DP 2,
//!   MP 2, CP 4, QG 16 cycles).
//! * A worm's header crosses one channel per β (1 cycle); the tail of an
//!   L-flit message reaches the destination at hop h at
//!   `start + T_s + β·(h + L)` (Eq. 7 per destination).
//! * CP's rounds of ψ worms are sequential (Eq. 13): round r+1 starts when
//!   round r's longest worm has delivered, i.e. after T_s + β(L + max hops).
//! * A QG representative re-injects once the whole message has arrived (the
//!   tail flit), paying T_s again (plus `rep_prep`, 0 by default: the paper
//!   says the representatives' preparation runs in parallel and does not
//!   charge it separately).
//!
//! With these rules Example B (tests/qg_examples.rs) gives DP 86, MP 74, CP 140 and QG
//! 139 cycles with zero preparation [Al-Dubai 2009, §3, §4.1, derived].
//!
//! # Metrics
//! * network-level latency: `max_d T_node(d)`;
//! * node-level latency: `T_node(d)` = arrival of the tail at d, from the
//!   multicast's start (time 0);
//! * jitter: the coefficient of variation SD/mean (population SD) of the
//!   node-level latencies of one multicast;
//! * link visits: channels traversed by all worms; additional traffic = link
//!   visits − |D| (the paper's "channels involved minus destinations").

use std::collections::HashMap;

use serde::Serialize;

use super::plan::{MeshAlgorithm, MeshPlan};

/// The contention-free cost model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeshCost {
    /// Start-up latency T_s (cycles).
    pub startup: f64,
    /// β: cycles per flit per channel.
    pub beta: f64,
    /// Message length L in flits.
    pub flits: f64,
    /// The source's preparation time; `None` = the paper's value for the
    /// algorithm.
    pub prep: Option<f64>,
    /// Extra preparation charged to every re-injecting node (QG
    /// representatives).
    pub rep_prep: f64,
}

impl MeshCost {
    /// The paper's parameters: T_s = 33, β = 1, the given L, the paper's
    /// preparation times.
    pub fn paper(flits: f64) -> MeshCost {
        MeshCost {
            startup: 33.0,
            beta: 1.0,
            flits,
            prep: None,
            rep_prep: 0.0,
        }
    }

    /// The preparation time charged for `algo`.
    pub fn prep_for(&self, algo: MeshAlgorithm) -> f64 {
        self.prep.unwrap_or(match algo {
            MeshAlgorithm::DualPath | MeshAlgorithm::MultiPath => 2.0,
            MeshAlgorithm::ColumnPath => 4.0,
            MeshAlgorithm::Qg { .. } => 16.0,
        })
    }
}

/// The metrics of one multicast.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Per destination (ascending id): node-level latency.
    pub arrivals: Vec<(usize, f64)>,
    /// Network-level latency (the last arrival).
    pub network_latency: f64,
    /// Mean node-level latency.
    pub mean_node_latency: f64,
    /// Coefficient of variation of the node-level latencies.
    pub cv: f64,
    /// Message-passing steps.
    pub phases: usize,
    /// Channels traversed.
    pub link_visits: usize,
    /// Link visits − |D|.
    pub additional_traffic: usize,
}

/// Evaluate a plan under the model. Sends are processed in phase order; a
/// send from a node that has not received yet (impossible for a plan that
/// passes [`super::check_plan`]) starts at time 0.
pub fn evaluate(plan: &MeshPlan, cost: &MeshCost) -> Metrics {
    let prep = cost.prep_for(plan.algorithm);
    let mut arrival: HashMap<usize, f64> = HashMap::new();
    // When each (node, phase) start-up begins.
    let mut start_of: HashMap<(usize, usize), f64> = HashMap::new();
    let mut source_clock = prep;
    let mut order: Vec<usize> = (0..plan.sends.len()).collect();
    order.sort_by_key(|&i| plan.sends[i].phase);
    let mut phase = 0;
    let mut phase_end_at_source = source_clock;
    for i in order {
        let s = &plan.sends[i];
        if s.phase != phase {
            phase = s.phase;
            source_clock = phase_end_at_source;
        }
        let start = *start_of.entry((s.from, s.phase)).or_insert_with(|| {
            if s.from == plan.source {
                source_clock
            } else {
                arrival.get(&s.from).copied().unwrap_or(0.0) + cost.rep_prep
            }
        });
        for (&d, &h) in s.delivers.iter().zip(&s.delivery_hops) {
            let t = start + cost.startup + cost.beta * (h as f64 + cost.flits);
            arrival.entry(d).or_insert(t);
        }
        if s.from == plan.source {
            let end = start + cost.startup + cost.beta * (s.hops() as f64 + cost.flits);
            phase_end_at_source = phase_end_at_source.max(end);
        }
    }
    let arrivals: Vec<(usize, f64)> = plan
        .destinations
        .iter()
        .map(|&d| (d, arrival.get(&d).copied().unwrap_or(f64::NAN)))
        .collect();
    let k = arrivals.len().max(1) as f64;
    let mean = arrivals.iter().map(|a| a.1).sum::<f64>() / k;
    let var = arrivals.iter().map(|a| (a.1 - mean).powi(2)).sum::<f64>() / k;
    Metrics {
        network_latency: arrivals.iter().map(|a| a.1).fold(0.0, f64::max),
        mean_node_latency: mean,
        cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        phases: plan.phases(),
        link_visits: plan.link_visits(),
        additional_traffic: plan.additional_traffic(),
        arrivals,
    }
}
