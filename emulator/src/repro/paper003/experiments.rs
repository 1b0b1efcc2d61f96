//! The SCI torus experiments of [Oral 2003, §4] on `mcsim`'s simulator:
//! software multicast (every relay a host, `host:<tree>` runs) on
//! unidirectional tori with the testbed's measured parameters.

use mcast::Forwarding;
use mcast_algorithms::irregular::SplitMix64;
use mcast_algorithms::path::sci_model::{estimate, SciAlgorithm, SciParams, TimeUnit};
use mcast_algorithms::Topology;

use crate::cost::FabricCostModel;
use crate::repro::{sweep, FigureMeta, FigureSpec, Grid, PointSpec};
use crate::sim::run::{Dests, RunConfig, RunResult};
use crate::sim::spec::SimFabric;

/// One algorithm of the paper: (legend, `host:` tree, Table 1 entry).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Algo {
    /// The legend.
    pub name: &'static str,
    /// The tree `mcsim run` relays (`host:<tree>`); `{r}` is replaced by
    /// the partition length.
    pub tree: &'static str,
    /// Whose t_process it pays.
    pub model: SciAlgorithm,
}

/// Separate addressing.
pub const SA: Algo = Algo {
    name: "separate addressing",
    tree: "separate",
    model: SciAlgorithm::Separate,
};
/// S-torus, store-and-forward along its worm's delivery order.
pub const ST: Algo = Algo {
    name: "S-torus",
    tree: "storus",
    model: SciAlgorithm::STorus,
};
/// Md-torus.
pub const MD: Algo = Algo {
    name: "Md-torus",
    tree: "mdtorus",
    model: SciAlgorithm::MdTorus,
};
/// Mu-torus with the SCI paper's r (partition length).
pub const MU: Algo = Algo {
    name: "Mu-torus",
    tree: "mutorus:{r}:length",
    model: SciAlgorithm::MuTorus,
};
/// U-torus.
pub const UT: Algo = Algo {
    name: "U-torus",
    tree: "utorus",
    model: SciAlgorithm::UTorus,
};

/// The five, in the paper's legend order.
pub const ALGOS: [Algo; 5] = [SA, ST, MD, MU, UT];

/// How the group of G nodes is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Members {
    /// Nodes 0..G−1 (row by row), root node 0: the rings fill in order.
    Compact,
    /// A random root and G − 1 random others, drawn per draw.
    Random,
}

/// One experiment's setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The torus radix k (k×k, unidirectional).
    pub k: usize,
    /// Message bytes.
    pub bytes: usize,
    /// Mu-torus partition length.
    pub r: usize,
    /// Group choice.
    pub members: Members,
    /// Base seed.
    pub seed: u64,
    /// Charge the network (false: every hop and wire time zero).
    pub network: bool,
    /// The unit Table 1's t_process values are read in (µs, our reading;
    /// ns, the other, for the flip experiment [Oral 2003, §5, Table 1]).
    pub unit: TimeUnit,
}

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Completion (last destination's host has the message), µs.
    pub completion_us: f64,
    /// Startup: the root has issued its last copy, µs.
    pub startup_us: f64,
    /// Link visits / distinct links used.
    pub concentration: f64,
    /// The most copies in transit at once.
    pub concurrency: f64,
}

/// Payload bytes per packet in the simulator.
const PACKET_BYTES: usize = 4096;

impl Setting {
    /// The 4×4 testbed, compact groups, 2 B.
    pub fn testbed(seed: u64) -> Setting {
        Setting {
            k: 4,
            bytes: 2,
            r: 4,
            members: Members::Compact,
            seed,
            network: true,
            unit: TimeUnit::Us,
        }
    }

    /// o(M) in ns: 1994 + 3.15·(M − 128), M at least 128 B (the paper
    /// measured 128–512 B) [Oral 2003, §5, Fig 8].
    pub fn o_ns(&self) -> f64 {
        1994.0 + 3.15 * (self.bytes.max(128) as f64 - 128.0)
    }

    /// t_process of `a` in ns (Table 1, in `unit`).
    pub fn t_process_ns(&self, a: Algo) -> f64 {
        let mut p = SciParams::testbed();
        p.t_process_unit = self.unit;
        p.t_process_us(a.model) * 1000.0
    }

    /// The cost model: 1 ns cycles; per copy sent the host pays
    /// o + t_process, per message received o; 1-byte flits at one flit per
    /// cycle (1 GB/s links), L_p = 14 ns per link and L_f = 60 ns per
    /// switch; no DMA or NI costs (o holds the per-byte copy).
    pub fn cost(&self, a: Algo) -> Result<FabricCostModel, String> {
        let mut c = FabricCostModel::irregular();
        let packet = self.bytes.clamp(1, PACKET_BYTES);
        let net = u64::from(self.network);
        let kv = [
            ("cycle_ns", "1".to_string()),
            (
                "t_hs",
                format!("{}", (self.o_ns() + self.t_process_ns(a)).round()),
            ),
            ("t_hr", format!("{}", self.o_ns().round())),
            ("t_ns", "0".into()),
            ("t_nr", "0".into()),
            ("dma_mb_s", "0".into()),
            ("flit_bytes", "1".into()),
            ("packet_flits", packet.to_string()),
            ("vc_buf_flits", packet.to_string()),
            (
                "link_bandwidth",
                if self.network { "1" } else { "1000000" }.into(),
            ),
            ("routing_delay", (60 * net).to_string()),
            ("crossbar_delay", "0".into()),
            ("link_delay", (14 * net).to_string()),
            ("credit_delay", "0".into()),
        ];
        for (k, v) in kv {
            c.set(k, &v).map_err(|e| format!("{k} = {v}: {e}"))?;
        }
        Ok(c)
    }

    /// Packets per message.
    pub fn packets(&self) -> usize {
        self.bytes.div_ceil(PACKET_BYTES).max(1)
    }

    /// Root and destinations of a group of `g` in draw `draw`.
    pub fn group(&self, g: usize, draw: u32) -> (usize, Vec<usize>) {
        match self.members {
            Members::Compact => (0, (1..g).collect()),
            Members::Random => {
                let n = self.k * self.k;
                let mut rng = SplitMix64::new(
                    self.seed ^ (u64::from(draw) << 32) ^ ((g as u64) << 16) ^ 0x5c1,
                );
                let all: Vec<usize> = (0..n).collect();
                let pick = rng.sample(&all, g);
                let root = pick[0];
                let mut d = pick[1..].to_vec();
                d.sort_unstable();
                (root, d)
            }
        }
    }

    /// The `host:` tree of `a`.
    pub fn tree(&self, a: Algo) -> String {
        a.tree.replace("{r}", &self.r.to_string())
    }

    /// Simulate `a` for a group of `g` (draw `draw`).
    pub fn measure(&self, a: Algo, g: usize, draw: u32) -> Result<Measured, String> {
        let spec = format!("torus:{k}x{k}:uni", k = self.k);
        let fabric = SimFabric::parse(&spec, true).map_err(|e| e.to_string())?;
        let cost = self.cost(a)?;
        let (root, dests) = self.group(g, draw);
        let cfg = RunConfig {
            algo: format!("host:{}", self.tree(a)),
            dests: Dests::Random(dests.len()),
            packets: self.packets(),
            seed: 0,
            source: root,
            forwarding: Forwarding::Fpfs,
        };
        let r = run_exact(&fabric, &cost, &cfg, &dests)?;
        let topo = fabric.topology().ok_or("no topology")?;
        measured(&r, topo, cost.t_hs, root)
    }
}

/// One run to exactly `dests` ([`crate::sim::run::run_to`]).
fn run_exact(
    fabric: &SimFabric,
    cost: &FabricCostModel,
    cfg: &RunConfig,
    dests: &[usize],
) -> Result<RunResult, String> {
    crate::sim::run::run_to(fabric, cost, cfg, dests).map_err(|e| e.to_string())
}

/// Completion, startup, concentration and concurrency of a host-relayed
/// run.
fn measured(r: &RunResult, topo: &Topology, t_hs: u64, root: usize) -> Result<Measured, String> {
    let us = |c: u64| c as f64 / 1000.0;
    let startup = r
        .transfers
        .iter()
        .filter(|t| t.from == root)
        .map(|t| t.start + t_hs)
        .max()
        .unwrap_or(0);
    let mut visits = 0usize;
    let mut used = std::collections::HashSet::new();
    for t in &r.transfers {
        let route = topo.route(t.from, t.to).map_err(|e| e.to_string())?;
        visits += route.len();
        used.extend(route.iter().map(|c| topo.directed_link(c)));
    }
    // Copies in transit: +1 at a start, −1 at an end (ends first on ties).
    let mut ev: Vec<(u64, i32)> = r
        .transfers
        .iter()
        .flat_map(|t| [(t.start, 1), (t.end, -1)])
        .collect();
    ev.sort_unstable();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in ev {
        now += d;
        most = most.max(now);
    }
    Ok(Measured {
        completion_us: us(r.completion),
        startup_us: us(startup),
        concentration: if used.is_empty() {
            0.0
        } else {
            visits as f64 / used.len() as f64
        },
        concurrency: f64::from(most),
    })
}

/// The grid's group sizes on a k×k torus.
pub fn groups(k: usize, grid: Grid) -> Vec<usize> {
    let n = k * k;
    if k == 4 {
        return (2..=n).collect();
    }
    let step = match grid {
        Grid::Quick => n / 8,
        Grid::Full => n / 16,
    };
    let mut v: Vec<usize> = (1..).map(|i| i * step).take_while(|&g| g <= n).collect();
    v.insert(0, 4);
    v.dedup();
    v
}

/// Draws per point.
pub fn draws(s: &Setting, grid: Grid) -> u32 {
    match (s.members, grid) {
        (Members::Compact, _) => 1,
        (Members::Random, Grid::Quick) => 8,
        (Members::Random, Grid::Full) => 30,
    }
}

fn meta(id: &str, title: &str, x: &str, y: &str) -> FigureMeta {
    FigureMeta {
        id: id.into(),
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
    }
}

const G: &str = "group size G (root included)";

/// A figure of `algos` against G, plotting `pick` of each run.
pub fn figure(
    meta: FigureMeta,
    s: Setting,
    algos: &[Algo],
    grid: Grid,
    pick: fn(&Measured) -> f64,
) -> FigureSpec {
    let series: Vec<(String, Algo)> = algos
        .iter()
        .map(|&a| {
            let name = if a == MU {
                format!("Mu-torus (r = {})", s.r)
            } else {
                a.name.to_string()
            };
            (name, a)
        })
        .collect();
    let points = sweep(
        &series,
        &groups(s.k, grid),
        draws(&s, grid),
        move |a, g, d| s.measure(a, g, d).map(|m| pick(&m)),
    );
    FigureSpec { meta, points }
}

/// The model of `a` (Eqs 8–12, testbed parameters at `bytes`, Mu's r) as a
/// series `"<name> model"`.
pub fn model_points(a: Algo, k: usize, r: usize, bytes: usize, gs: &[usize]) -> Vec<PointSpec> {
    gs.iter()
        .filter(|&&g| g >= 2)
        .map(|&g| {
            let mut p = SciParams::testbed();
            p.k = k;
            p.mu_r = r;
            p.bytes = bytes.max(128) as f64;
            PointSpec {
                series: if a == MU {
                    format!("Mu-torus (r = {r}) model")
                } else {
                    format!("{} model", a.name)
                },
                x: g as f64,
                draws: 1,
                job: Box::new(move |_| {
                    estimate(&p, a.model, g)
                        .map(|e| e.latency_us)
                        .map_err(|e| e.to_string())
                }),
            }
        })
        .collect()
}

/// Every figure of the reproduction.
pub fn all(seed: u64, grid: Grid, unit: TimeUnit) -> Vec<FigureSpec> {
    let small = Setting {
        unit,
        ..Setting::testbed(seed)
    };
    let large = Setting {
        bytes: 512 * 1024,
        ..small
    };
    let lat = "multicast completion latency (µs)";
    let mut v = vec![
        figure(
            meta("fig2a", "Fig 2a: completion latency, 2 B, 4×4", G, lat),
            small,
            &ALGOS,
            grid,
            |m| m.completion_us,
        ),
        figure(
            meta("fig2b", "Fig 2b: completion latency, 512 KB, 4×4", G, lat),
            large,
            &ALGOS,
            grid,
            |m| m.completion_us,
        ),
        figure(
            meta(
                "fig2a-random",
                "Fig 2a with random groups and roots, 2 B, 4×4",
                G,
                lat,
            ),
            Setting {
                members: Members::Random,
                ..small
            },
            &ALGOS,
            grid,
            |m| m.completion_us,
        ),
        figure(
            meta(
                "fig2b-random",
                "Fig 2b with random groups and roots, 512 KB, 4×4",
                G,
                lat,
            ),
            Setting {
                members: Members::Random,
                ..large
            },
            &ALGOS,
            grid,
            |m| m.completion_us,
        ),
        figure(
            meta(
                "fig4a",
                "Fig 4a: startup latency (root's last copy issued), 2 B, 4×4",
                G,
                "startup latency (µs)",
            ),
            small,
            &ALGOS,
            grid,
            |m| m.startup_us,
        ),
        figure(
            meta(
                "fig5a",
                "Fig 5a: link concentration (link visits / links used), 4×4",
                G,
                "link concentration",
            ),
            small,
            &ALGOS,
            grid,
            |m| m.concentration,
        ),
        figure(
            meta(
                "fig5b",
                "Fig 5b: link concurrency (most copies in transit), 2 B, 4×4",
                G,
                "link concurrency (copies)",
            ),
            small,
            &ALGOS,
            grid,
            |m| m.concurrency,
        ),
    ];
    // Figs 9–13: the models against the simulator at 128 B.
    let mid = Setting {
        bytes: 128,
        ..small
    };
    let mut f = figure(
        meta(
            "fig9-13",
            "Figs 9–13: models (Eqs 8–12) and simulator, 128 B, 4×4",
            G,
            lat,
        ),
        mid,
        &ALGOS,
        grid,
        |m| m.completion_us,
    );
    let gs = groups(4, grid);
    for a in ALGOS {
        f.points.extend(model_points(a, 4, 4, 128, &gs));
    }
    v.push(f);
    // Fig 14: the projections to 8×8 and 16×16, Mu with r = 8, 16, 32.
    for (id, k) in [("fig14a", 8), ("fig14b", 16)] {
        let s = Setting {
            k,
            bytes: 128,
            ..small
        };
        let mut f = figure(
            meta(id, &format!("Fig 14: projection to {k}×{k}, 128 B"), G, lat),
            s,
            &[SA, ST, MD, UT],
            grid,
            |m| m.completion_us,
        );
        for r in [8, 16, 32] {
            f.points.extend(
                figure(meta("", "", "", ""), Setting { r, ..s }, &[MU], grid, |m| {
                    m.completion_us
                })
                .points,
            );
        }
        v.push(f);
    }
    v
}
