//! Load runs with hosts and NIs (`mcsim load --scheme S`): multicast
//! schemes that relay at NIs or hosts, under load, with the hosts' and NIs'
//! costs, as the papers' load experiments charge them
//! ([Sivaram 1998, §6.2, §6.5]; [Al-Dubai 2009, §4.1]).
//!
//! Every host generates messages of `packets` packets by a Bernoulli
//! process at `rate` message flits per cycle (the source's load, before
//! any replication; BookSim's convention). A message is a multicast to D
//! random destinations with probability `multicast_share`, else a unicast
//! to one. Each host and NI is a first-come-first-served server:
//! * **host** (one CPU): a send step costs t_hs (the start-up), then each
//!   worm's packets go by DMA to the NI; a message completes at a
//!   destination t_hr after its last packet is in host memory (host time,
//!   so a busy host delays it; with t_hr = 0 the host is not involved);
//!   the source's first step waits for the scheme's preparation time;
//! * **NI**: t_ns per packet copy sent, t_nr per packet received;
//! * **DMA**: one engine per host for both directions.
//!
//! The schemes ([`super::schemes`]): worms whose relays send once their
//! host has the whole message; NI-based trees, whose NIs forward every
//! packet to their children as it arrives (FPFS). Latency is from
//! generation to the last destination's completion. Accepted throughput
//! counts the flits reaching destination NIs in the measurement window.
//! Warm-up, measurement and drain are those of [`super::run_load`].

use std::collections::HashMap;

use mcast::hostni::{BusyUntil, HostNiCosts};
use mcast_algorithms::irregular::SplitMix64;

use super::injection::Bernoulli;
use super::schemes::{Carry, LoadScheme, Planner};
use super::stats::Stats;
use super::traffic::Dests;
use super::{no_drops, result, LoadConfig, LoadResult, Traffic, PROGRESS_EVERY};
use crate::cost::FabricCostModel;
use crate::sim::progress::{Progress, ProgressFn};
use crate::sim::spec::SimFabric;
use crate::sim::{unicast, Happening, Net, SimulatorError};
use crate::switch::{SwitchPacket, Time};

/// What a run with hosts carries besides the [`LoadConfig`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostLoad {
    /// The multicast scheme.
    pub scheme: LoadScheme,
    /// Packets per message.
    pub packets: usize,
    /// The share of messages that are multicasts (the rest are unicasts).
    pub multicast_share: f64,
    /// The source's preparation time per multicast; `None`: the scheme's
    /// default ([`LoadScheme::default_prep`]).
    pub prep: Option<u64>,
}

/// A host's servers.
#[derive(Default)]
struct Res {
    /// The host CPU is free from here.
    host: Time,
    ni: BusyUntil,
    dma: BusyUntil,
}

/// One generated message.
struct Msg {
    source: u32,
    carry: Carry,
    /// Per host: (packets in host memory, the last one's time).
    got: HashMap<u32, (u32, Time)>,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Gen(u32),
}

/// The state of a run.
struct Run {
    net: Net<Ev>,
    res: Vec<Res>,
    msgs: Vec<Msg>,
    /// Injected packet id → (message, packet index).
    meta: Vec<(u32, u32)>,
    hn: HostNiCosts,
    m: usize,
    stats: Stats,
    flits: u64,
}

impl Run {
    fn new(
        fabric: &SimFabric,
        cost: &FabricCostModel,
        cfg: &LoadConfig,
        m: usize,
    ) -> Result<Run, SimulatorError> {
        let routing = fabric.routing();
        let n = routing.nodes();
        Ok(Run {
            net: Net::new(routing, cost)?,
            res: (0..n).map(|_| Res::default()).collect(),
            msgs: Vec::new(),
            meta: Vec::new(),
            hn: cost.host_ni(),
            m,
            stats: Stats::new(cfg, cost.packet_flits),
            flits: cost.packet_flits,
        })
    }

    /// Message `dests` generated at `node` at `at`, carried by `carry`; the
    /// source's CPU prepares it for `prep` cycles first.
    fn begin(&mut self, node: usize, at: Time, dests: Dests, carry: Carry, prep: Time) {
        let tree = matches!(carry, Carry::Tree(_));
        let id = self.stats.generated(at, dests) as usize;
        self.msgs.push(Msg {
            source: node as u32,
            carry,
            got: HashMap::new(),
        });
        if tree {
            self.launch_tree(node, id, at, prep);
        } else {
            self.launch(node, id, at, prep);
        }
    }

    /// Packet `pid`'s tail reached host `node`'s NI at `at`.
    fn arrived(&mut self, node: usize, pid: u64, at: Time) -> Result<(), SimulatorError> {
        let Some(&(id, j)) = self.meta.get(pid as usize) else {
            return Err(SimulatorError::Internal(format!("unknown packet {pid}")));
        };
        let (id, j) = (id as usize, j as usize);
        self.stats.flits_in(at, self.flits);
        let ready = self.hn.receive(&mut self.res[node].ni, at);
        self.forward(node, id, j, ready);
        self.host_gets(node, id, j, ready)
    }

    /// Host `v` sends its steps of message `id` from `h` (once its CPU is
    /// free), after `prep` cycles of preparation on the CPU.
    fn launch(&mut self, v: usize, id: usize, h: Time, prep: Time) {
        let Carry::Steps(steps) = &self.msgs[id].carry else {
            return;
        };
        let Some(steps) = steps.get(&v) else {
            return;
        };
        let r = &mut self.res[v];
        let mut host = h.max(r.host) + prep;
        for step in steps {
            for (i, header) in step.worms.iter().enumerate() {
                // One start-up per step; every worm is posted in turn.
                let hn = if i == 0 {
                    self.hn
                } else {
                    HostNiCosts { t_hs: 0, ..self.hn }
                };
                let posted = hn.post(&mut r.dma, host, self.m);
                host = posted.host;
                for j in 0..self.m {
                    let leaves = hn.send(&mut r.ni, posted.in_ni(j));
                    inject(
                        &mut self.net,
                        &mut self.meta,
                        (v, id, j),
                        leaves,
                        header.clone(),
                    );
                }
            }
        }
        r.host = host;
    }

    /// Host `v`'s NI sends packet `j` of message `id` (at the NI from
    /// `ready`) to its children in the tree.
    fn forward(&mut self, v: usize, id: usize, j: usize, ready: Time) {
        let Carry::Tree(plan) = &self.msgs[id].carry else {
            return;
        };
        for s in plan.sends(v) {
            let leaves = self.hn.send(&mut self.res[v].ni, ready);
            inject(
                &mut self.net,
                &mut self.meta,
                (v, id, j),
                leaves,
                unicast(s.to),
            );
        }
    }

    /// The source of a tree posts its packets (after `prep` on its CPU) and
    /// its NI sends each to every child, packet by packet.
    fn launch_tree(&mut self, v: usize, id: usize, h: Time, prep: Time) {
        let r = &mut self.res[v];
        let posted = self.hn.post(&mut r.dma, h.max(r.host) + prep, self.m);
        r.host = posted.host;
        for j in 0..self.m {
            self.forward(v, id, j, posted.in_ni(j));
        }
    }

    /// Packet `j` of message `id`, done at `v`'s NI at `ready`, goes to the
    /// host; the last one completes the message there (and starts `v`'s
    /// relay steps).
    fn host_gets(
        &mut self,
        v: usize,
        id: usize,
        j: usize,
        ready: Time,
    ) -> Result<(), SimulatorError> {
        let r = &mut self.res[v];
        let in_host = self.hn.to_host(&mut r.dma, ready);
        let m = self.m as u32;
        let e = self.msgs[id].got.entry(v as u32).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.max(in_host);
        if e.0 > m {
            return Err(SimulatorError::Internal(format!(
                "host {v} received packet {j} of message {id} twice"
            )));
        }
        if e.0 < m {
            return Ok(());
        }
        let last = e.1;
        let done = if self.hn.t_hr == 0 {
            last
        } else {
            let d = last.max(r.host) + self.hn.t_hr;
            r.host = d;
            d
        };
        self.stats.reached(id as u64, v, done)?;
        if v as u32 != self.msgs[id].source {
            self.launch(v, id, done, 0);
        }
        Ok(())
    }
}

/// Host `v` injects packet `j` of message `id` at `leaves`, its id
/// recorded in `meta`.
fn inject(
    net: &mut Net<Ev>,
    meta: &mut Vec<(u32, u32)>,
    (v, id, j): (usize, usize, usize),
    leaves: Time,
    header: crate::switch::SwitchHeader,
) {
    let pid = meta.len() as u64;
    meta.push((id as u32, j as u32));
    net.inject(v, leaves, SwitchPacket { id: pid, header });
}

/// Run one load point with hosts and NIs.
///
/// # Errors
/// Bad configuration (the traffic must be `multicast:D`), a scheme the
/// fabric cannot carry, [`SimulatorError::Deadlock`] from the watchdog, or
/// an exactly-once failure ([`SimulatorError::Internal`]).
pub fn run_host_load(
    fabric: &SimFabric,
    cost: &FabricCostModel,
    cfg: &LoadConfig,
    hl: &HostLoad,
    progress: &mut ProgressFn<'_>,
) -> Result<LoadResult, SimulatorError> {
    let Traffic::Multicast(d) = cfg.traffic else {
        return Err(SimulatorError::Input(
            "--scheme needs --traffic multicast:D".into(),
        ));
    };
    if !(cfg.rate > 0.0 && cfg.rate.is_finite()) {
        return Err(SimulatorError::Input("--rate must be positive".into()));
    }
    if cfg.cycles == 0 || hl.packets == 0 {
        return Err(SimulatorError::Input(
            "--cycles and --packets must be at least 1".into(),
        ));
    }
    if !(0.0..=1.0).contains(&hl.multicast_share) {
        return Err(SimulatorError::Input(
            "--multicast-share must be between 0 and 1".into(),
        ));
    }
    let n = fabric.routing().nodes();
    if d + 1 > n {
        return Err(SimulatorError::Input(format!(
            "multicast:{d} needs {d} destinations besides the source; the fabric has {n} hosts"
        )));
    }
    let planner = Planner::new(hl.scheme, fabric, hl.packets)?;
    let prep = hl.prep.unwrap_or_else(|| hl.scheme.default_prep());
    let injection = Bernoulli::new(cfg.rate, cost.packet_flits * hl.packets as u64);
    let mut run = Run::new(fabric, cost, cfg, hl.packets)?;
    let mut rng = SplitMix64::new(cfg.seed);
    for node in 0..n {
        run.net
            .schedule(injection.first(&mut rng), Ev::Gen(node as u32));
    }
    let mut others = Vec::with_capacity(n);
    let end_measure = run.stats.end_measure;
    let mut last_report = 0;
    let end = loop {
        let Some(h) = run.net.step()? else {
            break run.net.now();
        };
        let now = run.net.now();
        if now >= last_report + PROGRESS_EVERY {
            last_report = now;
            progress(Progress {
                done: now.min(end_measure),
                total: end_measure,
            });
        }
        if run.stats.finished(now) {
            break now;
        }
        match h {
            Happening::User(Ev::Gen(node), at) => {
                let node = node as usize;
                others.clear();
                others.extend((0..n).filter(|&x| x != node));
                let multicast = hl.multicast_share >= 1.0
                    || ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < hl.multicast_share;
                let (dests, carry, prep) = if multicast {
                    let v = rng.sample(&others, d);
                    let c = planner.multicast(node, &v)?;
                    (Dests::Many(v), c, prep)
                } else {
                    let t = others[rng.below(others.len())];
                    (Dests::One(t), planner.unicast(node, t)?, 0)
                };
                run.begin(node, at, dests, carry, prep);
                run.net
                    .schedule(injection.next(&mut rng, at), Ev::Gen(node as u32));
            }
            Happening::Arrived {
                packet, at, node, ..
            } => run.arrived(node, packet.id, at)?,
        }
    };
    no_drops(&run.net)?;
    Ok(result(cfg, &run.stats, n, None, end, run.net.stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::run::{run_to, RunConfig};

    /// One message alone in the fabric: the latency the load driver charges.
    pub(super) fn alone(
        fabric: &SimFabric,
        cost: &FabricCostModel,
        scheme: &str,
        m: usize,
        source: usize,
        dests: &[usize],
    ) -> Time {
        let cfg = LoadConfig {
            rate: 1.0,
            warmup: 0,
            cycles: Time::MAX / 4,
            drain_max: 0,
            traffic: Traffic::Multicast(dests.len()),
            seed: 0,
        };
        let scheme: LoadScheme = scheme.parse().unwrap();
        let planner = Planner::new(scheme, fabric, m).unwrap();
        let mut run = Run::new(fabric, cost, &cfg, m).unwrap();
        let carry = planner.multicast(source, dests).unwrap();
        run.begin(
            source,
            0,
            Dests::Many(dests.to_vec()),
            carry,
            scheme.default_prep(),
        );
        while let Some(h) = run.net.step().unwrap() {
            if let Happening::Arrived { node, packet, at } = h {
                run.arrived(node, packet.id, at).unwrap();
            }
        }
        assert_eq!(run.stats.measured_done, 1);
        run.stats.lat_max
    }

    /// At zero load the driver charges exactly what a single run charges
    /// (`mcsim run`: [`crate::sim::run`]): tree worms, path worms and SSR
    /// worms relayed by hosts, and NI-based k-binomial trees forwarded FPFS,
    /// for messages of 1 and 4 packets.
    #[test]
    fn zero_load_latency_is_the_single_run_completion() {
        let fabric =
            SimFabric::parse("irregular:switches=8,ports=8,nodes=32,seed=3", true).unwrap();
        let cost = FabricCostModel::default();
        let dests = [1, 4, 9, 13, 17, 20, 22, 25, 28, 31];
        for (scheme, algo) in [
            ("tree-worm", "tree-worm"),
            ("path-lg", "path-lg"),
            ("ssr-greedy", "ssr-greedy"),
            ("ni:kbinomial", "kbinomial"),
            ("ni:binomial", "binomial"),
        ] {
            for m in [1, 4] {
                let single = run_to(
                    &fabric,
                    &cost,
                    &RunConfig {
                        algo: algo.into(),
                        dests: crate::sim::run::Dests::All,
                        packets: m,
                        seed: 0,
                        source: 6,
                        forwarding: mcast::Forwarding::Fpfs,
                    },
                    &dests,
                )
                .unwrap();
                let got = alone(&fabric, &cost, scheme, m, 6, &dests);
                assert_eq!(got, single.completion, "{scheme}, {m} packets");
            }
        }
    }
}

#[cfg(test)]
mod mesh_tests {
    use super::tests::alone;
    use super::*;
    use mcast_algorithms::mesh::{self, Mesh, MeshAlgorithm, MeshCost};

    /// At zero load, on the `qg` preset (wormhole, one-flit buffers, T_s =
    /// 33, β = 1), dual-path, multipath and QG take what the paper's
    /// contention-free model says [Al-Dubai 2009, §4.1, Eq 7], to the cycle,
    /// whatever the routing function (R in the switches, XY legs in the
    /// model: the same hop counts), plus one cycle per phase for the
    /// ejection channel, a link the model does not count. Column-path's
    /// worms of one round leave mostly by the same channel (along the
    /// source's row), where the model lets them go in parallel; it is the
    /// slowest of the four either way [Al-Dubai 2009, §4.2.1].
    #[test]
    fn zero_load_mesh_latency_is_the_contention_free_model() {
        let fabric = SimFabric::parse("mesh:16x16", false).unwrap();
        let cost = FabricCostModel::qg();
        let m = Mesh::new(&[16, 16]).unwrap();
        let mut rng = SplitMix64::new(5);
        let all: Vec<usize> = (0..256).collect();
        for _ in 0..6 {
            let picked = rng.sample(&all, 31);
            let (source, dests) = (picked[0], &picked[1..]);
            let (mut cp, mut others) = (0.0, 0.0f64);
            for (name, algo) in [
                ("dp", MeshAlgorithm::DualPath),
                ("mp", MeshAlgorithm::MultiPath),
                ("qg", MeshAlgorithm::QG),
                ("cp", MeshAlgorithm::ColumnPath),
            ] {
                let plan = mesh::plan(&m, algo, source, dests).unwrap();
                let model = mesh::evaluate(&plan, &MeshCost::paper(64.0)).network_latency;
                let got = alone(&fabric, &cost, name, 1, source, dests) as f64;
                if algo == MeshAlgorithm::ColumnPath {
                    cp = got;
                } else {
                    // The ejection channel is one more link per phase.
                    assert_eq!(
                        got,
                        model + plan.phases() as f64,
                        "{name} from {source} to {dests:?}"
                    );
                    others = others.max(got);
                }
            }
            assert!(cp > others, "column-path {cp} vs the others' {others}");
        }
    }

    /// Every mesh scheme, multicast-only and mixed with unicasts, at a light
    /// load (every measured message delivered, exactly once: the run errors
    /// otherwise) and far past saturation on one channel per link and
    /// one-flit buffers: never a deadlock, since every worm and every
    /// unicast follows one routing function (R, or XY with column-path).
    #[test]
    fn mesh_schemes_drain_and_never_deadlock() {
        let fabric = SimFabric::parse("mesh:8x8", false).unwrap();
        let mut cost = FabricCostModel::qg();
        cost.set("watchdog_cycles", "3000").unwrap();
        for scheme in ["dp", "mp", "cp", "qg"] {
            for share in [1.0, 0.1] {
                for (rate, seed) in [(0.008, 1), (0.2, 2)] {
                    let cfg = LoadConfig {
                        rate,
                        warmup: 1_000,
                        cycles: 6_000,
                        drain_max: 20_000,
                        traffic: Traffic::Multicast(8),
                        seed,
                    };
                    let hl = HostLoad {
                        scheme: scheme.parse().unwrap(),
                        packets: 1,
                        multicast_share: share,
                        prep: None,
                    };
                    let r = run_host_load(&fabric, &cost, &cfg, &hl, &mut |_| {})
                        .unwrap_or_else(|e| panic!("{scheme} {share} {rate}: {e}"));
                    assert!(r.measured_packets > 20, "{scheme}: {r:?}");
                    if rate < 0.1 {
                        assert!(!r.saturated, "{scheme} {share}: {r:?}");
                        assert_eq!(r.measured_packets, r.measured_delivered);
                    } else {
                        assert!(r.saturated, "{scheme} {share}: {r:?}");
                    }
                }
            }
        }
    }
}
