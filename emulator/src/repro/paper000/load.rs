//! Paper 000 under load [Sivaram 1998, §6.5, Figs 26–28]: the NI-based
//! k-binomial trees (forwarded FPFS by the smart NIs), multi-drop path
//! worms (LG) and bit-string tree worms, every host generating multicasts
//! by a Bernoulli process, with the hosts' and NIs' costs (`mcsim load
//! --scheme`: t_hs and t_hr on the host CPU, t_ns and t_nr on the NI, DMA
//! on the I/O bus; path relays send once their host has the whole
//! message). The x axis is the paper's effective applied load: the
//! multicast degree times the load each source generates.
//!
//! Each setting has a latency panel and an accepted-throughput panel
//! (flits delivered to destination hosts per cycle per node, which equals
//! the effective applied load until the scheme saturates); both read the
//! same runs.

use std::sync::Arc;

use crate::sim::load::{run_host_load, HostLoad, LoadConfig, LoadScheme, Traffic};

use super::super::runs::Runs;
use super::super::{Claim, FigureMeta, FigureResult, FigureSpec, Grid, PointSpec, Results};
use super::experiments::{Params, Single, Sizes, NI, PATH, TREE};

/// The three schemes under load: (legend, `mcsim load --scheme`).
pub const SCHEMES: [(&str, &str); 3] =
    [(NI, "ni:kbinomial"), (PATH, "path-lg"), (TREE, "tree-worm")];

/// The load grid.
#[derive(Debug, Clone)]
pub struct LoadSizes {
    /// Effective applied loads, flits/cycle/node.
    pub loads: Vec<f64>,
    /// (warm-up, measured) cycles.
    pub cycles: (u64, u64),
    /// Random topologies per point.
    pub topologies: u32,
    /// Fig 26: R values.
    pub rs: Vec<f64>,
    /// Multicast degrees.
    pub degrees: Vec<usize>,
    /// Fig 27: switches for 32 nodes.
    pub switches: Vec<usize>,
    /// Fig 28: message lengths, flits (128-flit packets).
    pub lengths: Vec<usize>,
}

impl LoadSizes {
    /// The grid for `grid`.
    pub fn of(grid: Grid) -> LoadSizes {
        match grid {
            Grid::Full => LoadSizes {
                loads: vec![0.01, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.14],
                cycles: (100_000, 400_000),
                topologies: 4,
                rs: vec![0.5, 1.0, 2.0, 5.0],
                degrees: vec![3, 15],
                switches: vec![8, 16, 32],
                lengths: vec![128, 512, 1024],
            },
            Grid::Quick => LoadSizes {
                loads: vec![0.02, 0.06, 0.10, 0.14],
                cycles: (30_000, 100_000),
                topologies: 2,
                rs: vec![0.5, 2.0, 5.0],
                degrees: vec![3, 15],
                switches: vec![8, 32],
                lengths: vec![128, 1024],
            },
        }
    }
}

/// One run's value: the single-multicast parameters (network, costs,
/// message), the degree, the scheme, the load and the draw.
#[allow(clippy::too_many_arguments)]
fn point(
    single: &Single,
    degree: usize,
    scheme: &'static str,
    load: f64,
    cyc: (u64, u64),
    draw: u32,
    runs: &Runs,
    latency: bool,
) -> Result<f64, String> {
    let key = format!("{single:?} {degree} {scheme} {load} {cyc:?} {draw}");
    let r = runs.get(key, || {
        let fabric = single.fabric(draw)?;
        let cost = single.cost()?;
        let cfg = LoadConfig {
            rate: load / degree as f64,
            warmup: cyc.0,
            cycles: cyc.1,
            drain_max: cyc.1,
            traffic: Traffic::Multicast(degree),
            seed: single.seed ^ (u64::from(draw) << 20) ^ (degree as u64) ^ 0x10ad,
        };
        let hl = HostLoad {
            scheme: scheme.parse::<LoadScheme>().map_err(|e| e.to_string())?,
            packets: single.packets,
            multicast_share: 1.0,
            prep: None,
        };
        run_host_load(&fabric, &cost, &cfg, &hl, &mut |_| {}).map_err(|e| e.to_string())
    })?;
    Ok(if latency {
        r.mean_latency * single.cost()?.cycle_ns / 1000.0
    } else {
        r.accepted
    })
}

/// A setting's two panels: `<id>` (latency) and `<id>-acc`.
fn panels(
    runs: &Arc<Runs>,
    id: &str,
    title: &str,
    single: Single,
    degree: usize,
    ls: &LoadSizes,
) -> Vec<FigureSpec> {
    let x = "effective applied load (flits/cycle/node)";
    [
        (true, id.to_string(), "mean multicast latency (µs)"),
        (
            false,
            format!("{id}-acc"),
            "accepted throughput (flits/cycle/node)",
        ),
    ]
    .into_iter()
    .map(|(latency, fid, y)| {
        let mut points = Vec::new();
        for &(legend, scheme) in &SCHEMES {
            for &load in &ls.loads {
                let (runs, single, cyc) = (runs.clone(), single.clone(), ls.cycles);
                points.push(PointSpec {
                    series: legend.into(),
                    x: load,
                    draws: ls.topologies,
                    job: Box::new(move |d| {
                        point(&single, degree, scheme, load, cyc, d, &runs, latency)
                    }),
                });
            }
        }
        FigureSpec {
            meta: FigureMeta {
                id: fid,
                title: format!(
                    "{title}, {degree}-way: {}",
                    if latency {
                        "latency"
                    } else {
                        "accepted throughput"
                    }
                ),
                x_label: x.into(),
                y_label: y.into(),
            },
            points,
        }
    })
    .collect()
}

/// Figs 26–28: R, number of switches and message length under load.
pub fn figures(p: &Params, s: &Sizes, grid: Grid) -> Vec<FigureSpec> {
    let ls = LoadSizes::of(grid);
    let runs = Arc::new(Runs::default());
    let base = Single {
        dest_sets: 1,
        ..Single::new(p, s)
    };
    let mut v = Vec::new();
    for &d in &ls.degrees {
        for &r in &ls.rs {
            let single = Single { r, ..base.clone() };
            v.extend(panels(
                &runs,
                &format!("fig26-r{r}-d{d}"),
                &format!("Fig 26: R = {r}"),
                single,
                d,
                &ls,
            ));
        }
        for &sw in &ls.switches {
            let single = Single {
                switches: sw,
                ..base.clone()
            };
            v.extend(panels(
                &runs,
                &format!("fig27-s{sw}-d{d}"),
                &format!("Fig 27: 32 nodes on {sw} switches"),
                single,
                d,
                &ls,
            ));
        }
        for &l in &ls.lengths {
            let single = Single {
                packets: l / 128,
                ..base.clone()
            };
            v.extend(panels(
                &runs,
                &format!("fig28-l{l}-d{d}"),
                &format!("Fig 28: {l}-flit messages"),
                single,
                d,
                &ls,
            ));
        }
    }
    v
}

/// The accepted throughput of `s` at the highest effective load.
fn top(acc: &FigureResult, s: &str) -> f64 {
    acc.xs(s).last().map_or(f64::NAN, |&x| acc.mean(s, x))
}

/// `NI a, path b, tree c` of `v`.
fn three(v: impl Fn(&str) -> f64, digits: usize) -> String {
    format!(
        "NI {:.digits$}, path {:.digits$}, tree {:.digits$}",
        v(NI),
        v(PATH),
        v(TREE)
    )
}

/// One setting's panels: (label, latency, accepted).
type Setting<'a> = (String, &'a FigureResult, &'a FigureResult);

/// The settings among `ids` (figure id, label) that `r` has, and their ids.
fn settings<'a>(
    r: &'a Results,
    ids: impl Iterator<Item = (String, String)>,
) -> (Vec<Setting<'a>>, Vec<String>) {
    let mut found = Vec::new();
    let mut names = Vec::new();
    for (id, label) in ids {
        if let (Some(l), Some(a)) = (r.get(&id), r.get(&format!("{id}-acc"))) {
            found.push((label, l, a));
            names.push(id);
        }
    }
    (found, names)
}

fn claim(id: u32, statement: &str, fig: &str, figures: Vec<String>) -> Claim {
    let mut c = Claim::pending(id, statement, format!("[Sivaram 1998, §6.5, {fig}]"), &[]);
    c.figures = figures;
    c
}

/// Claims 17–19, from Figs 26–28 under load.
pub fn claims(r: &Results) -> Vec<Claim> {
    const RS: [f64; 4] = [0.5, 1.0, 2.0, 5.0];
    const DS: [usize; 2] = [3, 15];
    let ids = |f: &dyn Fn(usize) -> Vec<(String, String)>| -> Vec<(String, String)> {
        DS.iter().flat_map(|&d| f(d)).collect()
    };
    // Claim 17: R.
    let (fig26, ids26) = settings(
        r,
        ids(&|d| {
            RS.iter()
                .map(|x| (format!("fig26-r{x}-d{d}"), format!("R = {x}, {d}-way")))
                .collect()
        })
        .into_iter(),
    );
    let mut c17 = claim(
        17,
        "Under increasing load the tree worm saturates last; with R ≤ 1 NI-based is worst; \
         with R > 1 NI ≈ tree, both much better than path.",
        "Fig 26",
        ids26,
    );
    if !fig26.is_empty() {
        let mut ok = true;
        let mut parts = Vec::new();
        let mut off = Vec::new();
        for (label, _, acc) in &fig26 {
            let t = |s: &str| top(acc, s);
            let tree_last = t(TREE) >= t(NI) && t(TREE) >= t(PATH);
            let low_r = label.starts_with("R = 0.5") || label.starts_with("R = 1,");
            // "Comparable": within 15% of the tree worm; "much better":
            // at least 10% above path-based.
            let shape = if low_r {
                t(NI) < t(PATH) && t(PATH) < t(TREE)
            } else {
                t(NI) >= 0.85 * t(TREE) && t(NI) >= 1.1 * t(PATH)
            };
            if !(tree_last && shape) {
                off.push(format!(
                    "{label} (NI / tree {:.2}, NI / path {:.2})",
                    t(NI) / t(TREE),
                    t(NI) / t(PATH)
                ));
            }
            ok &= tree_last && shape;
            parts.push(format!("{label}: {}", three(t, 3)));
        }
        let why = if off.is_empty() {
            "the tree worm costs each destination one receive and the source one send; \
             NI-based relays pay t_nr + t_ns per copy on the NI, which dominates when R ≤ 1 \
             and is cheap when R > 1; path relays pay the host's t_hr + t_hs as well"
                .to_string()
        } else {
            format!(
                "the tree worm saturates last and NI-based is worst with R ≤ 1, but not every \
                 R > 1 setting has NI-based comparable to the tree (within 15%) and well \
                 above path-based (10% or more): {}. NI relays pay t_nr + t_ns per copy on \
                 the NI, which only R = 5 makes cheap next to a path relay's host overheads",
                off.join("; ")
            )
        };
        c17 = c17.decide(
            format!(
                "accepted throughput at the highest load: {}",
                parts.join("; ")
            ),
            ok,
            &why,
        );
    }
    // Claim 18: 1024-flit messages.
    let (fig28, ids28) = settings(
        r,
        ids(&|d| vec![(format!("fig28-l1024-d{d}"), format!("{d}-way"))]).into_iter(),
    );
    let mut c18 = claim(
        18,
        "Under load with 1024-flit messages NI-based saturates earlier and has higher \
         latency than path-based, especially 15-way, though it wins a single 1024-flit \
         multicast.",
        "Fig 28",
        ids28,
    );
    if fig28.len() == DS.len() {
        let mut ok = true;
        let mut parts = Vec::new();
        let mut ratio = Vec::new();
        for (label, lat, acc) in &fig28 {
            let x = lat.xs(NI).first().copied().unwrap_or(f64::NAN);
            let worse = top(acc, NI) < top(acc, PATH) && lat.mean(NI, x) > lat.mean(PATH, x);
            ok &= worse;
            ratio.push(top(acc, PATH) / top(acc, NI));
            parts.push(format!(
                "{label}: accepted at the highest load {}; latency at {x} (µs) {}",
                three(|s| top(acc, s), 3),
                three(|s| lat.mean(s, x), 0)
            ));
        }
        ok &= ratio[1] > ratio[0];
        let single = r.get("fig24").map(|f| {
            let x = f.xs(NI).last().copied().unwrap_or(f64::NAN);
            (x, f.mean(NI, x), f.mean(PATH, x))
        });
        let mut premise = String::new();
        if let Some((x, ni, path)) = single {
            if ni >= path {
                premise = format!(
                    "; the clause on a single multicast is claim 15's, and differs here \
                     (path beats NI alone at {x} flits too)"
                );
            }
            parts.push(format!(
                "single {x}-flit multicast (Fig 24): NI {ni:.1} µs, path {path:.1} µs"
            ));
        }
        c18 = c18.decide(
            format!(
                "{}; path / NI accepted: {:.2} (3-way), {:.2} (15-way)",
                parts.join("; "),
                ratio[0],
                ratio[1]
            ),
            ok,
            &format!(
                "eight packets per message: every NI relay receives and forwards each one \
                 (t_nr + t_ns per packet and copy), so under load the NIs saturate first, \
                 while a path relay pays its host overheads once per message{premise}"
            ),
        );
    }
    // Claim 19: switches.
    let (fig27, ids27) = settings(
        r,
        (8..=64)
            .map(|sw| (format!("fig27-s{sw}-d15"), format!("{sw} switches")))
            .collect::<Vec<_>>()
            .into_iter(),
    );
    let mut c19 = claim(
        19,
        "Under load, path-based saturation approaches NI-based saturation as the number \
         of switches grows.",
        "Fig 27",
        ids27,
    );
    if fig27.len() >= 2 {
        let gaps: Vec<f64> = fig27
            .iter()
            .map(|(_, _, acc)| (top(acc, PATH) - top(acc, NI)).abs())
            .collect();
        let shrinks = gaps.windows(2).all(|w| w[1] < w[0]);
        c19 = c19.decide(
            format!(
                "15-way, accepted at the highest load: {}",
                fig27
                    .iter()
                    .map(|(l, _, acc)| format!("{l}: {}", three(|s| top(acc, s), 3)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            shrinks,
            "with more switches the destinations spread over more of them, so path-based \
             needs more worms and phases, each relay paying its host's overheads",
        );
    }
    vec![c17, c18, c19]
}
