//! Paper 004, [Robinson 1994]: D. F. Robinson, "Scalable Multicast
//! Communication in Massively Parallel Computers" (PhD thesis, Michigan
//! State University): the all-port hypercube trees (U-cube, Maxport,
//! Combine, W-sort; §3.5) and the path-based multicasts of unidirectional
//! tori (S-torus, M_d-torus, M_u-torus(r) against the unicast-based
//! M_u-torus(2); §6.6), rerun on `mcsim`'s simulator.
//!
//! Ten claims: 1–5 from §3.5 (steps, nCUBE-2 costs, the 10-cube
//! simulation), 6–10 from §6.6 (rankings under high and low startup, 3D
//! against 2D, sensitivity to message length, link visits).

use super::{Claim, FigureSpec, Grid, Paper, Results};

pub mod claims;
pub mod experiments;

/// Paper 004's reproduction.
#[derive(Debug, Clone, Default)]
pub struct Paper004 {
    /// Base seed of the random destination sets.
    pub seed: u64,
}

impl Paper for Paper004 {
    fn number(&self) -> &'static str {
        "004"
    }

    fn key(&self) -> &'static str {
        "Robinson 1994"
    }

    fn title(&self) -> &'static str {
        "Scalable Multicast Communication in Massively Parallel Computers"
    }

    fn figures(&self, grid: Grid) -> Vec<FigureSpec> {
        experiments::all(self.seed, grid)
    }

    fn claims(&self, r: &Results) -> Vec<Claim> {
        let mut v = vec![
            claims::c1(r),
            claims::c2(r),
            claims::c3(r),
            claims::c4(r),
            claims::c5(r),
        ];
        v.extend(claims::c6_7(r));
        v.push(claims::c8(r));
        v.push(claims::c9(r));
        v.push(claims::c10(r));
        v
    }

    fn notes(&self) -> Vec<String> {
        [
            "* **Steps** (Figs 3.10–3.11): the planners of `mcast_algorithms::trees` on the \
             all-port step model (Model B: a node issues one unicast per step on each \
             channel, in order), source node 0, uniform random destination sets \
             [Robinson 1994, §3.5]."
                .to_string(),
            "* **Delays on the nCUBE-2's costs** (Figs 3.12–3.15): `mcsim run --algo \
             host:<tree>` on hypercube fabrics with the `ncube2` preset (t_S = 107 µs per \
             unicast sent, t_R = 80 µs per unicast received, 0.5 µs per byte): every \
             relay receives the whole 4096-byte message, then sends its unicasts one \
             t_S apart, on all its channels at once (all-port: `inject_ports` = n, each \
             injection on its own VC) [Robinson 1994, §3.2.4, §3.5]. The thesis measured the 5-cube on \
             the machine and simulated the 10-cube with MultiSim; both are our simulator \
             here."
                .to_string(),
            "* **Tori** (Figs 6.3–6.8): `mcsim run` path worms with intermediate \
             reception under R_UTPR on 64×64 and 16×16×16 unidirectional tori, presets \
             `high-startup` (τ_S = 95, τ_R = 75 µs) and `low-startup` (10, 8 µs), τ_n = \
             0.5 µs per flit, each message one packet of 8, 512 or 16384 flits, all-port \
             hosts (one injection channel per dimension); the \
             unicast-based baseline is M_u-torus(2) over the same routing; average latency \
             over the destinations, source node 0 [Robinson 1994, §6.6]. Every run of this \
             paper uses wormhole switching with 2-flit VC buffers, as the thesis assumes \
             (`switching = wormhole`)."
                .to_string(),
            "* **Draws.** Means with 95% intervals over random destination sets (the \
             thesis: 100 sets for steps, 20 on the nCUBE-2, 100 for the 10-cube, 400 for \
             the tori; our full grid uses 100, 20, 40 and 20)."
                .to_string(),
        ]
        .to_vec()
    }
}
