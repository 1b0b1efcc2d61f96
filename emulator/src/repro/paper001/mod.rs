//! Paper 001, [Park 1996]: J. Park and H. Yoon, "Performance Analysis of
//! Multistage Interconnection Networks using a Multicast Algorithm", §4:
//! the throughput model of the unbuffered wrap-around MIN (Eqs. 1–2,
//! `mcast_algorithms::min::model`) against a slotted Monte-Carlo of the
//! same network (`mcast_algorithms::min::slotted`), over the paper's n, f,
//! m and offered load (Figs 6–7).
//!
//! Every point of a "sim" series is the mean over draws of one slotted run
//! each (its own seed); "model" series are the equations (one draw, exact).

use super::{
    Claim, FigureMeta, FigureResult, FigureSpec, Grid, Paper, PointSpec, Results, Verdict,
};
use mcast_algorithms::min::{simulate, throughput, CopyCase, SlottedParams};

/// Offered loads of Fig 6 [Park 1996, §4.2].
pub const LOADS: [f64; 6] = [0.1, 0.2, 0.4, 0.6, 0.8, 1.0];

/// The (f, m) series of Fig 6 (n = 7, case A).
pub const FIG6_SERIES: [(u64, f64); 6] =
    [(1, 0.0), (2, 0.5), (4, 0.1), (4, 0.5), (4, 0.9), (8, 0.5)];

/// Paper 001's reproduction.
#[derive(Debug, Clone, Default)]
pub struct Paper001 {
    /// Base seed.
    pub seed: u64,
}

/// Sizes of a grid.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    draws: u32,
    /// Output-slots (N × slots) per draw.
    output_slots: u64,
    max_n: u32,
    fig7: &'static [(f64, u64)],
}

impl Sizes {
    fn of(grid: Grid) -> Sizes {
        match grid {
            Grid::Quick => Sizes {
                draws: 5,
                output_slots: 1 << 16,
                max_n: 7,
                fig7: &[(0.5, 4), (0.5, 8), (0.9, 4)],
            },
            Grid::Full => Sizes {
                draws: 10,
                output_slots: 1 << 18,
                max_n: 10,
                fig7: &[(0.1, 2), (0.5, 2), (0.5, 4), (0.5, 8), (0.9, 4), (0.9, 8)],
            },
        }
    }
}

fn case_name(c: CopyCase) -> &'static str {
    match c {
        CopyCase::RandomStart => "A",
        CopyCase::Early => "B",
    }
}

fn series(f: u64, m: f64, case: CopyCase, what: &str) -> String {
    if f == 1 {
        format!("f=1 {what}")
    } else {
        format!("f={f} m={m} {} {what}", case_name(case))
    }
}

#[derive(Clone, Copy)]
struct Point {
    n: u32,
    f: u64,
    m: f64,
    load: f64,
    case: CopyCase,
}

fn model_job(p: Point) -> PointSpec {
    PointSpec {
        series: String::new(),
        x: 0.0,
        draws: 1,
        job: Box::new(move |_| {
            throughput(p.n, p.f, p.m, p.load, p.case)
                .map(|t| t.eta)
                .map_err(|e| e.to_string())
        }),
    }
}

fn sim_job(p: Point, seed: u64, s: Sizes, strict: bool) -> PointSpec {
    let slots = s.output_slots.div_ceil(1u64 << p.n).max(1);
    PointSpec {
        series: String::new(),
        x: 0.0,
        draws: s.draws,
        job: Box::new(move |d| {
            let rho = p.load / ((1.0 - p.m) + p.m * p.f as f64);
            let r = simulate(&SlottedParams {
                n: p.n,
                f: p.f,
                m: p.m,
                rho,
                case: p.case,
                slots,
                seed: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    ^ (u64::from(d) << 32)
                    ^ (u64::from(p.n) << 24)
                    ^ (p.f << 8)
                    ^ ((p.m * 100.0) as u64)
                    ^ ((p.load * 1000.0) as u64) << 40
                    ^ u64::from(p.case == CopyCase::Early) << 60,
            })
            .map_err(|e| e.to_string())?;
            Ok(if strict { r.eta_strict } else { r.eta })
        }),
    }
}

fn at(mut ps: PointSpec, series: String, x: f64) -> PointSpec {
    ps.series = series;
    ps.x = x;
    ps
}

impl Paper001 {
    fn fig6(&self, s: Sizes) -> FigureSpec {
        let mut points = Vec::new();
        for &(f, m) in &FIG6_SERIES {
            for &load in &LOADS {
                let p = Point {
                    n: 7,
                    f,
                    m,
                    load,
                    case: CopyCase::RandomStart,
                };
                points.push(at(model_job(p), series(f, m, p.case, "model"), load));
                points.push(at(
                    sim_job(p, self.seed, s, false),
                    series(f, m, p.case, "sim"),
                    load,
                ));
            }
        }
        // The strict metric (all f copies delivered) for one series.
        for &load in &LOADS {
            let p = Point {
                n: 7,
                f: 4,
                m: 0.5,
                load,
                case: CopyCase::RandomStart,
            };
            points.push(at(
                sim_job(p, self.seed, s, true),
                series(4, 0.5, p.case, "strict sim"),
                load,
            ));
        }
        FigureSpec {
            meta: FigureMeta {
                id: "fig6".into(),
                title: "Fig 6: throughput vs offered load, n = 7, random start (A)".into(),
                x_label: "offered load L (copies per input per slot)".into(),
                y_label: "throughput η (packets per output per slot)".into(),
            },
            points,
        }
    }

    fn fig7(&self, s: Sizes) -> FigureSpec {
        let mut points = Vec::new();
        for &(m, f) in s.fig7 {
            for case in [CopyCase::RandomStart, CopyCase::Early] {
                for n in 3..=s.max_n {
                    let p = Point {
                        n,
                        f,
                        m,
                        load: 1.0,
                        case,
                    };
                    points.push(at(model_job(p), series(f, m, case, "model"), f64::from(n)));
                    points.push(at(
                        sim_job(p, self.seed, s, false),
                        series(f, m, case, "sim"),
                        f64::from(n),
                    ));
                }
            }
        }
        FigureSpec {
            meta: FigureMeta {
                id: "fig7".into(),
                title:
                    "Fig 7: throughput vs stages at L = 1.0, random start (A) and early copying (B)"
                        .into(),
                x_label: "stages n (2^n nodes)".into(),
                y_label: "throughput η (packets per output per slot)".into(),
            },
            points,
        }
    }
}

const SRC6: &str = "[Park 1996, §4.2, Fig 6]";
const SRC7: &str = "[Park 1996, §4.2, Fig 7]";

fn fig<'a>(r: &'a Results, id: &str) -> Result<&'a FigureResult, String> {
    r.get(id).ok_or_else(|| format!("figure {id} missing"))
}

fn missing(id: u32, statement: &str, source: &str, e: String) -> Claim {
    Claim {
        id,
        statement: statement.into(),
        source: source.into(),
        ours: e.clone(),
        verdict: Verdict::Differs,
        why: format!("could not evaluate: {e}"),
        figures: vec![],
    }
}

fn c1(r: &Results) -> Result<Claim, String> {
    let f6 = fig(r, "fig6")?;
    let s = f6.stat("f=1 sim", 1.0).ok_or("no f=1 point")?;
    let model = f6.mean("f=1 model", 1.0);
    let ok = (s.mean - 0.3271).abs() <= s.ci95.max(0.002) + 0.003 && (model - 0.3271).abs() < 5e-5;
    Ok(Claim {
        id: 1,
        statement: "With f = 1 the curve is identical to Patel's (n = 7, full load: 0.3271)".into(),
        source: SRC6.into(),
        ours: format!("model {model:.4}, sim {}", s.show(4)),
        verdict: Verdict::from_bool(ok),
        why: "with no copies Eq. (1) is ρ − ρ²/4 per stage, and the slotted network agrees".into(),
        figures: vec!["fig6".into()],
    })
}

fn c2(r: &Results) -> Result<Claim, String> {
    let f6 = fig(r, "fig6")?;
    let mut rising = true;
    let mut flattening = true;
    for &(f, m) in &FIG6_SERIES {
        let name = series(f, m, CopyCase::RandomStart, "sim");
        let v: Vec<f64> = LOADS.iter().map(|&l| f6.mean(&name, l)).collect();
        rising &= v.windows(2).all(|w| w[1] > w[0]);
        // Slope over the last step below the slope over the first.
        flattening &= (v[5] - v[4]) / 0.2 < (v[1] - v[0]) / 0.1;
    }
    Ok(Claim {
        id: 2,
        statement: "η rises with the offered load and saturates".into(),
        source: SRC6.into(),
        ours: format!("sim rising at every step: {rising}; slope at L = 1 below slope at L = 0.1: {flattening}"),
        verdict: Verdict::from_bool(rising && flattening),
        why: "more packets per slot, but more of them collide in the unbuffered stages".into(),
        figures: vec!["fig6".into()],
    })
}

fn c3(r: &Results) -> Result<Claim, String> {
    let f6 = fig(r, "fig6")?;
    let g = |f: u64, m: f64| f6.mean(&series(f, m, CopyCase::RandomStart, "sim"), 1.0);
    let (f1, f2, f4, f8) = (g(1, 0.0), g(2, 0.5), g(4, 0.5), g(8, 0.5));
    let (m1, m5, m9) = (g(4, 0.1), g(4, 0.5), g(4, 0.9));
    let ok = f1 > f2 && f2 > f4 && f4 > f8 && m1 > m5 && m5 > m9;
    Ok(Claim {
        id: 3,
        statement: "At fixed load η falls as f or m grows (Fig 6 varies f or m)".into(),
        source: SRC6.into(),
        ours: format!(
            "L = 1, m = 0.5: f = 1/2/4/8 → {f1:.4}/{f2:.4}/{f4:.4}/{f8:.4}; f = 4: m = 0.1/0.5/0.9 → {m1:.4}/{m5:.4}/{m9:.4}"
        ),
        verdict: Verdict::from_bool(ok),
        why: "η counts packets: a multicast takes f output slots, so fewer packets fit (the copies delivered per output rise)".into(),
        figures: vec!["fig6".into()],
    })
}

fn c4(r: &Results) -> Result<Claim, String> {
    let f7 = fig(r, "fig7")?;
    let mut worst = f64::INFINITY;
    let mut worst_at = String::new();
    let mut all = true;
    let mut ratio = String::new();
    for name in f7.series().iter().filter(|s| s.ends_with(" A sim")) {
        let b = name.replace(" A sim", " B sim");
        for n in f7.xs(name) {
            let (a, bb) = (f7.values(name, n), f7.values(&b, n));
            let d = super::stats::paired(&a, &bb).ok_or("unpaired")?;
            let f: f64 = name
                .split(' ')
                .next()
                .and_then(|t| t.strip_prefix("f="))
                .and_then(|t| t.parse().ok())
                .unwrap_or(0.0);
            if f == 2f64.powf(n) {
                continue; // f = N: both cases copy at every stage
            }
            if d.mean - d.ci95 <= 0.0 {
                all = false;
            }
            if d.mean < worst {
                worst = d.mean;
                worst_at = format!("{name} n = {n}");
            }
        }
        let xs = f7.xs(name);
        if let Some(&last) = xs.last() {
            ratio.push_str(&format!(
                "{}: A/B at n = {last}: {:.2}; ",
                name.trim_end_matches(" A sim"),
                f7.mean(name, last) / f7.mean(&b, last)
            ));
        }
    }
    Ok(Claim {
        id: 4,
        statement: "Random start address (A) outperforms copying as early as possible (B)".into(),
        source: SRC7.into(),
        ours: format!("sim A − B > 0 beyond its 95% CI at every n and (m, f) with f < N: {all} (smallest gap {worst:.4} at {worst_at}); {ratio}"),
        verdict: Verdict::from_bool(all),
        why: if all {
            "A copies in the last stages, where fewer packets remain to collide with (copy rates, Fig 5)".into()
        } else {
            format!("the model has A > B at every point, but the simulated network does not at {worst_at}: on a few nodes nearly all multicast, the model's independence assumptions fail (largest model error there, claim 6); A's advantage holds at every larger n")
        },
        figures: vec!["fig7".into()],
    })
}

fn c5(r: &Results) -> Result<Claim, String> {
    let f7 = fig(r, "fig7")?;
    let mut ok = true;
    let mut s = String::new();
    for name in f7.series().iter().filter(|s| s.ends_with(" sim")) {
        let xs = f7.xs(name);
        let v: Vec<f64> = xs.iter().map(|&n| f7.mean(name, n)).collect();
        ok &= v.first() > v.last();
        if name.starts_with("f=4 m=0.5") {
            s.push_str(&format!(
                "{name}: {:.4} at n = 3, {:.4} at n = {}; ",
                v[0],
                v[v.len() - 1],
                xs[xs.len() - 1]
            ));
        }
    }
    Ok(Claim {
        id: 5,
        statement: "η falls as the network grows (Fig 7, η vs n)".into(),
        source: SRC7.into(),
        ours: s,
        verdict: Verdict::from_bool(ok),
        why: "every extra unbuffered stage drops a share of the packets".into(),
        figures: vec!["fig7".into()],
    })
}

fn c6(r: &Results) -> Result<Claim, String> {
    let mut worst = 0.0f64;
    let mut at_ = String::new();
    let mut count = 0;
    for id in ["fig6", "fig7"] {
        let f = fig(r, id)?;
        for name in f
            .series()
            .iter()
            .filter(|s| s.ends_with(" sim") && !s.ends_with("strict sim"))
        {
            let model = name.trim_end_matches(" sim").to_string() + " model";
            for x in f.xs(name) {
                let d = (f.mean(name, x) - f.mean(&model, x)).abs();
                count += 1;
                if d > worst {
                    worst = d;
                    at_ = format!("{id} {name} x = {x}");
                }
            }
        }
    }
    Ok(Claim {
        id: 6,
        statement: "The model (Eqs. 1–2) describes the unbuffered network (the paper gives no simulation)".into(),
        source: "[Park 1996, §4.1]".into(),
        ours: format!("largest |sim − model| over {count} points: {worst:.4} ({at_})"),
        verdict: Verdict::from_bool(worst < 0.01),
        why: "Eq. (1) is exact per SE under upper-first all-or-nothing arbitration; only the independence between stages is approximate".into(),
        figures: vec!["fig6".into(), "fig7".into()],
    })
}

fn c7(r: &Results) -> Result<Claim, String> {
    let f6 = fig(r, "fig6")?;
    let eta = f6
        .stat(&series(4, 0.5, CopyCase::RandomStart, "sim"), 1.0)
        .ok_or("no point")?;
    let strict = f6
        .stat(&series(4, 0.5, CopyCase::RandomStart, "strict sim"), 1.0)
        .ok_or("no point")?;
    let gap = 1.0 - strict.mean / eta.mean;
    Ok(Claim {
        id: 7,
        statement: "A packet is accepted only if it reaches all its requested outputs, and η is the accepted packets per output (its formula η = (ρ′ − u′)/f + u′)".into(),
        source: "[Park 1996, §4.1]".into(),
        ours: format!("n = 7, m = 0.5, f = 4, L = 1: η as the formula counts {}, all-copies-delivered {} ({:.0}% lower)", eta.show(4), strict.show(4), gap * 100.0),
        verdict: Verdict::from_bool(gap < 0.01),
        why: "the formula counts delivered copies / f, so partly delivered multicasts count in part; the paper's verbal definition is stricter".into(),
        figures: vec!["fig6".into()],
    })
}

impl Paper for Paper001 {
    fn number(&self) -> &'static str {
        "001"
    }

    fn key(&self) -> &'static str {
        "Park 1996"
    }

    fn title(&self) -> &'static str {
        "Performance Analysis of Multistage Interconnection Networks using a Multicast Algorithm"
    }

    fn figures(&self, grid: Grid) -> Vec<FigureSpec> {
        let s = Sizes::of(grid);
        vec![self.fig6(s), self.fig7(s)]
    }

    fn claims(&self, r: &Results) -> Vec<Claim> {
        type C = fn(&Results) -> Result<Claim, String>;
        let cs: [(u32, &str, &str, C); 7] = [
            (1, "f = 1 is Patel", SRC6, c1),
            (2, "η rises with load", SRC6, c2),
            (3, "η falls with f and m", SRC6, c3),
            (4, "A beats B", SRC7, c4),
            (5, "η falls with n", SRC7, c5),
            (6, "model tracks simulation", "[Park 1996, §4.1]", c6),
            (7, "acceptance", "[Park 1996, §4.1]", c7),
        ];
        cs.iter()
            .map(|&(id, st, src, c)| c(r).unwrap_or_else(|e| missing(id, st, src, e)))
            .collect()
    }

    fn notes(&self) -> Vec<String> {
        vec![
            "* **Simulator.** `mcast_algorithms::min::slotted`: 2^n nodes, n stages of 2×2 \
             replicating SEs with the paper's wiring (Definition 1), lock-step slots, no buffers; \
             every slot each node injects with probability ρ = L / ((1 − m) + m f); the upper \
             input of an SE wins and the lower one passes only if none of its ports is taken \
             (all-or-nothing); blocked packets are dropped, not retried [Park 1996, §4.1, \
             assumptions 1–3]."
                .to_string(),
            format!(
                "* **Headers.** Case A: the region header (s, s + f − 1), s uniform on 0..=N − f \
                 (a region cannot wrap). Case B (\"copies generated at the former stages as early \
                 as possible\"): a cube header with the top log2 f destination bits don't-care; \
                 the model's copy rates for B are c = 1 on the first log2 f stages. Unicast \
                 destinations uniform. Base seed {}; ± is the 95% CI over draws.",
                self.seed
            ),
            "* **Copy rates.** The paper defines c_i but gives no formula and no numbers (its \
             figures did not survive in our copy); we use c_i = E[B_i]/E[B_{i+1}] − 1, B_j the \
             copies after stage j, which keeps ∏(1 + c_i) = f. The claims are the paper's \
             qualitative statements; the model's numbers are ours."
                .to_string(),
            "* **Paper over our reading of it.** Claim 7: the paper calls a packet accepted only \
             when all its outputs are reached, but its η formula counts delivered copies / f; \
             the model and the \"sim\" series use the formula, the \"strict sim\" series the \
             verbal definition."
                .to_string(),
        ]
    }
}
