//! Single multicasts (`mcsim run`): one multicast of `packets` packets in an
//! otherwise idle fabric, with the hosts' and NIs' costs.
//!
//! # NI-based trees (the smart NI, digest 000 §4)
//! `separate`, `chain`, `binomial`, `kbinomial[:k]` and, with a direct
//! topology, `utorus`, `ucube`, `maxport`, `combine`, `wsort`: every node runs
//! the real [`mcast::engine::NiEngine`] (rank i = host i), as
//! [`crate::unitstep`] does, and every copy it emits is a unicast packet in
//! the fabric. Costs: the source host pays t_hs once, then DMAs packet j to
//! its NI (packets available at t_hs + (j+1)·DMA); the NI processor spends
//! t_ns per copy sent and t_nr per packet received, in the order the engine
//! emits them (FPFS by default); a delivered packet is DMA'd to the host,
//! and a destination's host completes t_hr after its last packet is in host
//! memory. The chain order is the destinations by id on direct networks
//! (the dimension-ordered chain; topology-aware trees build their own) and
//! the paper's host ordering ([`mcast_algorithms::irregular::Fabric::host_chain`])
//! on irregular ones.
//!
//! # Worms on irregular fabrics (digest 000 §5, §6.4.1)
//! `ssr-greedy`, `ssr-lg`, `path-greedy`, `path-lg`, `tree-worm`: the worm
//! plan of [`mcast_algorithms::irregular::Fabric::plan`]; the switch engines
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
use mcast::wire::{Member, Packet as WirePacket};
use mcast::Forwarding;
use mcast_algorithms::irregular::{Scheme, SplitMix64};
use mcast_algorithms::path::PathAlgorithm;

use super::fabric::SimFabric;
use super::progress::{Progress, ProgressFn};
use super::{unicast, Happening, Net, NetStats, SimError};
use crate::cost::CostModel;
use crate::switch::routing::PathHeader;
use crate::switch::{Header, Packet, Time};

/// Which destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dests {
    /// K distinct random nodes other than the source.
    Random(usize),
    /// Every other node.
    All,
}

impl std::str::FromStr for Dests {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Dests, SimError> {
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
        Err(SimError::Input(format!(
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
    fn step(&mut self, net: &mut Net<Ev>) -> Result<Option<Happening<Ev>>, SimError> {
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {}

struct Node {
    ni_free: Time,
    dma_free: Time,
    got: Vec<u32>,
    received: usize,
    last_in_host: Time,
    done: Option<Time>,
}

fn pick_dests(n: usize, source: usize, d: Dests, seed: u64) -> Result<Vec<usize>, SimError> {
    if source >= n {
        return Err(SimError::Input(format!(
            "source {source} is outside the fabric (hosts 0..={})",
            n - 1
        )));
    }
    let others: Vec<usize> = (0..n).filter(|&x| x != source).collect();
    let mut v = match d {
        Dests::All => others,
        Dests::Random(k) => {
            if k > others.len() {
                return Err(SimError::Input(format!(
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
fn min_algo(t: &str, seed: u64) -> Result<Option<mcast_algorithms::min::Start>, SimError> {
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
        _ => Err(SimError::Input(format!(
            "bad algorithm `{t}` (min-two-pass or min-two-pass:S)"
        ))),
    }
}

/// A path-based (UTPR) algorithm name, if it is one.
fn path_algo(t: &str) -> Result<Option<PathAlgorithm>, SimError> {
    let l = t.to_ascii_lowercase();
    if !(l.starts_with("storus") || l.starts_with("s-torus") || l.starts_with("mtorus-")) {
        return Ok(None);
    }
    l.parse::<PathAlgorithm>().map(Some).map_err(|_| {
        SimError::Input(format!(
            "bad path algorithm `{t}` (storus, mtorus-d or mtorus-u:R with R >= 2)"
        ))
    })
}

/// Run one multicast.
///
/// # Errors
/// Bad input, a deadlock, or an oracle failure ([`SimError::Internal`]).
pub fn run(fabric: &SimFabric, cost: &CostModel, cfg: &RunConfig) -> Result<RunResult, SimError> {
    run_with_progress(fabric, cost, cfg, &mut |_| {})
}

/// [`run`], reporting the deliveries to `progress` now and then.
///
/// # Errors
/// As [`run`].
pub fn run_with_progress(
    fabric: &SimFabric,
    cost: &CostModel,
    cfg: &RunConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<RunResult, SimError> {
    if cfg.packets == 0 {
        return Err(SimError::Input("--packets must be at least 1".into()));
    }
    let routing = fabric.routing();
    let n = routing.nodes();
    let dests = pick_dests(n, cfg.source, cfg.dests, cfg.seed)?;
    let mut net: Net<Ev> = Net::new(routing, cost)?;
    let mut nodes: Vec<Node> = (0..n)
        .map(|_| Node {
            ni_free: 0,
            dma_free: 0,
            got: Vec::new(),
            received: 0,
            last_in_host: 0,
            done: None,
        })
        .collect();
    let m = cfg.packets;
    let mut bar = Reporter::new(progress, (dests.len() * m) as u64);
    let algo = cfg.algo.trim();
    let (name, injected) = if let Ok(scheme) = algo.parse::<Scheme>() {
        let SimFabric::Irregular(irr) = fabric else {
            return Err(SimError::Input(format!(
                "{algo} is a switch-based worm scheme; it needs an irregular fabric"
            )));
        };
        let plan = irr
            .fabric()
            .plan(scheme, cfg.source, &dests)
            .map_err(|e| SimError::Input(e.to_string()))?;
        let jobs = plan
            .sends
            .iter()
            .map(|s| {
                (
                    s.step,
                    s.sender,
                    Header::Irregular(Box::new(s.header.clone())),
                )
            })
            .collect();
        let inj = run_worms(&mut net, &mut nodes, &mut bar, cost, m, cfg.source, jobs)?;
        (scheme.name().to_string(), inj)
    } else if let Some(start) = min_algo(algo, cfg.seed)? {
        let SimFabric::Min(mr) = fabric else {
            return Err(SimError::Input(format!(
                "{algo} needs a MIN fabric (min:N)"
            )));
        };
        let d64: Vec<u64> = dests.iter().map(|&d| d as u64).collect();
        let plan = mcast_algorithms::min::two_pass(mr.net(), cfg.source as u64, &d64, start)
            .map_err(|e| SimError::Input(format!("{algo}: {e}")))?;
        let inj = run_min(&mut net, &mut nodes, &mut bar, cost, m, &plan)?;
        ("min-two-pass".to_string(), inj)
    } else if let Some(pa) = path_algo(algo)? {
        let topo = fabric.topology().ok_or_else(|| {
            SimError::Input(format!(
                "{algo} is a path-based (UTPR) scheme; it needs a unidirectional torus"
            ))
        })?;
        let plan = mcast_algorithms::path::plan(topo, pa, cfg.source, &dests)
            .map_err(|e| SimError::Input(format!("{algo}: {e}")))?;
        let mut jobs = Vec::new();
        for s in &plan.sends {
            // The Fig 5.9 header through the codec, as a router would read it.
            let bytes = mcast_algorithms::path::header::encode_simple(s.delivers())
                .map_err(|e| SimError::Internal(e.to_string()))?;
            let list = mcast_algorithms::path::header::decode_simple_exact(&bytes, n)
                .map_err(|e| SimError::Internal(e.to_string()))?;
            if list.len() > usize::from(u16::MAX) {
                return Err(SimError::Input(
                    "a path worm of more than 65535 destinations".into(),
                ));
            }
            let dests: Arc<[u32]> = list.iter().map(|&d| d as u32).collect();
            jobs.push((
                s.phase,
                s.sender,
                Header::Path(Box::new(PathHeader {
                    dests,
                    pos: 0,
                    on_h: false,
                })),
            ));
        }
        let inj = run_worms(&mut net, &mut nodes, &mut bar, cost, m, cfg.source, jobs)?;
        (pa.to_string(), inj)
    } else {
        // `separate` (the `mcsim plan` name) is the runtime's `flat`.
        let a: Algorithm = if algo == "separate" { "flat" } else { algo }
            .parse()
            .map_err(|e| SimError::Input(format!("unknown algorithm `{algo}`: {e}")))?;
        let topo = fabric.topology().cloned().map(Arc::new);
        let tree = a
            .resolve(dests.len() + 1, m, topo.as_deref())
            .map_err(|e| SimError::Input(e.to_string()))?;
        let chain: Vec<usize> = match fabric {
            SimFabric::Irregular(irr) => irr
                .fabric()
                .host_chain(cfg.source, &dests)
                .map_err(|e| SimError::Input(e.to_string()))?
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
    drop(bar);
    // The exactly-once oracle.
    for (i, node) in nodes.iter().enumerate() {
        let is_dest = dests.binary_search(&i).is_ok();
        if is_dest {
            if node.got.len() != m || node.got.iter().any(|&c| c != 1) {
                return Err(SimError::Internal(format!(
                    "destination {i} received packets {:?} times (want each of {m} once)",
                    node.got
                )));
            }
        } else if node.got.iter().any(|&c| c != 0) {
            return Err(SimError::Internal(format!(
                "host {i} is not a destination but received {:?}",
                node.got
            )));
        }
    }
    if net.stats.dropped > 0 {
        return Err(SimError::Internal(format!(
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
    })
}

/// A packet reached `node`'s NI at `at`: NI receive overhead, then DMA to
/// the host; returns the cycle the NI is done with it.
fn receive(node: &mut Node, cost: &CostModel, at: Time) -> Time {
    let start = node.ni_free.max(at);
    node.ni_free = start + cost.t_nr;
    node.ni_free
}

/// The host of `node` gets packet `j` by DMA starting no earlier than `t`.
fn to_host(node: &mut Node, cost: &CostModel, m: usize, j: usize, t: Time) {
    if node.got.len() < m {
        node.got.resize(m, 0);
    }
    if let Some(c) = node.got.get_mut(j) {
        *c += 1;
    }
    let s = node.dma_free.max(t);
    node.dma_free = s + cost.dma_cycles();
    node.last_in_host = node.last_in_host.max(node.dma_free);
    node.received += 1;
    if node.received == m {
        node.done = Some(node.last_in_host + cost.t_hr);
    }
}

#[allow(clippy::too_many_arguments)]
fn run_ni(
    net: &mut Net<Ev>,
    nodes: &mut [Node],
    bar: &mut Reporter<'_, '_>,
    cost: &CostModel,
    m: usize,
    source: usize,
    chain: &[usize],
    tree: TreeKind,
    topo: Option<Arc<mcast_algorithms::Topology>>,
    forwarding: Forwarding,
) -> Result<u64, SimError> {
    let n = nodes.len();
    let mut engines: Vec<NiEngine> = (0..n)
        .map(|r| NiEngine::new(r, n, 1, forwarding, 1).with_topology(topo.clone()))
        .collect();
    let members: Vec<Member> = chain
        .iter()
        .map(|&d| Member {
            rank: d as u32,
            ordinal: 0,
        })
        .collect();
    engines[source]
        .post_multicast(0, &members, Bytes::from(vec![0u8; m]), tree)
        .map_err(|e| SimError::Input(format!("engine: {e}")))?;
    let dma = cost.dma_cycles();
    let mut wire: Vec<Option<(usize, WirePacket)>> = Vec::new();
    let mut injected = 0u64;
    // Drain the engine of `at`; `avail(j)` = when packet j is at the NI.
    let mut drain = |net: &mut Net<Ev>,
                     nodes: &mut [Node],
                     eng: &mut NiEngine,
                     at: usize,
                     avail: &dyn Fn(usize) -> Time,
                     wire: &mut Vec<Option<(usize, WirePacket)>>| {
        while let Some(a) = eng.poll_action() {
            match a {
                Action::Send { to, packet } => {
                    let j = packet.header.pkt_idx as usize;
                    let node = &mut nodes[at];
                    let start = node.ni_free.max(avail(j));
                    node.ni_free = start + cost.t_ns;
                    let id = wire.len() as u64;
                    wire.push(Some((at, packet)));
                    injected += 1;
                    net.inject(
                        at,
                        node.ni_free,
                        Packet {
                            id,
                            header: unicast(to),
                        },
                    );
                }
                Action::Deliver(packet) => {
                    let j = packet.header.pkt_idx as usize;
                    let t = avail(j);
                    to_host(&mut nodes[at], cost, m, j, t);
                }
            }
        }
    };
    let t_hs = cost.t_hs;
    drain(
        net,
        nodes,
        &mut engines[source],
        source,
        &|j| t_hs + (j as Time + 1) * dma,
        &mut wire,
    );
    while let Some(h) = bar.step(net)? {
        match h {
            Happening::Arrived { node, packet, at } => {
                let Some((from, wp)) = wire.get_mut(packet.id as usize).and_then(Option::take)
                else {
                    return Err(SimError::Internal(format!(
                        "copy {} delivered twice or unknown",
                        packet.id
                    )));
                };
                let ready = receive(&mut nodes[node], cost, at);
                engines[node]
                    .packet_in(from, wp)
                    .map_err(|e| SimError::Internal(format!("engine {node}: {e}")))?;
                drain(net, nodes, &mut engines[node], node, &|_| ready, &mut wire);
            }
            Happening::User(e, _) => match e {},
        }
    }
    Ok(injected)
}

/// One worm to inject: (phase, sender, header).
type WormJob = (usize, usize, Header);

#[allow(clippy::too_many_arguments)]
fn run_worms(
    net: &mut Net<Ev>,
    nodes: &mut [Node],
    bar: &mut Reporter<'_, '_>,
    cost: &CostModel,
    m: usize,
    source: usize,
    jobs: Vec<WormJob>,
) -> Result<u64, SimError> {
    // Each sender's worms, in phase order.
    let mut by_sender: HashMap<usize, Vec<WormJob>> = HashMap::new();
    for j in jobs {
        by_sender.entry(j.1).or_default().push(j);
    }
    for v in by_sender.values_mut() {
        v.sort_by_key(|s| s.0);
    }
    let dma = cost.dma_cycles();
    let mut pkt_of: Vec<usize> = Vec::new();
    let mut injected = 0u64;
    let mut send_all =
        |net: &mut Net<Ev>, node: &mut Node, who: usize, ready: Time, pkt_of: &mut Vec<usize>| {
            let mut host = ready;
            for w in by_sender.get(&who).map(Vec::as_slice).unwrap_or(&[]) {
                host += cost.t_hs;
                for j in 0..m {
                    let s = node.dma_free.max(host);
                    node.dma_free = s + dma;
                    let start = node.ni_free.max(node.dma_free);
                    node.ni_free = start + cost.t_ns;
                    let id = pkt_of.len() as u64;
                    pkt_of.push(j);
                    injected += 1;
                    net.inject(
                        who,
                        node.ni_free,
                        Packet {
                            id,
                            header: w.2.clone(),
                        },
                    );
                }
            }
        };
    send_all(net, &mut nodes[source], source, 0, &mut pkt_of);
    while let Some(h) = bar.step(net)? {
        match h {
            Happening::Arrived { node, packet, at } => {
                let Some(&j) = pkt_of.get(packet.id as usize) else {
                    return Err(SimError::Internal(format!("unknown packet {}", packet.id)));
                };
                let nd = &mut nodes[node];
                let ready = receive(nd, cost, at);
                let was_done = nd.done.is_some();
                to_host(nd, cost, m, j, ready);
                if !was_done {
                    if let Some(done) = nd.done {
                        send_all(net, &mut nodes[node], node, done, &mut pkt_of);
                    }
                }
            }
            Happening::User(e, _) => match e {},
        }
    }
    Ok(injected)
}

/// The two-pass MIN multicast (digest 001): the source injects the region
/// packet (pass 1); each relay's NI, on receiving it, injects its pass-2
/// unicast (t_nr + t_ns, no host involvement); destinations' hosts receive
/// pass-2 packets only.
fn run_min(
    net: &mut Net<Ev>,
    nodes: &mut [Node],
    bar: &mut Reporter<'_, '_>,
    cost: &CostModel,
    m: usize,
    plan: &mcast_algorithms::min::TwoPassPlan,
) -> Result<u64, SimError> {
    let dma = cost.dma_cycles();
    // id -> (pass, packet index)
    let mut meta: Vec<(u32, usize)> = Vec::new();
    let mut injected = 0u64;
    let source = plan.source as usize;
    let mut relay_sends: HashMap<usize, Vec<Header>> = HashMap::new();
    let mut pass1 = Vec::new();
    for s in &plan.sends {
        if s.pass == 1 {
            pass1.push(Header::Min(s.header));
        } else {
            relay_sends
                .entry(s.from as usize)
                .or_default()
                .push(Header::Min(s.header));
        }
    }
    {
        let node = &mut nodes[source];
        let host = cost.t_hs;
        for h in &pass1 {
            for j in 0..m {
                let s = node.dma_free.max(host);
                node.dma_free = s + dma;
                let start = node.ni_free.max(node.dma_free);
                node.ni_free = start + cost.t_ns;
                meta.push((1, j));
                injected += 1;
                net.inject(
                    source,
                    node.ni_free,
                    Packet {
                        id: meta.len() as u64 - 1,
                        header: h.clone(),
                    },
                );
            }
        }
    }
    while let Some(h) = bar.step(net)? {
        match h {
            Happening::Arrived { node, packet, at } => {
                let Some(&(pass, j)) = meta.get(packet.id as usize) else {
                    return Err(SimError::Internal(format!("unknown packet {}", packet.id)));
                };
                let nd = &mut nodes[node];
                let ready = receive(nd, cost, at);
                if pass == 2 {
                    to_host(nd, cost, m, j, ready);
                    continue;
                }
                for h in relay_sends.get(&node).map(Vec::as_slice).unwrap_or(&[]) {
                    nd.ni_free += cost.t_ns;
                    meta.push((2, j));
                    injected += 1;
                    net.inject(
                        node,
                        nd.ni_free,
                        Packet {
                            id: meta.len() as u64 - 1,
                            header: h.clone(),
                        },
                    );
                }
            }
            Happening::User(e, _) => match e {},
        }
    }
    Ok(injected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(algo: &str, dests: Dests, packets: usize) -> RunConfig {
        RunConfig {
            algo: algo.into(),
            dests,
            packets,
            seed: 1,
            source: 0,
            forwarding: Forwarding::Fpfs,
        }
    }

    /// Digest 000 §8.3 with the unit-step preset on a one-switch fabric: the
    /// simulated FPFS completion equals the table (L1 + (m-1)·k where the
    /// theorem holds), and FCFS too.
    #[test]
    fn unitstep_preset_reproduces_digest_8_3() {
        let cost = CostModel::unitstep();
        for (n, k, fpfs, fcfs) in crate::unitstep::DIGEST_8_3 {
            let f = SimFabric::parse(&format!("crossbar:{n}"), true).unwrap();
            for m in 1..=6 {
                let mut c = cfg(&format!("kbinomial:{k}"), Dests::All, m);
                let r = run(&f, &cost, &c).unwrap();
                assert_eq!(r.completion, fpfs[m - 1], "FPFS n={n} k={k} m={m}");
                if let Some(w) = fcfs {
                    c.forwarding = Forwarding::Fcfs;
                    let r = run(&f, &cost, &c).unwrap();
                    assert_eq!(r.completion, w[m - 1], "FCFS n={n} k={k} m={m}");
                }
            }
        }
    }

    /// Beyond the table: on a crossbar with the unit-step preset, the DES
    /// gives every destination the completion step of the NI-engine-only
    /// unit-step driver ([`crate::unitstep`]), for every n ≤ 20, k ≤ 4,
    /// m ≤ 5, FPFS and FCFS.
    #[test]
    fn unitstep_preset_equals_the_unitstep_driver() {
        use crate::unitstep::{simulate, Post};
        use mcast_algorithms::Shape;
        let cost = CostModel::unitstep();
        for n in 2..=20 {
            let f = SimFabric::parse(&format!("crossbar:{n}"), true).unwrap();
            for k in 1..=4 {
                for m in 1..=5 {
                    for fw in [Forwarding::Fpfs, Forwarding::Fcfs] {
                        let want =
                            simulate(n, &Post::Bcast { root: 0 }, Shape::KBinomial { k }, fw, m)
                                .unwrap();
                        let mut c = cfg(&format!("kbinomial:{k}"), Dests::All, m);
                        c.forwarding = fw;
                        let got = run(&f, &cost, &c).unwrap();
                        assert_eq!(got.completion, want.completion, "n={n} k={k} m={m} {fw:?}");
                        for (d, t) in got.per_destination {
                            assert_eq!(
                                Some(&t),
                                want.arrivals[d].iter().max(),
                                "n={n} k={k} m={m} {fw:?} node {d}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// NI-based trees on direct fabrics deliver exactly once (the run's
    /// oracle) and take at least the zero-load time of one copy.
    #[test]
    fn ni_trees_on_direct_fabrics() {
        let cost = CostModel::default();
        for (fabric, algo) in [
            ("torus:4x4", "utorus"),
            ("torus:4x4:uni", "kbinomial"),
            ("hypercube:4", "wsort"),
            ("hypercube:4", "ucube"),
            ("mesh:4x4", "binomial"),
            ("torus:4x4", "separate"),
        ] {
            let f = SimFabric::parse(fabric, true).unwrap();
            for m in [1, 3] {
                let r = run(&f, &cost, &cfg(algo, Dests::Random(9), m)).unwrap();
                let one = cost.t_hs + cost.dma_cycles() + cost.t_ns + cost.t_nr + cost.t_hr;
                assert!(r.completion > one, "{fabric} {algo}: {r:?}");
                assert_eq!(r.destinations.len(), 9);
            }
        }
    }

    /// SSR, path and tree worms on an irregular fabric deliver exactly once
    /// (the run's oracle), and a single tree worm beats separate addressing.
    #[test]
    fn worms_deliver_exactly_once() {
        let f = SimFabric::parse("irregular:switches=8,ports=8,nodes=32,seed=4", true).unwrap();
        let cost = CostModel::default();
        let mut got = HashMap::new();
        for algo in [
            "ssr-greedy",
            "ssr-lg",
            "path-greedy",
            "path-lg",
            "tree-worm",
            "kbinomial",
            "separate",
        ] {
            for m in [1, 2] {
                let r = run(&f, &cost, &cfg(algo, Dests::Random(15), m)).unwrap();
                got.insert((algo, m), r.completion);
            }
            run(&f, &cost, &cfg(algo, Dests::All, 1)).unwrap();
        }
        assert!(got[&("tree-worm", 1)] < got[&("separate", 1)]);
    }

    /// Path worms (S-torus, M_d-torus, M_u-torus) on a unidirectional torus
    /// deliver exactly once with intermediate reception (the run's oracle);
    /// one S-torus worm injects one packet per message packet.
    #[test]
    fn path_worms_on_unidirectional_tori() {
        let cost = CostModel::preset("low-startup").unwrap();
        let f = SimFabric::parse("torus:6x6:uni", true).unwrap();
        for algo in ["storus", "mtorus-d", "mtorus-u:4", "mtorus-u:2"] {
            for m in [1, 3] {
                let r = run(&f, &cost, &cfg(algo, Dests::Random(12), m)).unwrap();
                if algo == "storus" {
                    assert_eq!(r.injected, m as u64);
                }
            }
            run(&f, &cost, &cfg(algo, Dests::All, 2)).unwrap();
        }
        let bi = SimFabric::parse("torus:6x6", true).unwrap();
        assert!(run(&bi, &cost, &cfg("storus", Dests::All, 1)).is_err());
    }

    /// The two-pass MIN multicast delivers exactly once (the run's oracle):
    /// f relays each send one unicast per packet.
    #[test]
    fn min_two_pass_exactly_once() {
        let cost = CostModel::default();
        for spec in ["min:4", "min:5:omega"] {
            let f = SimFabric::parse(spec, true).unwrap();
            for (dests, m) in [
                (Dests::Random(5), 1),
                (Dests::Random(9), 2),
                (Dests::All, 1),
            ] {
                let r = run(&f, &cost, &cfg("min-two-pass", dests, m)).unwrap();
                let fan = r.destinations.len() as u64;
                assert_eq!(r.injected, m as u64 * (1 + fan));
            }
            run(&f, &cost, &cfg("min-two-pass:3", Dests::Random(4), 1)).unwrap();
            run(&f, &cost, &cfg("kbinomial", Dests::Random(6), 2)).unwrap();
        }
    }

    #[test]
    fn bad_requests_are_errors() {
        let f = SimFabric::parse("torus:4x4", true).unwrap();
        let cost = CostModel::default();
        assert!(run(&f, &cost, &cfg("tree-worm", Dests::All, 1)).is_err());
        assert!(run(&f, &cost, &cfg("nope", Dests::All, 1)).is_err());
        assert!(run(&f, &cost, &cfg("kbinomial", Dests::Random(16), 1)).is_err());
        assert!("random:0".parse::<Dests>().is_err());
    }
}
