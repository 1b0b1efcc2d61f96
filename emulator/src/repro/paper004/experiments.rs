//! The evaluations of [Robinson 1994] on `mcsim`: the all-port hypercube
//! trees' step counts (§3.5, Figs 3.10–3.11) and their delays on the
//! nCUBE-2's costs (Figs 3.12–3.15, `host:<tree>` runs), and the path-based
//! torus multicasts of chapter 6 on 4096-node unidirectional tori (§6.6,
//! Figs 6.3–6.8, path worms with intermediate reception).

use mcast_algorithms::irregular::SplitMix64;
use mcast_algorithms::path::{plan as path_plan, PathAlgorithm};
use mcast_algorithms::topo::Resolution;
use mcast_algorithms::trees::{plan as tree_plan, Options, PortModel, TreeAlgorithm};
use mcast_algorithms::Topology;

use crate::cost::FabricCostModel;
use crate::repro::{sweep, FigureMeta, FigureSpec, Grid};
use crate::sim::run::{run_to, Dests, RunConfig};
use crate::sim::spec::SimFabric;

/// The hypercube trees of chapter 3: (legend, planner name).
pub const CUBE: [(&str, &str); 4] = [
    ("U-cube", "ucube"),
    ("Maxport", "maxport"),
    ("Combine", "combine"),
    ("W-sort", "wsort"),
];

/// The torus multicasts of chapter 6: (legend, `mcsim run` name).
pub const TORUS: [(&str, &str); 5] = [
    ("S-torus", "storus"),
    ("Md-torus", "mtorus-d"),
    ("Mu-torus(8)", "mtorus-u:8"),
    ("Mu-torus(64)", "mtorus-u:64"),
    ("unicast-based", "mtorus-u:2"),
];

/// The legend of the unicast-based baseline (M_u-torus(2) over R_UTPR).
pub const UNICAST: &str = "unicast-based";

/// The message lengths of chapter 6, flits [Robinson 1994, §6.6].
pub const LENGTHS: [u64; 3] = [8, 512, 16384];

/// Sizes of a grid.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Random sets per step-count point (thesis: 100).
    pub step_sets: u32,
    /// Random sets per nCUBE-2 point (thesis: 20).
    pub ncube_sets: u32,
    /// Random sets per 10-cube simulation point (thesis: 100).
    pub cube10_sets: u32,
    /// Random sets per torus point (thesis: 400).
    pub torus_sets: u32,
    /// Multicast sizes on the 4096-node tori.
    pub torus_m: &'static [usize],
    /// Destination counts on the 10-cube.
    pub cube10_m: &'static [usize],
}

impl Sizes {
    /// The sizes of `grid`.
    pub fn of(grid: Grid) -> Sizes {
        match grid {
            Grid::Quick => Sizes {
                step_sets: 20,
                ncube_sets: 8,
                cube10_sets: 8,
                torus_sets: 3,
                torus_m: &[64, 512],
                cube10_m: &[1, 16, 64, 256, 512, 768, 1023],
            },
            Grid::Full => Sizes {
                step_sets: 100,
                ncube_sets: 20,
                cube10_sets: 40,
                torus_sets: 20,
                torus_m: &[16, 64, 256, 512, 1024, 2048, 4095],
                cube10_m: &[1, 8, 16, 32, 64, 128, 256, 384, 512, 640, 768, 896, 1023],
            },
        }
    }
}

/// `m` random destinations of `n` nodes other than `source`, for draw `d`
/// of a point keyed by `key`.
pub fn draw_dests(n: usize, source: usize, m: usize, seed: u64, key: u64, d: u32) -> Vec<usize> {
    let others: Vec<usize> = (0..n).filter(|&x| x != source).collect();
    let mut rng = SplitMix64::new(seed ^ key.rotate_left(17) ^ (u64::from(d) << 40) ^ 0x4b1);
    let mut v = rng.sample(&others, m.min(others.len()));
    v.sort_unstable();
    v
}

fn meta(id: &str, title: &str, x: &str, y: &str) -> FigureMeta {
    FigureMeta {
        id: id.into(),
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
    }
}

/// Figs 3.10–3.11: mean over random sets of the steps to the last
/// destination, all-port (Model B), source 0.
pub fn steps_figure(dim: usize, ms: &[usize], sets: u32, seed: u64) -> FigureSpec {
    let points = sweep(&CUBE, ms, sets, move |algo, m, d| {
        let topo = Topology::hypercube(dim, Resolution::default()).map_err(|e| e.to_string())?;
        let a: TreeAlgorithm = algo.parse().map_err(|e| format!("{e}"))?;
        let dests = draw_dests(1 << dim, 0, m, seed, (dim * 10_000 + m) as u64, d);
        let p = tree_plan(
            &topo,
            a,
            0,
            &dests,
            Options::with_port_model(PortModel::ALL_PORT),
        )
        .map_err(|e| e.to_string())?;
        Ok(p.steps() as f64)
    });
    let fig = if dim == 6 { "3.10" } else { "3.11" };
    FigureSpec {
        meta: meta(
            &format!("fig{fig}"),
            &format!("Fig {fig}: steps to the last destination, all-port {dim}-cube"),
            "destinations m",
            "steps (mean over random sets)",
        ),
        points,
    }
}

/// Which delay of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delay {
    /// Mean over the destinations.
    Average,
    /// The last destination.
    Maximum,
}

/// One simulated multicast's delay, µs.
fn delay_us(
    spec: &str,
    cost: &FabricCostModel,
    algo: &str,
    source: usize,
    dests: &[usize],
    which: Delay,
) -> Result<f64, String> {
    let fabric = SimFabric::parse(spec, cost.dateline).map_err(|e| e.to_string())?;
    let cfg = RunConfig {
        algo: algo.into(),
        dests: Dests::All,
        packets: 1,
        seed: 0,
        source,
        forwarding: mcast::Forwarding::Fpfs,
    };
    let r = run_to(&fabric, cost, &cfg, dests).map_err(|e| e.to_string())?;
    let cycles = match which {
        Delay::Average => r.mean_completion,
        Delay::Maximum => r.completion as f64,
    };
    Ok(cycles * cost.cycle_ns / 1000.0)
}

/// Flits per VC buffer: wormhole switching with buffers far smaller than
/// a message, as the thesis assumes for every network it studies.
pub const BUFFER_FLITS: u64 = 2;

/// A thesis preset with messages of `flits` flits in one packet, under
/// wormhole switching, with all-port hosts: `ports` injection channels
/// (one per network port), each on its own VC (at least two on tori, for
/// the dateline classes).
pub fn preset(name: &str, flits: u64, ports: usize) -> Result<FabricCostModel, String> {
    let mut c = FabricCostModel::preset(name).map_err(|e| e.to_string())?;
    let vcs = if name == "ncube2" {
        ports
    } else {
        ports.max(2).next_multiple_of(2)
    };
    for (k, v) in [
        ("switching", "wormhole".to_string()),
        ("packet_flits", flits.to_string()),
        ("vc_buf_flits", BUFFER_FLITS.to_string()),
        ("inject_ports", ports.to_string()),
        ("num_vcs", vcs.to_string()),
    ] {
        c.set(k, &v).map_err(|e| format!("{k} = {v}: {e}"))?;
    }
    Ok(c)
}

/// Figs 3.12–3.15: the hypercube trees as unicasts relayed by the nodes
/// (`host:<tree>`), 4096-byte messages, nCUBE-2 costs.
pub fn cube_delay_figure(
    id: &str,
    title: &str,
    dim: usize,
    ms: &[usize],
    sets: u32,
    which: Delay,
    seed: u64,
) -> FigureSpec {
    let points = sweep(&CUBE, ms, sets, move |algo, m, d| {
        let cost = preset("ncube2", 4096, dim)?;
        let dests = draw_dests(1 << dim, 0, m, seed, (dim * 10_000 + m) as u64, d);
        let fabric = format!("hypercube:{dim}");
        delay_us(&fabric, &cost, &format!("host:{algo}"), 0, &dests, which)
    });
    let y = match which {
        Delay::Average => "average delay (µs)",
        Delay::Maximum => "maximum delay (µs)",
    };
    FigureSpec {
        meta: meta(id, title, "destinations m", y),
        points,
    }
}

/// The torus of chapter 6 with `dims` dimensions (64×64 or 16×16×16).
pub fn torus_spec(dims: usize) -> &'static str {
    if dims == 2 {
        "torus:64x64:uni"
    } else {
        "torus:16x16x16:uni"
    }
}

/// Figs 6.3–6.6: average latency against the multicast size on a 4096-node
/// torus, for one startup preset and message length.
pub fn torus_figure(
    dims: usize,
    startup: &'static str,
    flits: u64,
    s: &Sizes,
    seed: u64,
) -> FigureSpec {
    let fig = match (dims, startup) {
        (2, "high-startup") => "6.3",
        (2, _) => "6.4",
        (_, "high-startup") => "6.5",
        _ => "6.6",
    };
    let points = sweep(&TORUS, s.torus_m, s.torus_sets, move |algo, m, d| {
        let cost = preset(startup, flits, dims)?;
        let dests = draw_dests(4096, 0, m, seed, (dims * 100_000 + m) as u64, d);
        delay_us(torus_spec(dims), &cost, algo, 0, &dests, Delay::Average)
    });
    let shape = if dims == 2 { "64×64" } else { "16×16×16" };
    let start = if startup == "high-startup" {
        "high startup (95/75 µs)"
    } else {
        "low startup (10/8 µs)"
    };
    FigureSpec {
        meta: meta(
            &format!("fig{fig}-{flits}"),
            &format!("Fig {fig}: {shape}, {start}, {flits}-flit messages"),
            "multicast size m (destinations)",
            "average latency (µs)",
        ),
        points,
    }
}

/// Fig 6.7: average latency against the message length, m = 512, 2D, high
/// startup.
pub fn length_figure(s: &Sizes, seed: u64) -> FigureSpec {
    let lengths = [8, 128, 512, 2048, 8192, 16384];
    let points = sweep(&TORUS, &lengths, s.torus_sets, move |algo, l, d| {
        let cost = preset("high-startup", l as u64, 2)?;
        let dests = draw_dests(4096, 0, 512, seed, 7_000_512, d);
        delay_us(torus_spec(2), &cost, algo, 0, &dests, Delay::Average)
    });
    FigureSpec {
        meta: meta(
            "fig6.7",
            "Fig 6.7: 64×64, high startup, m = 512: latency against message length",
            "message length (flits)",
            "average latency (µs)",
        ),
        points,
    }
}

/// Fig 6.8: link visits (one per link per worm) of the path plans.
pub fn links_figure(dims: usize, s: &Sizes, seed: u64) -> FigureSpec {
    let points = sweep(&TORUS, s.torus_m, s.torus_sets, move |algo, m, d| {
        let radices: Vec<usize> = if dims == 2 { vec![64, 64] } else { vec![16; 3] };
        let topo = Topology::torus(&radices, mcast_algorithms::topo::Links::Unidirectional)
            .map_err(|e| e.to_string())?;
        let a: PathAlgorithm = algo.parse().map_err(|e| format!("{e:?}"))?;
        let dests = draw_dests(4096, 0, m, seed, (dims * 100_000 + m) as u64, d);
        let p = path_plan(&topo, a, 0, &dests).map_err(|e| e.to_string())?;
        Ok(p.link_visits() as f64)
    });
    let shape = if dims == 2 { "64×64" } else { "16×16×16" };
    FigureSpec {
        meta: meta(
            &format!("fig6.8-{dims}d"),
            &format!("Fig 6.8: link visits, {shape}"),
            "multicast size m (destinations)",
            "link visits",
        ),
        points,
    }
}

/// Every figure.
pub fn all(seed: u64, grid: Grid) -> Vec<FigureSpec> {
    let s = Sizes::of(grid);
    let six: Vec<usize> = (1..=63).collect();
    let five: Vec<usize> = (1..=31).collect();
    let mut v = vec![
        steps_figure(6, &six, s.step_sets, seed),
        steps_figure(10, s.cube10_m, s.step_sets, seed),
        cube_delay_figure(
            "fig3.12",
            "Fig 3.12: nCUBE-2 costs, 5-cube, 4096 B: average delay",
            5,
            &five,
            s.ncube_sets,
            Delay::Average,
            seed,
        ),
        cube_delay_figure(
            "fig3.13",
            "Fig 3.13: nCUBE-2 costs, 5-cube, 4096 B: maximum delay",
            5,
            &five,
            s.ncube_sets,
            Delay::Maximum,
            seed,
        ),
        cube_delay_figure(
            "fig3.14",
            "Fig 3.14: nCUBE-2 costs, 10-cube, 4096 B: average delay",
            10,
            s.cube10_m,
            s.cube10_sets,
            Delay::Average,
            seed,
        ),
        cube_delay_figure(
            "fig3.15",
            "Fig 3.15: nCUBE-2 costs, 10-cube, 4096 B: maximum delay",
            10,
            s.cube10_m,
            s.cube10_sets,
            Delay::Maximum,
            seed,
        ),
    ];
    for dims in [2, 3] {
        for startup in ["high-startup", "low-startup"] {
            for l in LENGTHS {
                v.push(torus_figure(dims, startup, l, &s, seed));
            }
        }
    }
    v.push(length_figure(&s, seed));
    v.push(links_figure(2, &s, seed));
    v.push(links_figure(3, &s, seed));
    v
}
