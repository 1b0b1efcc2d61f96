//! The experiments of [Sivaram 1998, §6] on `mcsim`'s simulator: single
//! multicasts (Figs 19–25) and the unicast saturation check of §6.5.

use mcast::Forwarding;
use mcast_algorithms::irregular::SplitMix64;

use crate::cost::FabricCostModel;
use crate::repro::{FigureMeta, FigureSpec, Grid, PointSpec};
use crate::sim::load::{run_load, LoadConfig, Traffic};
use crate::sim::run::{run, Dests, RunConfig};
use crate::sim::spec::SimFabric;

/// The three schemes the paper compares [Sivaram 1998, §6.2]: (legend,
/// `mcsim run` algorithm).
pub const SCHEMES: [(&str, &str); 3] = [(NI, "kbinomial"), (PATH, "path-lg"), (TREE, "tree-worm")];
/// Legend of the NI-based scheme.
pub const NI: &str = "NI-based (k-binomial, FPFS)";
/// Legend of the path-based scheme.
pub const PATH: &str = "path-based (multi-drop, LG)";
/// Legend of the tree-based scheme.
pub const TREE: &str = "tree-based (bit-string worm)";

/// What the experiments depend on.
#[derive(Debug, Clone)]
pub struct Params {
    /// R = t_hs / t_ns for every experiment but Fig 19 (the paper: 1).
    pub r: f64,
    /// t_hs = t_hr in cycles for every experiment but Fig 20 (the paper: 1000).
    pub t_hs: u64,
    /// The base seed: topologies and destination sets are drawn from it.
    pub seed: u64,
    /// Destinations in the experiments whose x axis is not the number of
    /// destinations.
    pub fixed_dests: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            r: 1.0,
            t_hs: 1000,
            seed: 0,
            fixed_dests: 15,
        }
    }
}

/// The grid's sizes.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Random topologies per point.
    pub topologies: u32,
    /// Destination sets (and sources) per topology.
    pub dest_sets: u32,
    /// The x axis of Figs 19–20.
    pub dests: Vec<usize>,
    /// Fig 21: nodes (on nodes/4 eight-port switches).
    pub system: Vec<usize>,
    /// Fig 23: switches for 32 nodes.
    pub switches: Vec<usize>,
    /// Fig 24: message lengths in flits (128-flit packets).
    pub lengths: Vec<usize>,
    /// Fig 20: t_hs values, cycles.
    pub t_hs: Vec<u64>,
    /// §6.5: offered unicast loads, flits/cycle/host.
    pub rates: Vec<f64>,
    /// §6.5: (warm-up, measured) cycles.
    pub load_cycles: (u64, u64),
    /// §6.5: topologies for the unicast saturation check.
    pub load_topologies: u32,
    /// The R sweep that locates the NI/path crossover.
    pub r_sweep: Vec<f64>,
}

impl Sizes {
    /// The grid for `grid`.
    pub fn of(grid: Grid) -> Sizes {
        match grid {
            Grid::Full => Sizes {
                topologies: 20,
                dest_sets: 5,
                dests: vec![1, 2, 4, 8, 12, 16, 20, 24, 31],
                system: vec![32, 64, 128, 256],
                switches: vec![8, 12, 16, 24, 32],
                lengths: vec![128, 256, 384, 512, 640, 768, 1024],
                t_hs: vec![250, 1000, 4000],
                rates: vec![
                    0.02, 0.05, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.25, 0.3,
                ],
                load_cycles: (500_000, 500_000),
                load_topologies: 50,
                r_sweep: vec![0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0],
            },
            Grid::Quick => Sizes {
                topologies: 10,
                dest_sets: 4,
                dests: vec![2, 8, 16, 31],
                system: vec![32, 256],
                switches: vec![8, 24],
                lengths: vec![128, 512, 640, 1024],
                t_hs: vec![250, 4000],
                rates: vec![0.1, 0.2, 0.3],
                load_cycles: (20_000, 60_000),
                load_topologies: 30,
                r_sweep: vec![1.0, 2.0, 3.0, 4.0, 5.0],
            },
        }
    }

    fn draws(&self) -> u32 {
        self.topologies * self.dest_sets
    }
}

/// One single multicast: its network, costs and message.
#[derive(Debug, Clone)]
pub struct Single {
    /// Switches.
    pub switches: usize,
    /// Ports per switch.
    pub ports: usize,
    /// Nodes.
    pub nodes: usize,
    /// Destinations.
    pub dests: usize,
    /// Packets in the message.
    pub packets: usize,
    /// Flits per packet.
    pub packet_flits: u64,
    /// R = t_hs / t_ns.
    pub r: f64,
    /// t_hs = t_hr, cycles.
    pub t_hs: u64,
    /// Base seed.
    pub seed: u64,
    /// Destination sets per topology.
    pub dest_sets: u32,
}

impl Single {
    /// The paper's default single multicast [Sivaram 1998, §6.2].
    pub(crate) fn new(p: &Params, s: &Sizes) -> Single {
        Single {
            switches: 8,
            ports: 8,
            nodes: 32,
            dests: p.fixed_dests,
            packets: 1,
            packet_flits: 128,
            r: p.r,
            t_hs: p.t_hs,
            seed: p.seed,
            dest_sets: s.dest_sets,
        }
    }

    /// The cost model: the `irregular` preset with this t_hs and R.
    pub fn cost(&self) -> Result<FabricCostModel, String> {
        let mut c = FabricCostModel::irregular();
        let set = |c: &mut FabricCostModel, k: &str, v: String| {
            c.set(k, &v).map_err(|e| format!("{k} = {v}: {e}"))
        };
        set(&mut c, "t_hs", self.t_hs.to_string())?;
        set(&mut c, "t_hr", self.t_hs.to_string())?;
        set(&mut c, "r", self.r.to_string())?;
        set(&mut c, "packet_flits", self.packet_flits.to_string())?;
        Ok(c)
    }

    /// The fabric of draw `draw`: topology `draw / dest_sets`.
    pub fn fabric(&self, draw: u32) -> Result<SimFabric, String> {
        let topo = self.seed * 1_000_003 + u64::from(draw / self.dest_sets.max(1));
        let spec = format!(
            "irregular:switches={},ports={},nodes={},connectivity=0.8,seed={topo}",
            self.switches, self.ports, self.nodes
        );
        SimFabric::parse(&spec, true).map_err(|e| e.to_string())
    }

    /// The latency of `algo` in draw `draw`: the cycle the last
    /// destination's host has the message, in µs. Source and destinations
    /// are drawn from the draw (the same for every scheme).
    pub fn latency_us(&self, algo: &str, draw: u32) -> Result<f64, String> {
        let fabric = self.fabric(draw)?;
        let cost = self.cost()?;
        let mut rng = SplitMix64::new(self.seed ^ (u64::from(draw) << 32) ^ 0x5eed);
        let source = rng.below(self.nodes);
        let cfg = RunConfig {
            algo: algo.to_string(),
            dests: Dests::Random(self.dests),
            packets: self.packets,
            seed: rng.next_u64(),
            source,
            forwarding: Forwarding::Fpfs,
        };
        run(&fabric, &cost, &cfg)
            .map(|r| r.completion_us)
            .map_err(|e| e.to_string())
    }
}

const LATENCY: &str = "multicast latency (µs)";

fn meta(id: &str, title: &str, x: &str, y: &str) -> FigureMeta {
    FigureMeta {
        id: id.into(),
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
    }
}

/// A figure of the three schemes over `xs`, each x giving its multicast.
fn schemes_figure(
    meta: FigureMeta,
    sizes: &Sizes,
    xs: &[f64],
    at: impl Fn(f64) -> Single,
) -> FigureSpec {
    let mut points = Vec::new();
    for &(name, algo) in &SCHEMES {
        for &x in xs {
            let single = at(x);
            points.push(PointSpec {
                series: name.into(),
                x,
                draws: sizes.draws(),
                job: Box::new(move |d| single.latency_us(algo, d)),
            });
        }
    }
    FigureSpec { meta, points }
}

fn f(v: &[usize]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// Fig 19, one panel per R: latency against destinations.
pub fn fig19(p: &Params, s: &Sizes, rs: &[f64]) -> Vec<FigureSpec> {
    rs.iter()
        .map(|&r| {
            let m = meta(
                &format!("fig19-r{r}"),
                &format!("Fig 19: effect of R, R = {r} (t_hs = {} cycles)", p.t_hs),
                "number of destinations",
                LATENCY,
            );
            schemes_figure(m, s, &f(&s.dests), |x| Single {
                dests: x as usize,
                r,
                ..Single::new(p, s)
            })
        })
        .collect()
}

/// Fig 20, one panel per t_hs at R = `p.r`.
pub fn fig20(p: &Params, s: &Sizes) -> Vec<FigureSpec> {
    s.t_hs
        .iter()
        .map(|&t| {
            let m = meta(
                &format!("fig20-ths{t}"),
                &format!(
                    "Fig 20: effect of host overhead, t_hs = {t} cycles (R = {})",
                    p.r
                ),
                "number of destinations",
                LATENCY,
            );
            schemes_figure(m, s, &f(&s.dests), |x| Single {
                dests: x as usize,
                t_hs: t,
                ..Single::new(p, s)
            })
        })
        .collect()
}

/// Figs 21–25: system size, switch size, number of switches, message
/// length, packet size.
pub fn figs21_25(p: &Params, s: &Sizes) -> Vec<FigureSpec> {
    let d = p.fixed_dests;
    vec![
        schemes_figure(
            meta(
                "fig21",
                &format!("Fig 21: effect of system size ({d} destinations, 8-port switches)"),
                "system size (nodes)",
                LATENCY,
            ),
            s,
            &f(&s.system),
            |x| Single {
                nodes: x as usize,
                switches: x as usize / 4,
                ..Single::new(p, s)
            },
        ),
        schemes_figure(
            meta(
                "fig22",
                &format!("Fig 22: effect of switch size (32 nodes, 64 ports, {d} destinations)"),
                "switch size (ports)",
                LATENCY,
            ),
            s,
            &[8.0, 16.0, 32.0],
            |x| Single {
                ports: x as usize,
                switches: 64 / x as usize,
                ..Single::new(p, s)
            },
        ),
        schemes_figure(
            meta(
                "fig23",
                &format!("Fig 23: effect of number of switches (32 nodes, {d} destinations)"),
                "number of 8-port switches",
                LATENCY,
            ),
            s,
            &f(&s.switches),
            |x| Single {
                switches: x as usize,
                ..Single::new(p, s)
            },
        ),
        schemes_figure(
            meta(
                "fig24",
                &format!("Fig 24: effect of message length (128-flit packets, {d} destinations)"),
                "message length (flits)",
                LATENCY,
            ),
            s,
            &f(&s.lengths),
            |x| Single {
                packets: (x as usize).div_ceil(128),
                ..Single::new(p, s)
            },
        ),
        schemes_figure(
            meta(
                "fig25",
                &format!("Fig 25: effect of packet size (128-flit message, {d} destinations)"),
                "packet size (flits)",
                LATENCY,
            ),
            s,
            &[32.0, 64.0, 128.0],
            |x| Single {
                packet_flits: x as u64,
                packets: 128 / x as usize,
                ..Single::new(p, s)
            },
        ),
    ]
}

/// Fig 19 across R at a fixed number of destinations: where NI-based
/// overtakes path-based.
pub fn r_sweep(p: &Params, s: &Sizes) -> FigureSpec {
    let m = meta(
        "r-sweep",
        &format!(
            "Fig 19 across R: {} destinations (t_hs = {} cycles)",
            p.fixed_dests, p.t_hs
        ),
        "R = t_hs / t_ns",
        LATENCY,
    );
    schemes_figure(m, s, &s.r_sweep, |r| Single {
        r,
        ..Single::new(p, s)
    })
}

/// §6.5: accepted against offered uniform unicast load, with no software
/// overhead (the simulator's load runs charge the network only).
pub fn unicast_load(p: &Params, s: &Sizes) -> FigureSpec {
    let (warmup, cycles) = s.load_cycles;
    let points = s
        .rates
        .iter()
        .map(|&rate| {
            let single = Single::new(p, s);
            PointSpec {
                series: "uniform unicast, up*/down*".into(),
                x: rate,
                draws: s.load_topologies,
                job: Box::new(move |d| {
                    let fabric = Single {
                        dest_sets: 1,
                        ..single.clone()
                    }
                    .fabric(d)?;
                    let cfg = LoadConfig {
                        rate,
                        warmup,
                        cycles,
                        drain_max: cycles,
                        traffic: Traffic::Uniform,
                        seed: p_seed(single.seed, d),
                    };
                    run_load(&fabric, &single.cost()?, &cfg)
                        .map(|r| r.accepted)
                        .map_err(|e| e.to_string())
                }),
            }
        })
        .collect();
    FigureSpec {
        meta: meta(
            "load-unicast",
            "§6.5: unicast throughput, 32 nodes on eight 8-port switches",
            "offered load (flits/cycle/node)",
            "accepted throughput (flits/cycle/node)",
        ),
        points,
    }
}

fn p_seed(seed: u64, draw: u32) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(draw)
}
