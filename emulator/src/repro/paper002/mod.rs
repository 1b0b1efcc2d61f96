//! Paper 002, [Al-Dubai 2009]: Qualified Groups (QG) against dual-path
//! (DP), multipath (MP) and column-path (CP) on 2-D meshes.
//!
//! The contention-free claims (§4.2.1, Figs 10–14) are decided with the
//! paper's own contention-free latency model (Definition 8, Eq. 7;
//! `mcast_algorithms::mesh::evaluate`) over the planners' worms
//! (`mcast_algorithms::mesh::plan`, every plan checked by the delivery
//! oracle), averaged over random sources and destination sets. The claims
//! under load (§4.2.2–4.2.4: jitter, offered-load sweeps, mixed traffic,
//! TD) run the same plans as worms in the simulator's switches
//! ([`load`], decided in [`load_claims`]).

use mcast_algorithms::irregular::SplitMix64;
use mcast_algorithms::mesh::{check_plan, evaluate, plan, Mesh, MeshAlgorithm, MeshCost, Metrics};

use super::{sweep, Claim, FigureMeta, FigureResult, FigureSpec, Grid, Paper, Results};

mod load;
mod load_claims;

/// The four schemes: (legend, planner).
pub const SCHEMES: [(&str, &str); 4] = [
    ("DP", "dual-path"),
    ("MP", "multipath"),
    ("CP", "column-path"),
    ("QG", "qg"),
];

/// Paper 002's reproduction.
#[derive(Debug, Clone, Default)]
pub struct Paper002 {
    /// Base seed of the random sources and destination sets.
    pub seed: u64,
}

const SRC: &str = "Al-Dubai 2009";

/// Which metric of a multicast a figure plots.
#[derive(Debug, Clone, Copy)]
enum Pick {
    Latency,
    Traffic,
    Cv,
}

/// One multicast of `k` destinations on a `side`×`side` mesh, draw `d`.
fn measure(
    side: usize,
    algo: &str,
    flits: f64,
    k: usize,
    seed: u64,
    d: u32,
) -> Result<Metrics, String> {
    let mesh = Mesh::new(&[side, side]).map_err(|e| e.to_string())?;
    let a: MeshAlgorithm = algo.parse().map_err(|e| format!("{e}"))?;
    let n = side * side;
    let mut rng =
        SplitMix64::new(seed ^ ((side as u64) << 48) ^ ((k as u64) << 32) ^ u64::from(d) ^ 0x0a1d);
    let p = rng.below(n);
    let others: Vec<usize> = (0..n).filter(|&x| x != p).collect();
    let dests = rng.sample(&others, k);
    let pl = plan(&mesh, a, p, &dests).map_err(|e| e.to_string())?;
    check_plan(&mesh, &pl).map_err(|e| e.to_string())?;
    Ok(evaluate(&pl, &MeshCost::paper(flits)))
}

#[allow(clippy::too_many_arguments)]
fn figure(
    id: &str,
    title: &str,
    y: &str,
    side: usize,
    flits: f64,
    ks: &[usize],
    schemes: &[(&'static str, &'static str)],
    sets: u32,
    seed: u64,
    pick: Pick,
) -> FigureSpec {
    let points = sweep(schemes, ks, sets, move |algo, k, d| {
        let m = measure(side, algo, flits, k, seed, d)?;
        Ok(match pick {
            Pick::Latency => m.network_latency,
            Pick::Traffic => m.additional_traffic as f64,
            Pick::Cv => m.cv,
        })
    });
    FigureSpec {
        meta: FigureMeta {
            id: id.into(),
            title: title.into(),
            x_label: "destinations k".into(),
            y_label: y.into(),
        },
        points,
    }
}

const LAT: &str = "mean multicast latency, contention-free model (cycles)";

impl Paper002 {
    fn all(&self, grid: Grid) -> Vec<FigureSpec> {
        let sets = match grid {
            Grid::Quick => 60,
            Grid::Full => 400,
        };
        let s = self.seed;
        let small = [10, 20, 30, 40, 50];
        let large = [10, 20, 40, 60, 80, 100];
        let cv = [20, 40, 60, 80];
        let td = [
            ("QG (TD = 0.2)", "qg:0.2"),
            ("QG (TD = 0.5)", "qg:0.5"),
            ("QG (TD = 0.8)", "qg:0.8"),
        ];
        vec![
            figure(
                "fig10",
                "Fig 10: 16×16, L = 32 flits",
                LAT,
                16,
                32.0,
                &small,
                &SCHEMES,
                sets,
                s,
                Pick::Latency,
            ),
            figure(
                "fig11",
                "Fig 11: 16×16, L = 128 flits",
                LAT,
                16,
                128.0,
                &small,
                &SCHEMES,
                sets,
                s,
                Pick::Latency,
            ),
            figure(
                "fig12",
                "Fig 12: 24×24, L = 64 flits",
                LAT,
                24,
                64.0,
                &large,
                &SCHEMES,
                sets,
                s,
                Pick::Latency,
            ),
            figure(
                "fig13",
                "Fig 13: 32×32, L = 64 flits",
                LAT,
                32,
                64.0,
                &large,
                &SCHEMES,
                sets,
                s,
                Pick::Latency,
            ),
            figure(
                "fig14a",
                "Fig 14a: additional traffic, 16×16",
                "additional traffic (channels − destinations)",
                16,
                64.0,
                &small,
                &SCHEMES,
                sets,
                s,
                Pick::Traffic,
            ),
            figure(
                "fig14b",
                "Fig 14b: additional traffic, 32×32",
                "additional traffic (channels − destinations)",
                32,
                64.0,
                &small,
                &SCHEMES,
                sets,
                s,
                Pick::Traffic,
            ),
            figure(
                "cv-16",
                "Table 4's setting without load: CV of arrival times, 16×16, L = 64",
                "coefficient of variation (SD / mean)",
                16,
                64.0,
                &cv,
                &SCHEMES,
                sets,
                s,
                Pick::Cv,
            ),
            figure(
                "cv-32",
                "Table 5's setting without load: CV of arrival times, 32×32, L = 64",
                "coefficient of variation (SD / mean)",
                32,
                64.0,
                &cv,
                &SCHEMES,
                sets,
                s,
                Pick::Cv,
            ),
            figure(
                "td",
                "QG's threshold TD, 32×32, L = 64: latency",
                LAT,
                32,
                64.0,
                &large,
                &td,
                sets,
                s,
                Pick::Latency,
            ),
        ]
        .into_iter()
        .chain(load::figures(grid, s))
        .collect()
    }
}

fn claim(id: u32, statement: &str, section: &str, figures: &[&str]) -> Claim {
    Claim::pending(id, statement, format!("[{SRC}, {section}]"), figures)
}

fn means(f: &FigureResult, x: f64) -> String {
    SCHEMES
        .iter()
        .map(|(s, _)| format!("{s} {:.1}", f.mean(s, x)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn order(f: &FigureResult, x: f64) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = SCHEMES.iter().map(|s| s.0).collect();
    v.sort_by(|a, b| f.mean(a, x).total_cmp(&f.mean(b, x)));
    v
}

/// Contention-free claims C1–C5.
fn contention_free(r: &Results) -> Vec<Claim> {
    let mut out = Vec::new();
    let (Some(f10), Some(f11), Some(f12), Some(f13), Some(a), Some(b)) = (
        r.get("fig10"),
        r.get("fig11"),
        r.get("fig12"),
        r.get("fig13"),
        r.get("fig14a"),
        r.get("fig14b"),
    ) else {
        return out;
    };
    let o = order(f10, 10.0);
    out.push(Claim::decide(
        claim(
            1,
            "Mean contention-free latency, 16×16, L = 32, k = 10: MP < DP < QG < CP (Table 3: \
             92.2, 112.6, 120.8, 130.7 cycles).",
            "§4.2.1, Table 3, Fig 10",
            &["fig10"],
        ),
        format!("order {}; {}", o.join(" < "), means(f10, 10.0)),
        o == ["MP", "DP", "QG", "CP"],
        "one start-up for DP and MP against two (QG) or several rounds (CP); our QG pays a \
         second T_s + βL at its representatives, which the paper's 120.8 cannot include \
         (2(T_s + βL) = 130 already exceeds it)",
    ));
    let beat = |f: &FigureResult, x: f64| {
        ["DP", "MP"]
            .iter()
            .all(|a| ["QG", "CP"].iter().all(|b| f.mean(a, x) < f.mean(b, x)))
    };
    let (b10, b11) = (beat(f10, 10.0), beat(f11, 10.0));
    out.push(Claim::decide(
        claim(
            2,
            "On 16×16 with few destinations DP and MP beat QG and CP, for L = 32 and L = 128.",
            "§4.2.1, Figs 10–11",
            &["fig10", "fig11"],
        ),
        format!(
            "k = 10: L = 32 {b10} ({}); L = 128 {b11} ({})",
            means(f10, 10.0),
            means(f11, 10.0)
        ),
        b10 && b11,
        "few destinations: one worm start-up wins over QG's two steps",
    ));
    // C3: QG's lead over DP and MP grows with k on the large meshes.
    let gap = |f: &FigureResult, x: f64, o: &str| f.mean(o, x) - f.mean("QG", x);
    let grows = [f12, f13].iter().all(|f| {
        ["DP", "MP"]
            .iter()
            .all(|o| gap(f, 100.0, o) > gap(f, 10.0, o))
    });
    let beats_at_100 = [f12, f13]
        .iter()
        .all(|f| ["DP", "MP"].iter().all(|o| gap(f, 100.0, o) > 0.0));
    let cross = |f: &FigureResult, o: &str| {
        f.xs("QG")
            .into_iter()
            .find(|&x| gap(f, x, o) > 0.0)
            .map_or("none".to_string(), |x| format!("{x}"))
    };
    out.push(Claim::decide(
        claim(
            3,
            "QG's latency advantage over DP and MP grows with the number of destinations; QG \
             beats them for larger sets (24×24 and 32×32).",
            "§4.2.1, Figs 12–13",
            &["fig12", "fig13"],
        ),
        format!(
            "QG first below DP / MP at k = {} / {} (24×24), {} / {} (32×32); at k = 100: {}",
            cross(f12, "DP"),
            cross(f12, "MP"),
            cross(f13, "DP"),
            cross(f13, "MP"),
            means(f13, 100.0)
        ),
        grows && beats_at_100,
        "DP and MP worms traverse most of the mesh as destinations grow; QG's worms stay \
         within groups",
    ));
    let cp_top = [f10, f11, f12, f13]
        .iter()
        .all(|f| f.xs("CP").iter().all(|&x| order(f, x)[3] == "CP"));
    let cp_grows = [f10, f11, f12, f13].iter().all(|f| {
        let xs = f.xs("CP");
        xs.windows(2)
            .all(|w| f.mean("CP", w[1]) >= f.mean("CP", w[0]))
    });
    out.push(Claim::decide(
        claim(
            4,
            "CP has the highest contention-free latency, worse as k grows.",
            "§4.2.1, Figs 10–13",
            &["fig10", "fig11", "fig12", "fig13"],
        ),
        format!(
            "CP highest at every k of Figs 10–13: {cp_top}; rising in k: {cp_grows} ({} at k = 100, \
             32×32)",
            means(f13, 100.0)
        ),
        cp_top && cp_grows,
        "CP's rounds of four worms each pay a start-up, and there are more rounds as \
         destinations spread over more columns",
    ));
    let lowest = [a, b]
        .iter()
        .all(|f| f.xs("QG").iter().all(|&x| order(f, x)[0] == "QG"));
    out.push(Claim::decide(
        claim(
            5,
            "QG has the lowest additional traffic of the four (k = 10–50, 16×16 and 32×32).",
            "§4.2.1, Fig 14",
            &["fig14a", "fig14b"],
        ),
        format!(
            "QG lowest at every k: {lowest}; k = 50, 32×32: {}",
            means(b, 50.0)
        ),
        lowest,
        "QG's worms run inside compact groups; DP and MP sweep the mesh along the \
         Hamiltonian labelling",
    ));
    out
}

impl Paper for Paper002 {
    fn number(&self) -> &'static str {
        "002"
    }

    fn key(&self) -> &'static str {
        SRC
    }

    fn title(&self) -> &'static str {
        "Trade-Offs between Latency, Complexity, and Load Balancing with Multicast Algorithms"
    }

    fn figures(&self, grid: Grid) -> Vec<FigureSpec> {
        self.all(grid)
    }

    fn claims(&self, r: &Results) -> Vec<Claim> {
        let mut v = contention_free(r);
        if v.is_empty() {
            v = (1..=5)
                .map(|i| claim(i, "a contention-free claim", "§4.2.1", &[]))
                .collect();
        }
        v.extend(load_claims::claims(r));
        v
    }

    fn notes(&self) -> Vec<String> {
        [
            "* **Model, not simulator.** Figs 10–14 use the paper's contention-free latency \
             model (Definition 8, Eq. 7) over the planners' worms: the source pays the \
             preparation time (DP 2, MP 2, CP 4, QG 16 cycles) and T_s = 33 cycles per step \
             (all-port: once however many worms), a worm's tail reaches a node h hops on at \
             T_s + β(h + L) with β = 1, CP's rounds of four worms run one after another, \
             and a QG representative re-injects after the whole message has arrived \
             [Al-Dubai 2009, §4.1]. Every plan passes the delivery oracle. Worms within \
             one multicast do not contend in this model; the paper's simulator \
             (MultiSim) had them contend, which it calls \"contention-free\" only across \
             multicasts."
                .to_string(),
            "* **Draws.** Each point is the mean over random sources and destination sets \
             (400 in the full grid) with its 95% interval. Every leg between consecutive \
             receivers is XY routed, as the paper's simulator routed its messages; DP and \
             MP order their receivers by the snake (Hamiltonian) labelling \
             [Al-Dubai 2009, §4.2]."
                .to_string(),
            "* **Under load.** Claims 6–12 run the same plans as worms in the simulator's \
             switches (`mcsim load --scheme dp|mp|cp|qg --preset qg`): wormhole with \
             one-flit buffers, one channel per link (`link_vcs = 1`), T_s = 33 cycles per \
             step on the host, β = 1, 64-flit messages, all-port hosts with four injection \
             and four ejection channels, Bernoulli generation at every node (the paper's \
             exponential inter-arrival, discretised). At zero load a multicast takes \
             exactly the contention-free model's latency plus one cycle per phase (the \
             ejection link). The paper says its simulator routed by dimension order; worms \
             whose legs are XY routed one after another are not XY-conformed and deadlock \
             with one channel per link, so DP, MP and QG worms (and, beside them, the \
             unicasts) are routed by Lin, McKinley and Ni's label-monotone R, and CP \
             worms (and unicasts beside them) by XY. In 2-D both give the same hop counts \
             [Al-Dubai 2009, §4.1]."
                .to_string(),
            "* **Loads.** The axis is the offered load in message flits per cycle per node \
             (before replication); the paper's axis has no unit. Its 250-cycle mean \
             inter-arrival for the jitter tables saturates every scheme in this network, \
             so jitter is measured at 0.001 (16×16) and 0.0003 (32×32) flits/cycle/node. \
             Each point is the mean over 5 seeds (2 in `--quick`) of 40 000 measured \
             cycles after 5 000 of warm-up."
                .to_string(),
        ]
        .to_vec()
    }
}
