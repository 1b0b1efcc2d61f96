//! Single multicasts (`mcsim run`): one multicast of `packets` packets in an
//! otherwise idle fabric, with the hosts' and NIs' costs.
//!
//! # NI-based trees (the smart NI, [Sivaram 1998, §4])
//! `separate`, `chain`, `binomial`, `kbinomial[:k]` and, with a direct
//! topology, `utorus`, `ucube`, `maxport`, `combine`, `wsort`: every node runs
//! the real [`mcast::engine::NiEngine`] (rank i = host i), as
//! [`crate::lockstep`] does, and every copy it emits is a unicast packet in
//! the fabric. Costs: the source host pays t_hs once, then DMAs packet j to
//! its NI (packets available at t_hs + (j+1)·DMA); the NI processor spends
//! t_ns per copy sent and t_nr per packet received, in the order the engine
//! emits them (FPFS by default); a delivered packet is DMA'd to the host,
//! and a destination's host completes t_hr after its last packet is in host
//! memory. The chain order is the destinations by id on direct networks
//! (the dimension-ordered chain; topology-aware trees build their own) and
//! the paper's host ordering ([`mcast_algorithms::irregular::SwitchNetwork::host_chain`])
//! on irregular ones.
//!
//! # Worms on irregular fabrics [Sivaram 1998, §5; §6.4.1]
//! `ssr-greedy`, `ssr-lg`, `path-greedy`, `path-lg`, `tree-worm`: the worm
//! plan of [`mcast_algorithms::irregular::SwitchNetwork::plan`]; the switch engines
//! decode the SSR, multi-drop and bit-string headers, replicate, and
//! deliver at intermediate switches. No smart NI: a node that must send
//! worms does so once its host has the whole message; per worm the host
//! pays t_hs, and per packet DMA and t_ns; per packet received, t_nr and
//! DMA, and t_hr once per message.
//!
//! Every run is checked by an exactly-once oracle: every destination's host
//! receives every packet exactly once, and nobody else receives anything.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use mcast::algorithm::{Algorithm, TreeKind};
use mcast::engine::{Action, NiEngine};
use mcast::hostni::BusyUntil;
use mcast::wire::{Member, Packet as WirePacket};
use mcast::Forwarding;
use mcast_algorithms::irregular::{Scheme, SplitMix64};
use mcast_algorithms::path::PathAlgorithm;

use super::progress::{Progress, ProgressFn};
use super::{unicast, Happening, Net, NetStats, SimulatorError};
use crate::cost::FabricCostModel;
use crate::sim::spec::SimFabric;
use crate::switch::routing::PathHeader;
use crate::switch::{SwitchHeader, SwitchPacket, Time};

mod host;
mod ni;
#[cfg(test)]
mod tests;
mod worm;

use host::host_sends;
pub use host::Transfer;
use ni::run_ni;
use worm::{run_min, run_worms};

/// Which destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dests {
    /// K distinct random nodes other than the source.
    Random(usize),
    /// Every other node.
    All,
}

impl std::str::FromStr for Dests {
    type Err = SimulatorError;
    fn from_str(s: &str) -> Result<Dests, SimulatorError> {
        let t = s.trim();
        if t == "all" {
            return Ok(Dests::All);
        }
        if let Some(k) = t.strip_prefix("random:") {
            if let Ok(k) = k.parse::<usize>() {
                if k >= 1 {
                    return Ok(Dests::Random(k));
                }
            }
        }
        Err(SimulatorError::Input(format!(
            "bad --dests `{t}` (expected random:K with K >= 1, or all)"
        )))
    }
}

/// One run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The algorithm name.
    pub algo: String,
    /// The destinations.
    pub dests: Dests,
    /// Packets in the message.
    pub packets: usize,
    /// Seed for the random destinations.
    pub seed: u64,
    /// The source (default 0).
    pub source: usize,
    /// FPFS or FCFS for NI-based trees.
    pub forwarding: Forwarding,
}

/// Progress over the copies delivered to hosts, out of one per destination
/// and packet, reported to the caller's callback.
struct Reporter<'a, 'f> {
    report: &'a mut ProgressFn<'f>,
    total: u64,
    next: u64,
}

/// Report every this many deliveries.
const PROGRESS_EVERY: u64 = 4096;

impl<'a, 'f> Reporter<'a, 'f> {
    fn new(report: &'a mut ProgressFn<'f>, total: u64) -> Self {
        Reporter {
            report,
            total,
            next: PROGRESS_EVERY,
        }
    }

    /// [`Net::step`], then report.
    fn step(&mut self, net: &mut Net<Ev>) -> Result<Option<Happening<Ev>>, SimulatorError> {
        let h = net.step()?;
        let d = net.stats.delivered;
        if d >= self.next {
            self.next = d + PROGRESS_EVERY;
            (self.report)(Progress {
                done: d.min(self.total),
                total: self.total,
            });
        }
        Ok(h)
    }
}

/// What a run measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunResult {
    /// The algorithm.
    pub algorithm: String,
    /// The source.
    pub source: usize,
    /// The destinations, ascending.
    pub destinations: Vec<usize>,
    /// Packets per message.
    pub packets: usize,
    /// Cycle at which the last destination's host completed.
    pub completion: Time,
    /// Mean of the destinations' completion cycles.
    pub mean_completion: f64,
    /// `completion` in microseconds (cycle_ns from the cost model).
    pub completion_us: f64,
    /// Per destination: (node, completion cycle), ascending by node.
    pub per_destination: Vec<(usize, Time)>,
    /// Packets injected into the fabric (copies for NI trees, worm packets
    /// for worms).
    pub injected: u64,
    /// Network counters.
    pub network: NetStats,
    /// Host-relayed trees (`host:<tree>`) only: every copy and when it was
    /// in transit, in send order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<Transfer>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {}

/// A host and its NI in the run: the resources of [`mcast::hostni`] (one DMA
/// engine for both directions), and what the host received.
struct Node {
    /// The NI processor.
    ni: BusyUntil,
    /// The host <-> NI DMA engine.
    dma: BusyUntil,
    got: Vec<u32>,
    received: usize,
    last_in_host: Time,
    done: Option<Time>,
}

fn pick_dests(n: usize, source: usize, d: Dests, seed: u64) -> Result<Vec<usize>, SimulatorError> {
    if source >= n {
        return Err(SimulatorError::Input(format!(
            "source {source} is outside the fabric (hosts 0..={})",
            n - 1
        )));
    }
    let others: Vec<usize> = (0..n).filter(|&x| x != source).collect();
    let mut v = match d {
        Dests::All => others,
        Dests::Random(k) => {
            if k > others.len() {
                return Err(SimulatorError::Input(format!(
                    "random:{k} needs {k} destinations; the fabric has {} other hosts",
                    others.len()
                )));
            }
            SplitMix64::new(seed).sample(&others, k)
        }
    };
    v.sort_unstable();
    Ok(v)
}

/// `min-two-pass[:S]`: the first relay, fixed or drawn from the seed.
fn min_algo(t: &str, seed: u64) -> Result<Option<mcast_algorithms::min::Start>, SimulatorError> {
    use mcast_algorithms::min::Start;
    let l = t.to_ascii_lowercase();
    let Some(rest) = l.strip_prefix("min-two-pass") else {
        return Ok(None);
    };
    if rest.is_empty() {
        return Ok(Some(Start::Seeded(seed)));
    }
    match rest.strip_prefix(':').map(str::parse::<u64>) {
        Some(Ok(s)) => Ok(Some(Start::Fixed(s))),
        _ => Err(SimulatorError::Input(format!(
            "bad algorithm `{t}` (min-two-pass or min-two-pass:S)"
        ))),
    }
}

/// A path-based (UTPR) algorithm name, if it is one.
fn path_algo(t: &str) -> Result<Option<PathAlgorithm>, SimulatorError> {
    let l = t.to_ascii_lowercase();
    if !(l.starts_with("storus") || l.starts_with("s-torus") || l.starts_with("mtorus-")) {
        return Ok(None);
    }
    l.parse::<PathAlgorithm>().map(Some).map_err(|_| {
        SimulatorError::Input(format!(
            "bad path algorithm `{t}` (storus, mtorus-d or mtorus-u:R with R >= 2)"
        ))
    })
}

/// Run one multicast.
///
/// # Errors
/// Bad input, a deadlock, or an oracle failure ([`SimulatorError::Internal`]).
pub fn run(
    fabric: &SimFabric,
    cost: &FabricCostModel,
    cfg: &RunConfig,
) -> Result<RunResult, SimulatorError> {
    run_with_progress(fabric, cost, cfg, &mut |_| {})
}

/// [`run`], reporting the deliveries to `progress` now and then.
///
/// # Errors
/// As [`run`].
pub fn run_with_progress(
    fabric: &SimFabric,
    cost: &FabricCostModel,
    cfg: &RunConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<RunResult, SimulatorError> {
    let n = fabric.routing().nodes();
    let dests = pick_dests(n, cfg.source, cfg.dests, cfg.seed)?;
    run_inner(fabric, cost, cfg, dests, progress)
}

/// [`run`] to exactly `dests` (`cfg.dests` and `cfg.seed` are not used).
///
/// # Errors
/// As [`run`], and [`SimulatorError::Input`] for a destination outside the
/// fabric, repeated, or equal to the source.
pub fn run_to(
    fabric: &SimFabric,
    cost: &FabricCostModel,
    cfg: &RunConfig,
    dests: &[usize],
) -> Result<RunResult, SimulatorError> {
    let n = fabric.routing().nodes();
    let mut d = dests.to_vec();
    d.sort_unstable();
    d.dedup();
    if d.len() != dests.len() || d.iter().any(|&x| x >= n || x == cfg.source) || cfg.source >= n {
        return Err(SimulatorError::Input(format!(
            "destinations {dests:?} from {}: each must be a host other than the source \
             (0..={}), listed once",
            cfg.source,
            n.saturating_sub(1)
        )));
    }
    run_inner(fabric, cost, cfg, d, &mut |_| {})
}

fn run_inner(
    fabric: &SimFabric,
    cost: &FabricCostModel,
    cfg: &RunConfig,
    dests: Vec<usize>,
    progress: &mut ProgressFn<'_>,
) -> Result<RunResult, SimulatorError> {
    if cfg.packets == 0 {
        return Err(SimulatorError::Input("--packets must be at least 1".into()));
    }
    let routing = fabric.routing();
    let n = routing.nodes();
    let mut net: Net<Ev> = Net::new(routing, cost)?;
    let mut nodes: Vec<Node> = (0..n)
        .map(|_| Node {
            ni: BusyUntil::default(),
            dma: BusyUntil::default(),
            got: Vec::new(),
            received: 0,
            last_in_host: 0,
            done: None,
        })
        .collect();
    let m = cfg.packets;
    let mut bar = Reporter::new(progress, (dests.len() * m) as u64);
    let algo = cfg.algo.trim();
    let mut transfers = Vec::new();
    let (name, injected) = if let Some(tree) = algo.strip_prefix("host:") {
        let sends = host_sends(fabric, tree, cfg.source, &dests, m)?;
        let jobs = sends
            .iter()
            .enumerate()
            .map(|(i, &(from, to))| (i, from, unicast(to)))
            .collect();
        let run = run_worms(&mut net, &mut nodes, &mut bar, cost, m, cfg.source, jobs)?;
        for (&(from, to), start) in sends.iter().zip(&run.starts) {
            transfers.push(Transfer {
                from,
                to,
                start: start.unwrap_or_default(),
                end: nodes[to].done.unwrap_or_default(),
            });
        }
        (format!("host:{}", tree.trim()), run.injected)
    } else if let Ok(scheme) = algo.parse::<Scheme>() {
        let SimFabric::Irregular(irr) = fabric else {
            return Err(SimulatorError::Input(format!(
                "{algo} is a switch-based worm scheme; it needs an irregular fabric"
            )));
        };
        let plan = irr
            .fabric()
            .plan(scheme, cfg.source, &dests)
            .map_err(|e| SimulatorError::Input(e.to_string()))?;
        let jobs = plan
            .sends
            .iter()
            .map(|s| {
                (
                    s.step,
                    s.sender,
                    SwitchHeader::Irregular(Box::new(s.header.clone())),
                )
            })
            .collect();
        let inj = run_worms(&mut net, &mut nodes, &mut bar, cost, m, cfg.source, jobs)?;
        (scheme.name().to_string(), inj.injected)
    } else if let Some(start) = min_algo(algo, cfg.seed)? {
        let SimFabric::Min(mr) = fabric else {
            return Err(SimulatorError::Input(format!(
                "{algo} needs a MIN fabric (min:N)"
            )));
        };
        let d64: Vec<u64> = dests.iter().map(|&d| d as u64).collect();
        let plan = mcast_algorithms::min::two_pass(mr.net(), cfg.source as u64, &d64, start)
            .map_err(|e| SimulatorError::Input(format!("{algo}: {e}")))?;
        let inj = run_min(&mut net, &mut nodes, &mut bar, cost, m, &plan)?;
        ("min-two-pass".to_string(), inj)
    } else if let Some(pa) = path_algo(algo)? {
        let topo = fabric.topology().ok_or_else(|| {
            SimulatorError::Input(format!(
                "{algo} is a path-based (UTPR) scheme; it needs a unidirectional torus"
            ))
        })?;
        let plan = mcast_algorithms::path::plan(topo, pa, cfg.source, &dests)
            .map_err(|e| SimulatorError::Input(format!("{algo}: {e}")))?;
        let mut jobs = Vec::new();
        for s in &plan.sends {
            // The Fig 5.9 header through the codec, as a router would read it.
            let bytes = mcast_algorithms::path::header::encode_simple(s.delivers())
                .map_err(|e| SimulatorError::Internal(e.to_string()))?;
            let list = mcast_algorithms::path::header::decode_simple_exact(&bytes, n)
                .map_err(|e| SimulatorError::Internal(e.to_string()))?;
            if list.len() > usize::from(u16::MAX) {
                return Err(SimulatorError::Input(
                    "a path worm of more than 65535 destinations".into(),
                ));
            }
            let dests: Arc<[u32]> = list.iter().map(|&d| d as u32).collect();
            jobs.push((
                s.phase,
                s.sender,
                SwitchHeader::Path(Box::new(PathHeader {
                    dests,
                    pos: 0,
                    on_h: false,
                })),
            ));
        }
        let inj = run_worms(&mut net, &mut nodes, &mut bar, cost, m, cfg.source, jobs)?;
        (pa.to_string(), inj.injected)
    } else {
        // `separate` (the `mcsim plan` name) is the runtime's `flat`.
        let a: Algorithm = if algo == "separate" { "flat" } else { algo }
            .parse()
            .map_err(|e| SimulatorError::Input(format!("unknown algorithm `{algo}`: {e}")))?;
        let topo = fabric.topology().cloned().map(Arc::new);
        let tree = a
            .resolve(dests.len() + 1, m, topo.as_deref())
            .map_err(|e| SimulatorError::Input(e.to_string()))?;
        let chain: Vec<usize> = match fabric {
            SimFabric::Irregular(irr) => irr
                .fabric()
                .host_chain(cfg.source, &dests)
                .map_err(|e| SimulatorError::Input(e.to_string()))?
                .into_iter()
                .skip(1)
                .collect(),
            _ => dests.clone(),
        };
        let inj = run_ni(
            &mut net,
            &mut nodes,
            &mut bar,
            cost,
            m,
            cfg.source,
            &chain,
            tree,
            topo,
            cfg.forwarding,
        )?;
        (a.to_string(), inj)
    };
    // The exactly-once oracle.
    for (i, node) in nodes.iter().enumerate() {
        let is_dest = dests.binary_search(&i).is_ok();
        if is_dest {
            if node.got.len() != m || node.got.iter().any(|&c| c != 1) {
                return Err(SimulatorError::Internal(format!(
                    "destination {i} received packets {:?} times (want each of {m} once)",
                    node.got
                )));
            }
        } else if node.got.iter().any(|&c| c != 0) {
            return Err(SimulatorError::Internal(format!(
                "host {i} is not a destination but received {:?}",
                node.got
            )));
        }
    }
    if net.stats.dropped > 0 {
        return Err(SimulatorError::Internal(format!(
            "{} packets dropped; last: {}",
            net.stats.dropped,
            net.last_drop.clone().unwrap_or_default()
        )));
    }
    let per: Vec<(usize, Time)> = dests
        .iter()
        .map(|&d| (d, nodes[d].done.unwrap_or(0)))
        .collect();
    let completion = per.iter().map(|p| p.1).max().unwrap_or(0);
    let mean = per.iter().map(|p| p.1 as f64).sum::<f64>() / per.len().max(1) as f64;
    Ok(RunResult {
        algorithm: name,
        source: cfg.source,
        destinations: dests,
        packets: m,
        completion,
        mean_completion: mean,
        completion_us: completion as f64 * cost.cycle_ns / 1000.0,
        per_destination: per,
        injected,
        network: net.stats,
        transfers,
    })
}

/// A packet reached `node`'s NI at `at`: NI receive overhead, then DMA to
/// the host; returns the cycle the NI is done with it.
fn receive(node: &mut Node, cost: &FabricCostModel, at: Time) -> Time {
    cost.host_ni().receive(&mut node.ni, at)
}

/// The host of `node` gets packet `j` by DMA starting no earlier than `t`.
fn to_host(node: &mut Node, cost: &FabricCostModel, m: usize, j: usize, t: Time) {
    if node.got.len() < m {
        node.got.resize(m, 0);
    }
    if let Some(c) = node.got.get_mut(j) {
        *c += 1;
    }
    let hn = cost.host_ni();
    let in_host = hn.to_host(&mut node.dma, t);
    node.last_in_host = node.last_in_host.max(in_host);
    node.received += 1;
    if node.received == m {
        node.done = Some(hn.complete(node.last_in_host));
    }
}
