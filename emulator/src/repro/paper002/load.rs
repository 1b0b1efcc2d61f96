//! Paper 002 under load [Al-Dubai 2009, §4.2.2–4.2.4]: DP, MP, CP and QG as
//! worms in the simulator's switches (`mcsim load --scheme`, the `qg`
//! preset: wormhole with one-flit buffers, one channel per link, T_s = 33
//! cycles, β = 1, 64-flit messages, all-port hosts with four injection and
//! four ejection channels), every node generating messages by a Bernoulli
//! process (the paper's exponential inter-arrival times, discretised).
//!
//! Each figure has a latency panel (mean multicast latency, generation to
//! the last destination) and an accepted-throughput panel; both read the
//! same runs (a point's run is shared through [`Runs`]).

use std::sync::Arc;

use crate::cost::FabricCostModel;
use crate::sim::load::{run_host_load, HostLoad, LoadConfig, LoadResult, LoadScheme, Traffic};
use crate::sim::spec::SimFabric;

use super::super::runs::Runs;
use super::super::{FigureMeta, FigureSpec, Grid, PointSpec};

/// One load run's parameters.
#[derive(Debug, Clone, Copy)]
pub(super) struct Point {
    /// The mesh side.
    pub side: usize,
    /// Destinations per multicast.
    pub k: usize,
    /// The share of messages that are multicasts.
    pub share: f64,
    /// The scheme (`dp`, `mp`, `cp`, `qg:TD`).
    pub scheme: &'static str,
    /// The source's preparation time (None: the paper's).
    pub prep: Option<u64>,
    /// Offered load, message flits per cycle per node.
    pub rate: f64,
}

/// The grid's run lengths and draws.
#[derive(Debug, Clone, Copy)]
pub(super) struct Len {
    pub warmup: u64,
    pub cycles: u64,
    pub draws: u32,
}

impl Len {
    pub(super) fn of(grid: Grid) -> Len {
        match grid {
            Grid::Quick => Len {
                warmup: 3_000,
                cycles: 15_000,
                draws: 2,
            },
            Grid::Full => Len {
                warmup: 5_000,
                cycles: 40_000,
                draws: 5,
            },
        }
    }
}

/// The run of `p`, draw `d`, from `runs`.
fn get(runs: &Runs, p: Point, len: Len, seed: u64, d: u32) -> Result<LoadResult, String> {
    runs.get(format!("{p:?} {len:?} {seed} {d}"), || run(p, len, seed, d))
}

fn run(p: Point, len: Len, seed: u64, d: u32) -> Result<LoadResult, String> {
    let fabric =
        SimFabric::parse(&format!("mesh:{0}x{0}", p.side), false).map_err(|e| e.to_string())?;
    let cost = FabricCostModel::qg();
    let scheme: LoadScheme = p.scheme.parse().map_err(|e| format!("{e}"))?;
    let cfg = LoadConfig {
        rate: p.rate,
        warmup: len.warmup,
        cycles: len.cycles,
        drain_max: len.cycles,
        traffic: Traffic::Multicast(p.k),
        seed: seed
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add((p.side as u64) << 40 | (p.k as u64) << 24 | u64::from(d)),
    };
    let hl = HostLoad {
        scheme,
        packets: 1,
        multicast_share: p.share,
        prep: p.prep,
    };
    run_host_load(&fabric, &cost, &cfg, &hl, &mut |_| {}).map_err(|e| e.to_string())
}

/// A series: (legend, scheme, preparation).
pub(super) type Series = (&'static str, &'static str, Option<u64>);

/// The four schemes at the paper's preparation times.
pub(super) const FOUR: [Series; 4] = [
    ("DP", "dp", None),
    ("MP", "mp", None),
    ("CP", "cp", None),
    ("QG", "qg:0.5", None),
];

/// The offered loads of a setting: the full grid, and every other point
/// (first and last kept) for `--quick`.
fn rates(grid: Grid, full: &[f64]) -> Vec<f64> {
    match grid {
        Grid::Full => full.to_vec(),
        Grid::Quick => full
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 2 == 0 || i + 1 == full.len())
            .map(|(_, &r)| r)
            .collect(),
    }
}

/// Every load figure of the paper: Figs 15–20 (latency and accepted
/// throughput panels), the TD comparison, and jitter under load on 16×16
/// and 32×32.
pub(super) fn figures(grid: Grid, seed: u64) -> Vec<FigureSpec> {
    let runs = Arc::new(Runs::default());
    let len = Len::of(grid);
    let at = |side: usize, k: usize, share: f64| Point {
        side,
        k,
        share,
        scheme: "",
        prep: None,
        rate: 0.0,
    };
    let r10k10 = rates(
        grid,
        &[
            0.002, 0.004, 0.006, 0.008, 0.010, 0.012, 0.016, 0.020, 0.025,
        ],
    );
    let r10k20 = rates(
        grid,
        &[0.001, 0.002, 0.004, 0.006, 0.008, 0.010, 0.012, 0.016],
    );
    let r16k10 = rates(
        grid,
        &[0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.010],
    );
    let r16k20 = rates(
        grid,
        &[0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008],
    );
    let mixed = rates(
        grid,
        &[0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.10, 0.12],
    );
    let prep45: [Series; 4] = [
        FOUR[0],
        FOUR[1],
        FOUR[2],
        ("QG (prep 45)", "qg:0.5", Some(45)),
    ];
    let td: [Series; 3] = [
        ("QG (TD = 0.2)", "qg:0.2", None),
        ("QG (TD = 0.5)", "qg:0.5", None),
        ("QG (TD = 0.8)", "qg:0.8", None),
    ];
    let ks: &[usize] = match grid {
        Grid::Quick => &[20, 80],
        Grid::Full => &[20, 40, 60, 80],
    };
    let mut v = Vec::new();
    for (id, title, base, r, series) in [
        (
            "fig15a",
            "Fig 15a: 10×10, k = 10, L = 64",
            at(10, 10, 1.0),
            &r10k10,
            &FOUR[..],
        ),
        (
            "fig15b",
            "Fig 15b: 10×10, k = 20, L = 64",
            at(10, 20, 1.0),
            &r10k20,
            &FOUR[..],
        ),
        (
            "fig16a",
            "Fig 16a: 16×16, k = 10, L = 64",
            at(16, 10, 1.0),
            &r16k10,
            &FOUR[..],
        ),
        (
            "fig16b",
            "Fig 16b: 16×16, k = 20, L = 64",
            at(16, 20, 1.0),
            &r16k20,
            &FOUR[..],
        ),
        (
            "fig17",
            "Fig 17: 10×10, k = 10, QG preparation 45 cycles",
            at(10, 10, 1.0),
            &r10k10,
            &prep45[..],
        ),
        (
            "fig18",
            "Fig 18: 16×16, k = 10, QG preparation 45 cycles",
            at(16, 10, 1.0),
            &r16k10,
            &prep45[..],
        ),
        (
            "fig19",
            "Fig 19: 10×10, 10% multicast (k = 10), 90% unicast",
            at(10, 10, 0.1),
            &mixed,
            &FOUR[..],
        ),
        (
            "fig20",
            "Fig 20: 10×10, 10% multicast (k = 20), 90% unicast",
            at(10, 20, 0.1),
            &mixed,
            &FOUR[..],
        ),
        (
            "td-load",
            "QG's threshold TD under load, 10×10, k = 20",
            at(10, 20, 1.0),
            &r10k20,
            &td[..],
        ),
    ] {
        v.extend(sweep_load(&runs, id, title, base, r, series, len, seed));
    }
    v.push(cv_figure(
        &runs,
        "cv-load-16",
        "Table 4 under load: jitter, 16×16, L = 64, 0.001 flits/cycle/node",
        16,
        ks,
        CV_RATE_16,
        len,
        seed,
    ));
    v.push(cv_figure(
        &runs,
        "cv-load-32",
        "Table 5 under load: jitter, 32×32, L = 64, 0.0003 flits/cycle/node",
        32,
        ks,
        CV_RATE_32,
        len,
        seed,
    ));
    v
}

/// The jitter runs' offered loads (mean inter-arrival 64 000 and 213 000
/// cycles per source): the paper's 250 cycles saturates every scheme here.
pub(super) const CV_RATE_16: f64 = 0.001;
/// See [`CV_RATE_16`].
pub(super) const CV_RATE_32: f64 = 0.0003;

/// What a panel plots of a run.
#[derive(Debug, Clone, Copy)]
pub(super) enum Panel {
    Latency,
    Accepted,
}

/// One setting's panels over `rates`: `<id>` (latency) and `<id>-acc`.
#[allow(clippy::too_many_arguments)]
pub(super) fn sweep_load(
    runs: &Arc<Runs>,
    id: &str,
    title: &str,
    base: Point,
    rates: &[f64],
    series: &[Series],
    len: Len,
    seed: u64,
) -> Vec<FigureSpec> {
    let x = "offered load (message flits/cycle/node)";
    [
        (
            Panel::Latency,
            id.to_string(),
            "mean multicast latency (cycles)",
        ),
        (
            Panel::Accepted,
            format!("{id}-acc"),
            "accepted throughput (flits delivered/cycle/node)",
        ),
    ]
    .into_iter()
    .map(|(panel, fid, y)| {
        let mut points = Vec::new();
        for &(legend, scheme, prep) in series {
            for &rate in rates {
                let p = Point {
                    scheme,
                    prep,
                    rate,
                    ..base
                };
                let runs = runs.clone();
                points.push(PointSpec {
                    series: legend.into(),
                    x: rate,
                    draws: len.draws,
                    job: Box::new(move |d| {
                        let r = get(&runs, p, len, seed, d)?;
                        Ok(match panel {
                            Panel::Latency => r.mean_latency,
                            Panel::Accepted => r.accepted,
                        })
                    }),
                });
            }
        }
        let panel_title = match panel {
            Panel::Latency => format!("{title}: latency"),
            Panel::Accepted => format!("{title}: accepted throughput"),
        };
        FigureSpec {
            meta: FigureMeta {
                id: fid,
                title: panel_title,
                x_label: x.into(),
                y_label: y.into(),
            },
            points,
        }
    })
    .collect()
}

/// Jitter under load: the mean per-multicast CV of the destinations'
/// latencies against k, at `rate`.
#[allow(clippy::too_many_arguments)]
pub(super) fn cv_figure(
    runs: &Arc<Runs>,
    id: &str,
    title: &str,
    side: usize,
    ks: &[usize],
    rate: f64,
    len: Len,
    seed: u64,
) -> FigureSpec {
    let mut points = Vec::new();
    for &(legend, scheme, prep) in &FOUR {
        for &k in ks {
            let p = Point {
                side,
                k,
                share: 1.0,
                scheme,
                prep,
                rate,
            };
            let runs = runs.clone();
            points.push(PointSpec {
                series: legend.into(),
                x: k as f64,
                draws: len.draws,
                job: Box::new(move |d| {
                    let r = get(&runs, p, len, seed, d)?;
                    r.jitter_cv
                        .ok_or_else(|| format!("{p:?}: no multicast completed"))
                }),
            });
        }
    }
    FigureSpec {
        meta: FigureMeta {
            id: id.into(),
            title: title.into(),
            x_label: "destinations k".into(),
            y_label: "coefficient of variation of arrival times (SD / mean)".into(),
        },
        points,
    }
}
