//! Paper 000, [Sivaram 1998]: multicast in irregular networks, NI-based
//! (FPFS k-binomial trees) against switch-based (SSR, multi-drop path and
//! bit-string tree worms), on `mcsim`'s simulator.
//!
//! Twenty claims: 1–5 in the unit-step model of §4, 6–10 on the worm
//! planners and the switch decoders over random draws (§5), 11–20 from the
//! simulations of §6 (Figs 19–28), the load experiments (claims 17–19) on
//! `mcsim load --scheme` ([`load`]).

use super::{Claim, FigureSpec, Grid, Paper, Results};

pub mod analytic;
pub mod claims;
pub mod experiments;
pub mod load;

pub use experiments::{Params, Single, Sizes};

/// The R values of Fig 19 [Sivaram 1998, §6.4.1].
pub const RS: [f64; 4] = [0.5, 1.0, 2.0, 5.0];

/// Paper 000's reproduction.
#[derive(Debug, Clone, Default)]
pub struct Paper000 {
    /// What the experiments depend on.
    pub params: Params,
}

impl Paper000 {
    /// Every figure of `grid`.
    pub fn all_figures(&self, grid: Grid) -> Vec<FigureSpec> {
        let s = Sizes::of(grid);
        let p = &self.params;
        let mut v = experiments::fig19(p, &s, &RS);
        v.push(experiments::r_sweep(p, &s));
        v.extend(experiments::fig20(p, &s));
        v.extend(experiments::figs21_25(p, &s));
        v.push(experiments::unicast_load(p, &s));
        v.extend(load::figures(p, &s, grid));
        let base = Single::new(p, &s);
        v.extend(analytic::correctness_figures(&base, &s));
        v
    }
}

impl Paper for Paper000 {
    fn number(&self) -> &'static str {
        "000"
    }

    fn key(&self) -> &'static str {
        "Sivaram 1998"
    }

    fn title(&self) -> &'static str {
        "Architectural Support for Efficient Multicasting in Irregular Networks"
    }

    fn figures(&self, grid: Grid) -> Vec<FigureSpec> {
        self.all_figures(grid)
    }

    fn claims(&self, r: &Results) -> Vec<Claim> {
        let mut v = match analytic::unit_step_claims() {
            Ok(v) => v,
            Err(e) => vec![Claim {
                id: 1,
                statement: "claims 1–5".into(),
                source: "[Sivaram 1998, §4]".into(),
                ours: e.clone(),
                verdict: super::Verdict::Differs,
                why: format!("the unit-step model failed: {e}"),
                figures: vec![],
            }],
        };
        v.extend(analytic::switch_claims(r));
        v.push(claims::c11(r));
        v.push(claims::c12(r));
        v.push(claims::c13(r));
        v.push(claims::c14(r));
        v.push(claims::c15(r));
        v.push(claims::c16(r));
        v.extend(load::claims(r));
        v.push(claims::c20(r));
        v
    }

    fn notes(&self) -> Vec<String> {
        let p = &self.params;
        [
            "* **Simulator.** `mcsim run`: input-buffered virtual cut-through switches (640-flit \
             buffers, 1-cycle routing, crossbar and link), the real smart-NI engine for the \
             NI-based trees, switch replication for the worms; cost preset `irregular` \
             (5 ns cycle, t_hs = t_hr = 1000 cycles, t_ns = t_nr = t_hs/R, 266 MB/s DMA, \
             1-byte flits, 128-flit packets) [Sivaram 1998, §6.2]."
                .to_string(),
            format!(
                "* **Draws.** Each point is the mean over random topologies (32 nodes on eight \
                 8-port switches, 80% connectivity unless the figure varies it) × destination \
                 sets with a random source, the same draws for every scheme; ± is the 95% \
                 confidence interval of the mean (Student t). Base seed {}.",
                p.seed
            ),
            "* **Latency** is the cycle the last destination's host has the whole message \
             (t_hr included), in µs. The paper does not define its metric; the OCR of its \
             figures is lost, so the axes are our reading: latency against the number of \
             destinations (Figs 19–20), against the varied parameter at a fixed number of \
             destinations otherwise [Sivaram 1998, §6.4]."
                .to_string(),
            format!(
                "* **Choices where the paper is silent.** {} destinations where the x axis is \
                 not the destination count; t_hs ∈ {{250, 1000, 4000}} cycles for Fig 20 \
                 (values not stated); 8–32 switches for Fig 23 (not stated); NI trees are \
                 k-binomial with Theorem 3's optimal k over the paper's host chain \
                 [Sivaram 1998, §4.3.3–4.3.4].",
                p.fixed_dests
            ),
            "* **Under load (Figs 26–28).** `mcsim load --scheme ni:kbinomial|path-lg|tree-worm`: \
             every host generates multicasts to 3 or 15 random destinations by a Bernoulli \
             process; the host CPU (t_hs per send step, t_hr per message received), the NI \
             (t_ns per copy, t_nr per packet) and the DMA engine are first-come-first-served \
             servers; NI-based relays forward each packet FPFS on the NI, path relays send \
             once their host has the whole message. At zero load each scheme's latency \
             equals `mcsim run`'s to the cycle (a unit test checks it). The x axis is the \
             effective applied load, degree × the load each source generates \
             [Sivaram 1998, §6.2]; accepted throughput counts flits delivered to \
             destination hosts, so it equals the offered load until a scheme saturates. \
             The paper's arrival process is not stated; 400 000 measured cycles after \
             100 000 of warm-up (the paper: at least 1 000 000 after 500 000), 4 random \
             topologies per point."
                .to_string(),
            "* **Paper over our reading of it.** The paper states the crossover of claim 15 \
             as \"beyond a message length of 512 flits\" [Sivaram 1998, §6.4.6]; the unicast \
             saturation of claim 20 (\"less than 0.18\") has no unit in the paper \
             [Sivaram 1998, §6.5]; we read it as flits/cycle/node. Its unicast load runs \
             charge the network only (no software overhead, no I/O bus), as that sentence \
             assumes. \
             Theorems 1–2 (claim 2) hold only for trees whose root has the most children, \
             as the paper says [Sivaram 1998, §4.3.2]; stated without that condition they \
             fail (a 16-node 3-binomial tree's root has one child, yet consecutive packets \
             complete 3 steps apart), so we check them under the paper's condition."
                .to_string(),
        ]
        .to_vec()
    }
}
