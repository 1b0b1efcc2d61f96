//! Load runs (`mcsim load`), following BookSim's phases, and split as
//! BookSim splits them: the traffic manager ([`traffic`]: one generator per
//! scheme), the injection process ([`injection`]: Bernoulli per host) and the
//! statistics ([`stats`]: warm-up, measure, drain).
//!
//! Every host generates packets by a Bernoulli process (geometric gaps) at
//! `rate` flits per cycle (`rate / L` packets per cycle) into an unbounded
//! source queue. Three phases:
//! * **warm-up** (`warmup` cycles): traffic runs, nothing is measured;
//! * **measure** (`cycles` cycles): packets generated now are *measured*;
//!   accepted throughput is the flits delivered to hosts during this window
//!   per host per cycle;
//! * **drain**: generation continues (so the measured packets see the same
//!   load) until every measured packet has been delivered, or `drain_max`
//!   cycles have passed, in which case the run is reported `saturated`.
//!
//! Latency is from generation (source queueing included, as in BookSim) to
//! the tail's arrival at the last destination. `multicast:D` traffic sends
//! each packet to D distinct random destinations; on irregular fabrics it
//! is one bit-string tree worm replicated by the switches, on
//! unidirectional tori one path worm through the H-cycle (Fig 5.8, with
//! intermediate reception), elsewhere the source NI sends D unicast copies.
//!
//! The ideal throughput bound for uniform traffic on a bidirectional k-ary
//! n-cube is 8b/k flits per cycle per node (channel load k/8); the run
//! reports `accepted / ideal` when the fabric is such a torus.

use mcast_algorithms::irregular::SplitMix64;
use mcast_algorithms::topo::{Links, TopoKind};

use super::progress::{Progress, ProgressFn};
use super::{Happening, Net, NetStats, SimulatorError};
use crate::cost::FabricCostModel;
use crate::sim::spec::SimFabric;
use crate::switch::{SwitchPacket, Time};

pub mod hosts;
pub mod injection;
pub mod schemes;
pub mod stats;
pub mod traffic;

pub use hosts::{run_host_load, HostLoad};
use injection::Bernoulli;
pub use schemes::LoadScheme;
use stats::Stats;
use traffic::Generator;
pub use traffic::Traffic;

/// One load run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Offered load, flits per cycle per host.
    pub rate: f64,
    /// Warm-up cycles.
    pub warmup: Time,
    /// Measurement cycles.
    pub cycles: Time,
    /// Longest drain.
    pub drain_max: Time,
    /// The traffic.
    pub traffic: Traffic,
    /// RNG seed.
    pub seed: u64,
}

/// What a load run measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LoadResult {
    /// Offered load, flits/cycle/host.
    pub offered: f64,
    /// Accepted throughput during the measurement window, flits/cycle/host
    /// (delivered copies).
    pub accepted: f64,
    /// The ideal bound (8b/k on a bidirectional torus with equal radices),
    /// if known.
    pub ideal: Option<f64>,
    /// `accepted / ideal`.
    pub fraction_of_ideal: Option<f64>,
    /// Packets generated in the measurement window.
    pub measured_packets: u64,
    /// Of those, delivered to every destination.
    pub measured_delivered: u64,
    /// Mean latency of the delivered measured packets, cycles.
    pub mean_latency: f64,
    /// Largest latency of the delivered measured packets, cycles.
    pub max_latency: Time,
    /// The drain did not finish: the offered load is beyond saturation.
    pub saturated: bool,
    /// Jitter: the mean over the measured multicasts of the coefficient of
    /// variation of their destinations' latencies (multicast traffic only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_cv: Option<f64>,
    /// The last cycle simulated.
    pub end: Time,
    /// Network counters.
    pub stats: NetStats,
}

/// The driver's own events.
#[derive(Debug, Clone, Copy)]
enum Ev {
    /// Host `.0` generates a packet.
    Gen(u32),
}

/// The ideal uniform-traffic throughput of a bidirectional torus with equal
/// radices k: 8b/k flits/cycle/node (capped at the injection bandwidth b).
pub fn ideal_uniform(fabric: &SimFabric, cost: &FabricCostModel) -> Option<f64> {
    let topo = fabric.topology()?;
    if topo.kind() != TopoKind::Torus(Links::Bidirectional) {
        return None;
    }
    let k = topo.regular_radix()? as f64;
    let b = cost.link_bandwidth as f64;
    Some((8.0 * b / k).min(b))
}

/// Run one load point.
///
/// # Errors
/// Bad configuration, or [`SimulatorError::Deadlock`] from the watchdog.
pub fn run_load(
    fabric: &SimFabric,
    cost: &FabricCostModel,
    cfg: &LoadConfig,
) -> Result<LoadResult, SimulatorError> {
    run_load_with_progress(fabric, cost, cfg, &mut |_| {})
}

/// Report the cycles simulated every this many cycles.
pub(super) const PROGRESS_EVERY: Time = 10_000;

/// [`run_load`], reporting the cycles simulated (out of the end of the
/// measurement window) to `progress` now and then.
///
/// # Errors
/// As [`run_load`].
pub fn run_load_with_progress(
    fabric: &SimFabric,
    cost: &FabricCostModel,
    cfg: &LoadConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<LoadResult, SimulatorError> {
    if !(cfg.rate > 0.0 && cfg.rate.is_finite()) {
        return Err(SimulatorError::Input("--rate must be positive".into()));
    }
    if cfg.cycles == 0 {
        return Err(SimulatorError::Input("--cycles must be at least 1".into()));
    }
    let routing = fabric.routing();
    let n = routing.nodes();
    if n < 2 {
        return Err(SimulatorError::Input(
            "the fabric needs at least 2 hosts".into(),
        ));
    }
    let mut traffic = Generator::new(cfg.traffic, fabric, n)?;
    let mut net: Net<Ev> = Net::new(routing, cost)?;
    let flits = cost.packet_flits;
    let injection = Bernoulli::new(cfg.rate, flits);
    let mut stats = Stats::new(cfg, flits);
    let mut rng = SplitMix64::new(cfg.seed);
    for node in 0..n {
        net.schedule(injection.first(&mut rng), Ev::Gen(node as u32));
    }
    let end_measure = stats.end_measure;
    let mut last_report = 0;
    let end = loop {
        let h = match net.step()? {
            Some(h) => h,
            None => break net.now(),
        };
        let now = net.now();
        if now >= last_report + PROGRESS_EVERY {
            last_report = now;
            progress(Progress {
                done: now.min(end_measure),
                total: end_measure,
            });
        }
        if stats.finished(now) {
            break now;
        }
        match h {
            Happening::User(Ev::Gen(node), at) => {
                let node = node as usize;
                let (dests, headers) = traffic.generate(&mut rng, node)?;
                let id = stats.generated(at, dests);
                for header in headers {
                    net.inject(node, at, SwitchPacket { id, header });
                }
                net.schedule(injection.next(&mut rng, at), Ev::Gen(node as u32));
            }
            Happening::Arrived {
                packet, at, node, ..
            } => stats.arrived(packet.id, node, at)?,
        }
    };
    no_drops(&net)?;
    let ideal = match cfg.traffic {
        Traffic::Uniform => ideal_uniform(fabric, cost),
        Traffic::Multicast(_) => None,
    };
    Ok(result(cfg, &stats, n, ideal, end, net.stats))
}

/// A run's packets were all delivered or still in flight, none dropped.
fn no_drops<U>(net: &Net<U>) -> Result<(), SimulatorError> {
    if net.stats.dropped > 0 {
        return Err(SimulatorError::Internal(format!(
            "{} packets dropped; last: {}",
            net.stats.dropped,
            net.last_drop.clone().unwrap_or_default()
        )));
    }
    Ok(())
}

/// What a run of `n` hosts measured, from its statistics.
fn result(
    cfg: &LoadConfig,
    stats: &Stats,
    n: usize,
    ideal: Option<f64>,
    end: Time,
    net: NetStats,
) -> LoadResult {
    let accepted = stats.accepted(n, cfg.cycles);
    LoadResult {
        offered: cfg.rate,
        accepted,
        ideal,
        fraction_of_ideal: ideal.map(|i| accepted / i),
        measured_packets: stats.measured,
        measured_delivered: stats.measured_done,
        mean_latency: stats.mean_latency(),
        max_latency: stats.lat_max,
        saturated: stats.measured_done < stats.measured,
        jitter_cv: stats.mean_cv(),
        end,
        stats: net,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Net;

    fn torus_cost(vcs: u64, dateline: bool) -> FabricCostModel {
        let mut c = FabricCostModel::default();
        c.parse_config(&format!(
            "packet_flits = 8; vc_buf_flits = 8; num_vcs = {vcs}; dateline = {};\n\
             watchdog_cycles = 3000;",
            u8::from(dateline)
        ))
        .unwrap();
        c
    }

    fn cfg(rate: f64, warmup: Time, cycles: Time, seed: u64) -> LoadConfig {
        LoadConfig {
            rate,
            warmup,
            cycles,
            drain_max: cycles,
            traffic: Traffic::Uniform,
            seed,
        }
    }

    /// Low load is carried in full, deterministically for a seed.
    #[test]
    fn low_load_is_accepted_and_deterministic() {
        let f = SimFabric::parse("torus:4x4", true).unwrap();
        let c = torus_cost(2, true);
        let a = run_load(&f, &c, &cfg(0.1, 500, 2000, 7)).unwrap();
        let b = run_load(&f, &c, &cfg(0.1, 500, 2000, 7)).unwrap();
        assert_eq!(a, b);
        assert!(!a.saturated);
        assert!((a.accepted - 0.1).abs() < 0.02, "{a:?}");
        assert_eq!(a.measured_delivered, a.measured_packets);
    }

    /// 8x8 bidirectional torus, uniform traffic at full offered load: the
    /// accepted throughput stays below the ideal 8b/k, and more VCs carry
    /// more.
    #[test]
    fn torus_8x8_saturates_below_ideal() {
        let f = SimFabric::parse("torus:8x8", true).unwrap();
        let mut last = 0.0;
        for vcs in [2, 4, 8] {
            let r = run_load(&f, &torus_cost(vcs, true), &cfg(1.0, 300, 1000, 1)).unwrap();
            let frac = r.fraction_of_ideal.unwrap();
            assert!(frac < 0.95 && frac > 0.1, "{vcs} VCs: {frac}");
            assert!(r.saturated, "{vcs} VCs at full load");
            assert!(frac >= last, "{vcs} VCs: {frac} < {last}");
            last = frac;
        }
    }

    /// Without the dateline classes, one VC per link on a torus deadlocks
    /// under load and the watchdog names blocked channels; with them the
    /// same load never deadlocks.
    #[test]
    fn watchdog_reports_deadlock_without_dateline() {
        for spec in ["torus:8x8", "torus:8x8:uni"] {
            let f = SimFabric::parse(spec, false).unwrap();
            let r = run_load(&f, &torus_cost(1, false), &cfg(1.0, 0, 5_000, 3));
            match r {
                Err(SimulatorError::Deadlock { blocked, .. }) => assert!(!blocked.is_empty()),
                other => panic!("{spec}: expected deadlock, got {other:?}"),
            }
            let f = SimFabric::parse(spec, true).unwrap();
            for seed in 0..2 {
                run_load(&f, &torus_cost(2, true), &cfg(1.0, 0, 5_000, seed)).unwrap();
            }
        }
        // Tree worms at full multicast load on up*/down* with whole-packet
        // buffering: no deadlock either (the condition of [Sivaram 1998, §6.2]).
        let f = SimFabric::parse("irregular:switches=8,ports=8,nodes=32,seed=1", true).unwrap();
        let mut c = FabricCostModel::default();
        c.set("watchdog_cycles", "3000").unwrap();
        let mut k = cfg(1.0, 0, 5_000, 1);
        k.traffic = Traffic::Multicast(15);
        run_load(&f, &c, &k).unwrap();
    }

    /// The classic wormhole deadlock [Robinson 1994, §2.4, Fig 2.4]: on a
    /// unidirectional ring of 4 with one VC and 2-flit buffers, every node
    /// sends a 32-flit worm 3 hops ahead at once; each worm takes its
    /// first channel and its head waits for the next, held by the next
    /// worm, whose tail is still behind it. The event queue runs dry with
    /// every packet buffered: the watchdog names the 4 waiting heads (one
    /// per switch) and the 4 injection channels held behind them. VCT
    /// with buffers of two packets takes the same traffic (each packet fits
    /// in the next buffer), and so does wormhole with the dateline classes.
    #[test]
    fn watchdog_finds_the_wormhole_ring_deadlock() {
        let send = |cost: &FabricCostModel, dateline: bool| {
            let f = SimFabric::parse("torus:4:uni", dateline).unwrap();
            let mut net: Net<()> = Net::new(f.routing(), cost).unwrap();
            for s in 0..4 {
                let header = crate::sim::unicast((s + 3) % 4);
                net.inject(
                    s,
                    0,
                    SwitchPacket {
                        id: s as u64,
                        header,
                    },
                );
            }
            let mut got = 0;
            loop {
                match net.step() {
                    Ok(Some(Happening::Arrived { .. })) => got += 1,
                    Ok(_) => break Ok(got),
                    Err(e) => break Err(e),
                }
            }
        };
        let mut wh = FabricCostModel::default();
        wh.parse_config(
            "switching = wormhole; packet_flits = 32; vc_buf_flits = 2; num_vcs = 1; \
             dateline = 0; watchdog_cycles = 1000;",
        )
        .unwrap();
        match send(&wh, false) {
            Err(e @ SimulatorError::Deadlock { .. }) => {
                let SimulatorError::Deadlock { blocked, held, .. } = &e else {
                    unreachable!()
                };
                let mut at: Vec<_> = blocked.iter().map(|b| b.switch).collect();
                at.sort_unstable();
                assert_eq!(at, vec![0, 1, 2, 3], "{blocked:?}");
                // Each worm also holds its injection channel (host port 0)
                // behind its head, and the message says so.
                let mut held: Vec<_> = held.iter().map(|h| (h.switch, h.in_port)).collect();
                held.sort_unstable();
                assert_eq!(held, vec![(0, 0), (1, 0), (2, 0), (3, 0)]);
                assert!(
                    e.to_string().contains("4 channels held by stalled worms"),
                    "{e}"
                );
            }
            other => panic!("expected the ring deadlock, got {other:?}"),
        }
        let mut vct = wh.clone();
        vct.set("switching", "vct").unwrap();
        vct.set("vc_buf_flits", "64").unwrap();
        assert_eq!(send(&vct, false).unwrap(), 4);
        wh.set("dateline", "1").unwrap();
        wh.set("num_vcs", "2").unwrap();
        assert_eq!(send(&wh, true).unwrap(), 4);
    }

    /// Wormhole under uniform load at full rate: with one VC and no
    /// dateline the tori deadlock and the watchdog names blocked channels;
    /// with the dateline classes the same load drains (buffers of 2 flits
    /// for 8-flit packets).
    #[test]
    fn watchdog_reports_wormhole_deadlock_without_dateline() {
        let wormhole = |vcs: u64, dateline: bool| {
            let mut c = torus_cost(vcs, dateline);
            c.parse_config("switching = wormhole; vc_buf_flits = 2;")
                .unwrap();
            c
        };
        for spec in ["torus:8x8", "torus:8x8:uni"] {
            let f = SimFabric::parse(spec, false).unwrap();
            match run_load(&f, &wormhole(1, false), &cfg(1.0, 0, 5_000, 3)) {
                Err(SimulatorError::Deadlock { blocked, .. }) => assert!(!blocked.is_empty()),
                other => panic!("{spec}: expected deadlock, got {other:?}"),
            }
            let f = SimFabric::parse(spec, true).unwrap();
            for seed in 0..2 {
                let r = run_load(&f, &wormhole(2, true), &cfg(1.0, 0, 5_000, seed)).unwrap();
                assert!(r.stats.delivered > 0, "{spec}: {r:?}");
            }
        }
    }

    /// Path worms (one H-cycle worm per multicast, intermediate reception)
    /// under multicast load on a unidirectional torus deliver exactly once
    /// (the run errors otherwise), at low load and near saturation.
    #[test]
    fn path_worm_load_exactly_once() {
        let f = SimFabric::parse("torus:4x4:uni", true).unwrap();
        let mut c = FabricCostModel::default();
        c.parse_config("packet_flits = 8; vc_buf_flits = 16; num_vcs = 4;")
            .unwrap();
        for (rate, seed) in [(0.02, 1), (0.3, 2)] {
            let mut k = cfg(rate, 300, 3000, seed);
            k.traffic = Traffic::Multicast(4);
            k.drain_max = 20_000;
            let r = run_load(&f, &c, &k).unwrap();
            assert!(r.measured_packets > 50, "{r:?}");
            if rate < 0.1 {
                assert!(!r.saturated, "{r:?}");
                assert_eq!(r.measured_packets, r.measured_delivered);
            }
            assert!(r.stats.delivered >= 4 * r.measured_delivered);
        }
    }

    /// Wormhole (buffers of a quarter packet) with replication: path worms
    /// with intermediate reception on a unidirectional torus (dateline
    /// classes) and bit-string tree worms on up*/down* deliver exactly
    /// once (the run errors otherwise) and drain at low load; path worms
    /// also near saturation.
    #[test]
    fn wormhole_replicating_worms_exactly_once() {
        let mut c = FabricCostModel::default();
        c.parse_config(
            "switching = wormhole; packet_flits = 8; vc_buf_flits = 2; num_vcs = 4; \
             watchdog_cycles = 5000;",
        )
        .unwrap();
        let f = SimFabric::parse("torus:4x4:uni", true).unwrap();
        for (rate, seed) in [(0.02, 1), (0.3, 2)] {
            let mut k = cfg(rate, 300, 3000, seed);
            k.traffic = Traffic::Multicast(4);
            k.drain_max = 20_000;
            let r = run_load(&f, &c, &k).unwrap();
            assert!(r.measured_packets > 50, "{r:?}");
            if rate < 0.1 {
                assert!(!r.saturated, "{r:?}");
            }
            assert!(r.stats.delivered >= 4 * r.measured_delivered);
        }
        let f = SimFabric::parse("irregular:switches=8,ports=8,nodes=32,seed=2", true).unwrap();
        c.set("packet_flits", "32").unwrap();
        c.set("vc_buf_flits", "8").unwrap();
        let mut k = cfg(0.02, 500, 3000, 5);
        k.traffic = Traffic::Multicast(3);
        let r = run_load(&f, &c, &k).unwrap();
        assert!(!r.saturated, "{r:?}");
        assert_eq!(r.measured_packets, r.measured_delivered);
    }

    /// Tree worms under multicast load on an irregular fabric deliver each
    /// packet exactly once to each destination (the run errors otherwise)
    /// and drain at low load.
    #[test]
    fn tree_worm_load_exactly_once() {
        let f = SimFabric::parse("irregular:switches=8,ports=8,nodes=32,seed=2", true).unwrap();
        let mut c = FabricCostModel::default();
        c.set("packet_flits", "32").unwrap();
        for (rate, d) in [(0.02, 3), (0.1, 15)] {
            let mut k = cfg(rate, 500, 3000, 5);
            k.traffic = Traffic::Multicast(d);
            let r = run_load(&f, &c, &k).unwrap();
            assert!(r.measured_packets > 50, "{r:?}");
            if rate < 0.05 {
                assert!(!r.saturated, "{r:?}");
                assert_eq!(r.measured_packets, r.measured_delivered);
            }
        }
    }
}
