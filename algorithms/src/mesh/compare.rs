//! The QG versus DP / MP / CP comparison over random multicasts (the
//! contention-free part of the paper's §4.2.1–4.2.2): mean phases, link
//! visits, additional traffic, network-level latency and the per-multicast
//! coefficient of variation of arrival times, averaged over seeded random
//! (source, destination set) draws.

use serde::Serialize;

use super::grid::Mesh;
use super::metrics::{evaluate, MeshCost};
use super::plan::{plan, MeshAlgorithm};
use super::{check_plan, MeshError};
use crate::irregular::SplitMix64;

/// One (algorithm, k) cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The algorithm.
    pub algorithm: String,
    /// Destinations per multicast.
    pub k: usize,
    /// Multicasts averaged.
    pub sets: usize,
    /// Mean message-passing steps.
    pub phases: f64,
    /// Mean channels traversed.
    pub link_visits: f64,
    /// Mean additional traffic (link visits − k).
    pub additional_traffic: f64,
    /// Mean network-level latency (cycles).
    pub network_latency: f64,
    /// Mean per-multicast coefficient of variation of arrival times.
    pub cv: f64,
}

/// `sets` random multicasts of `k` destinations (uniform source, uniform
/// distinct destinations; seed `seed`), planned with every algorithm of
/// `algos` and checked by [`check_plan`].
///
/// # Errors
/// A [`MeshError`] if a planner refuses (k ≥ nodes, MP/CP off 2-D).
pub fn compare(
    mesh: &Mesh,
    algos: &[MeshAlgorithm],
    k: usize,
    sets: usize,
    seed: u64,
    cost: &MeshCost,
) -> Result<Vec<Row>, MeshError> {
    let n = mesh.nodes();
    if k == 0 || k >= n {
        return Err(MeshError::NoDestinations);
    }
    let mut rng = SplitMix64::new(seed);
    let mut draws = Vec::with_capacity(sets);
    for _ in 0..sets {
        let p = rng.below(n);
        let others: Vec<usize> = (0..n).filter(|&x| x != p).collect();
        draws.push((p, rng.sample(&others, k)));
    }
    let mut rows = Vec::new();
    for &algo in algos {
        let mut acc = [0.0f64; 5];
        for (p, d) in &draws {
            let pl = plan(mesh, algo, *p, d)?;
            debug_assert!(check_plan(mesh, &pl).is_ok());
            let m = evaluate(&pl, cost);
            acc[0] += m.phases as f64;
            acc[1] += m.link_visits as f64;
            acc[2] += m.additional_traffic as f64;
            acc[3] += m.network_latency;
            acc[4] += m.cv;
        }
        let s = sets.max(1) as f64;
        rows.push(Row {
            algorithm: algo.short().to_string(),
            k,
            sets,
            phases: acc[0] / s,
            link_visits: acc[1] / s,
            additional_traffic: acc[2] / s,
            network_latency: acc[3] / s,
            cv: acc[4] / s,
        });
    }
    Ok(rows)
}

/// The rows as a Markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| k | alg | phases | link visits | add. traffic | net latency | CV |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {:.2} | {:.1} | {:.1} | {:.1} | {:.3} |\n",
            r.k,
            r.algorithm,
            r.phases,
            r.link_visits,
            r.additional_traffic,
            r.network_latency,
            r.cv
        ));
    }
    out
}
