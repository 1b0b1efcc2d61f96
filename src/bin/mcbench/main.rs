//! mcbench: broadcast latency, measured the osu_bcast way.
//!
//! For each message size: warm-up iterations first; then each timed iteration
//! is one bcast from the root followed by an untimed barrier; each rank
//! averages its own times; the table reports the average, minimum and maximum
//! of those per-rank averages. Every received byte is checked (outside the
//! timed region) and any mismatch exits non-zero.
//!
//! Run it under mclaunch (`mclaunch -n 8 mcbench`), or give `-n N` and it
//! launches itself through the mclaunch found beside it.
//!
//! `--soak SECONDS` runs the soak test instead (see `soak.rs`); `--coll X`
//! measures another collective, or send/recv latency (see `coll.rs`).

mod coll;
mod soak;
mod timeline;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use mcast::{Algorithm, Comm, Config, Forwarding};
use serde::Serialize;

/// osu_bcast's threshold between small and large messages.
const LARGE_MESSAGE: usize = 8192;

#[derive(Parser, Debug)]
#[command(
    name = "mcbench",
    version,
    about = "Collective latency benchmarks (OSU methods) for mcast"
)]
struct Args {
    /// What to measure: bcast (osu_bcast), a data collective (osu_allreduce,
    /// ...; f32 Sum for the reductions, u8 otherwise), or latency
    /// (osu_latency: send/recv ping-pong between ranks 0 and 1).
    #[arg(long, value_enum, default_value = "bcast")]
    coll: coll::Coll,
    /// Launch N ranks through mclaunch (when not already running under it).
    #[arg(short = 'n', long = "np")]
    np: Option<usize>,
    /// Message sizes: MIN:MAX (powers of two from MIN to MAX), or just MAX
    /// [default: 1:4194304; under `mclaunch --fabric`, 1:16384].
    #[arg(short = 'm', long = "message-size")]
    sizes: Option<String>,
    /// Timed iterations per size (default 1000 below 8 KiB, 100 from 8 KiB;
    /// under a fabric 100 and 10).
    #[arg(short = 'i', long = "iterations")]
    iterations: Option<usize>,
    /// Warm-up iterations per size (default 200 below 8 KiB, 10 from 8 KiB).
    #[arg(short = 'x', long = "warmup")]
    warmup: Option<usize>,
    /// Algorithm: auto, flat, chain, binomial, kbinomial, kbinomial:K.
    #[arg(long = "algo", default_value = "auto")]
    algo: Algorithm,
    /// The root of bcast, reduce, gather and scatter.
    #[arg(long, default_value_t = 0)]
    root: usize,
    /// NI forwarding discipline (overrides MCAST_FORWARDING): fpfs or fcfs.
    #[arg(long)]
    forwarding: Option<Forwarding>,
    /// Packet payload bytes (overrides MCAST_PACKET_BYTES, in every medium).
    #[arg(long = "packet-bytes")]
    packet_bytes: Option<usize>,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Soak test instead of the benchmark: random bcasts, multicasts and
    /// barriers from a shared seed for SECONDS, every byte checksummed;
    /// exits non-zero on any error or corruption.
    #[arg(long, value_name = "SECONDS")]
    soak: Option<f64>,
    /// Seed of the soak's operations (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Largest soak message in bytes.
    #[arg(long, default_value_t = 4 << 20)]
    soak_max_bytes: usize,
    /// Throughput instead of latency: every rank multicasts `-i` messages
    /// of the largest `-m` size, message j to rank (r + 1 + j mod (n−1))
    /// mod n, and receives as many, with at most 4 of its own messages sent
    /// ahead of its receives (so that the flow-control budget, not the
    /// benchmark, bounds what is in flight); prints the aggregate payload
    /// bytes per second over the whole job (wall time, from a barrier to a
    /// barrier).
    #[arg(long)]
    throughput: bool,
    /// Write each rank's timeline of the bcast benchmark to
    /// DIR/rank-<R>.tsv: for each timed iteration (the first 10,000 of
    /// each size), when it called and left the bcast and the barrier
    /// (CLOCK_MONOTONIC ns: comparable between ranks of one machine only,
    /// e.g. the namespace test cluster). `bench/timeline.py DIR` lines
    /// the ranks up.
    #[arg(long, value_name = "DIR")]
    timeline: Option<std::path::PathBuf>,
}

#[derive(Serialize, Debug)]
struct Row {
    size: usize,
    avg_us: f64,
    min_us: f64,
    max_us: f64,
    iterations: usize,
    /// Steps of the tree the algorithm resolved to (levels below the
    /// root: `Comm::bcast_depth`), host- and topology-aware trees
    /// included; none for a worm scheme.
    depth: Option<usize>,
    /// Under an emulated fabric: the model latency (cost-model time from
    /// the root's post to a rank's completion), averaged per rank over the
    /// iterations; then the mean over the non-root ranks, and the largest
    /// (the last rank to complete: the multicast latency of the papers).
    #[serde(skip_serializing_if = "Option::is_none")]
    model_avg_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_max_us: Option<f64>,
    /// bcast only: rank 0's wall clock per timed iteration (the root's
    /// fill, the bcast, the receivers' check, the untimed barrier): a
    /// figure no barrier can hide a hop from, unlike the timed bcast alone
    /// (a rank that leaves the barrier after its data arrived times almost
    /// nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    cycle_us: Option<f64>,
}

#[derive(Serialize, Debug)]
struct Report {
    benchmark: &'static str,
    ranks: usize,
    root: usize,
    algorithm: String,
    forwarding: String,
    packet_bytes: usize,
    /// Payload bytes per packet of a large message, where large messages
    /// are cut in larger packets (across hosts: `mcast::engine::PacketSize`).
    #[serde(skip_serializing_if = "Option::is_none")]
    large_packet_bytes: Option<usize>,
    /// The length from which a message is large.
    #[serde(skip_serializing_if = "Option::is_none")]
    large_from_bytes: Option<usize>,
    /// `--coll`'s element type and reduction operator (absent for bcast).
    #[serde(skip_serializing_if = "Option::is_none")]
    element: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    op: Option<&'static str>,
    /// `network` or `shared-memory` (see `mcast::Medium`).
    medium: String,
    /// What carried the packets to the peers (`ring`, `unix`, `tcp`,
    /// `fabric`; several, comma-separated, across hosts).
    links: String,
    /// The emulated fabric (`mclaunch --fabric`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    fabric: Option<String>,
    /// The hosts the ranks ran on, each with its ranks.
    hosts: Vec<HostRanks>,
    results: Vec<Row>,
}

/// One host of the job and the ranks that ran on it.
#[derive(Debug, Clone, Serialize)]
struct HostRanks {
    host: String,
    ranks: Vec<usize>,
}

/// Longest host name [`host_map`] keeps.
const HOST_NAME_BYTES: usize = 64;

/// Every rank's host name, gathered (a collective: every rank calls it),
/// grouped by host in order of first appearance.
fn host_map(comm: &Comm) -> Result<Vec<HostRanks>> {
    let mut mine = [0u8; HOST_NAME_BYTES];
    let name = mcast::netif::hostname();
    let n = name.len().min(HOST_NAME_BYTES);
    mine[..n].copy_from_slice(&name.as_bytes()[..n]);
    let mut all = vec![0u8; HOST_NAME_BYTES * comm.size()];
    comm.allgather(&mine, &mut all)
        .context("gathering the ranks' host names")?;
    let mut hosts: Vec<HostRanks> = Vec::new();
    for (rank, raw) in all.chunks(HOST_NAME_BYTES).enumerate() {
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        let host = String::from_utf8_lossy(&raw[..end]).into_owned();
        match hosts.iter_mut().find(|h| h.host == host) {
            Some(h) => h.ranks.push(rank),
            None => hosts.push(HostRanks {
                host,
                ranks: vec![rank],
            }),
        }
    }
    Ok(hosts)
}

/// The header line naming the hosts and their ranks:
/// `# hosts: 3 (h1: 0 1, h2: 2 3, h3: 4 5)`.
fn hosts_line(hosts: &[HostRanks]) -> String {
    let each: Vec<String> = hosts
        .iter()
        .map(|h| {
            let ranks: Vec<String> = h.ranks.iter().map(usize::to_string).collect();
            format!("{}: {}", h.host, ranks.join(" "))
        })
        .collect();
    format!("# hosts: {} ({})", hosts.len(), each.join(", "))
}

fn parse_sizes(s: &str) -> Result<Vec<usize>> {
    let (lo, hi) = match s.split_once(':') {
        Some((a, b)) => (a.trim().parse::<usize>()?, b.trim().parse::<usize>()?),
        None => (1, s.trim().parse::<usize>()?),
    };
    if lo > hi {
        bail!("message sizes {s}: MIN is above MAX");
    }
    let mut out = Vec::new();
    if lo == 0 {
        out.push(0);
    }
    let mut v = lo.max(1);
    while v <= hi {
        out.push(v);
        v = match v.checked_mul(2) {
            Some(n) => n,
            None => break,
        };
    }
    Ok(out)
}

/// The byte at `i` of iteration `iter`'s message of `size` bytes. Consecutive
/// iterations differ in every byte, so a stale buffer never passes.
/// The byte at offset i of iteration `iter`'s `size`-byte message is
/// `i as u8 + seed`: a 256-byte period, so fill and check work a block at a
/// time (memcpy / memcmp speed; `osu_bcast_lite.c` does the same).
fn pattern(size: usize, iter: usize) -> [u8; 256] {
    let seed = (iter.wrapping_mul(7) ^ size.wrapping_mul(13)) as u8;
    std::array::from_fn(|i| (i as u8).wrapping_add(seed))
}

fn fill(buf: &mut [u8], size: usize, iter: usize) {
    let p = pattern(size, iter);
    for chunk in buf.chunks_mut(256) {
        chunk.copy_from_slice(&p[..chunk.len()]);
    }
}

fn check(buf: &[u8], size: usize, iter: usize) -> Option<usize> {
    let p = pattern(size, iter);
    let bad = buf
        .chunks(256)
        .position(|chunk| chunk != &p[..chunk.len()])?;
    let chunk = &buf[bad * 256..];
    chunk
        .iter()
        .zip(p.iter())
        .position(|(a, b)| a != b)
        .map(|at| bad * 256 + at)
}

fn self_launch(n: usize) -> Result<ExitCode> {
    let me = std::env::current_exe().context("locating mcbench")?;
    let beside = me.with_file_name("mclaunch");
    let launcher = if beside.exists() {
        beside
    } else {
        "mclaunch".into()
    };
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "-n" || a == "--np" {
            it.next();
        } else if a.starts_with("--np=") || (a.starts_with("-n") && a.len() > 2) {
        } else {
            args.push(a);
        }
    }
    let status = std::process::Command::new(&launcher)
        .arg("-n")
        .arg(n.to_string())
        .arg(&me)
        .args(&args)
        .status()
        .with_context(|| format!("running {}", launcher.display()))?;
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

fn run(args: Args) -> Result<()> {
    let mut cfg = Config::from_env()?;
    let fabric = cfg.fabric.is_some();
    let sizes =
        parse_sizes(
            args.sizes
                .as_deref()
                .unwrap_or(if fabric { "1:16384" } else { "1:4194304" }),
        )?;
    if let Some(f) = args.forwarding {
        cfg.forwarding = f;
    }
    if let Some(p) = args.packet_bytes {
        if p == 0 || p > mcast::config::MAX_PACKET_BYTES {
            bail!("--packet-bytes {p} out of range");
        }
        cfg.packet_bytes = p;
        cfg.shm_packet_bytes = p;
        cfg.hosts_packet_bytes = p;
        cfg.hosts_large_packet_bytes = 0;
    }
    let comm = Comm::with_config(cfg)?;
    let hosts = host_map(&comm)?;
    if let Some(secs) = args.soak {
        if !(secs >= 0.0 && secs.is_finite()) {
            bail!("--soak {secs}: expected a number of seconds");
        }
        let clean = soak::run(&comm, secs, args.seed, args.soak_max_bytes, args.json)?;
        if !clean {
            bail!("the soak found errors");
        }
        comm.finalize()?;
        return Ok(());
    }
    let (rank, nranks) = (comm.rank(), comm.size());
    if args.throughput {
        let size = *sizes.last().unwrap_or(&1);
        throughput(
            &comm,
            size,
            args.iterations.unwrap_or(200).max(1),
            args.json,
        )?;
        comm.finalize()?;
        return Ok(());
    }
    if args.coll != coll::Coll::Bcast {
        let rows = coll::measure(&comm, &args, &sizes, fabric)?;
        if rank == 0 {
            let (element, op) = coll::element_op(args.coll);
            let report = Report {
                benchmark: args.coll.name(),
                algorithm: comm.config().algorithm.to_string(),
                element: Some(element),
                op,
                results: rows,
                ..report_of(&comm, args.root, String::new(), hosts)
            };
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                coll::print_table(&report, args.coll);
            }
        }
        comm.finalize()?;
        return Ok(());
    }
    if args.root >= nranks {
        bail!("--root {} but only {nranks} ranks", args.root);
    }
    let bar = (rank == 0 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(sizes.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} sizes {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let mut rows = Vec::new();
    let mut buf = vec![0u8; *sizes.last().unwrap_or(&0)];
    let mut tl = match &args.timeline {
        Some(dir) => Some(timeline::Timeline::create(dir, rank)?),
        None => None,
    };
    // A clock reading for the timeline, none without one.
    let timed = tl.is_some();
    let stamp = || if timed { timeline::now_ns() } else { 0 };
    for &size in &sizes {
        let large = size >= LARGE_MESSAGE;
        let iters = args
            .iterations
            .unwrap_or(match (fabric, large) {
                (false, false) => 1000,
                (false, true) | (true, false) => 100,
                (true, true) => 10,
            })
            .max(1);
        let warmup = args.warmup.unwrap_or(match (fabric, large) {
            (false, false) => 200,
            (false, true) => 10,
            (true, false) => 10,
            (true, true) => 2,
        });
        if let Some(b) = &bar {
            b.set_message(format!("{size} B"));
        }
        let buf = &mut buf[..size];
        comm.barrier()?;
        let mut total = 0.0f64;
        let mut model = 0.0f64;
        let mut modelled = 0usize;
        let mut cycle_start = Instant::now();
        for i in 0..warmup + iters {
            if i == warmup {
                cycle_start = Instant::now();
            }
            if rank == args.root {
                fill(buf, size, i);
            }
            let called = stamp();
            let t0 = Instant::now();
            comm.bcast_with(args.root, buf, args.algo)?;
            let dt = t0.elapsed().as_secs_f64();
            let done = stamp();
            if i >= warmup {
                total += dt;
                if let Some(m) = comm.last_model_latency() {
                    model += m.as_micros_f64();
                    modelled += 1;
                }
            }
            if rank != args.root {
                if let Some(at) = check(buf, size, i) {
                    bail!("rank {rank}: wrong byte at offset {at} of a {size}-byte bcast (iteration {i})");
                }
            }
            let entered = stamp();
            comm.barrier()?;
            if let Some(t) = tl.as_mut().filter(|_| i >= warmup) {
                t.push([called, done, entered, stamp()]);
            }
        }
        let cycle_us = cycle_start.elapsed().as_secs_f64() * 1e6 / iters as f64;
        // After the clock stopped: writing is not part of the iteration.
        if let Some(t) = tl.as_mut() {
            t.flush_size(size)?;
        }
        let mine = total * 1e6 / iters as f64;
        let mine_model = if modelled > 0 {
            model / modelled as f64
        } else {
            f64::NAN
        };
        // Gather every rank's averages at rank 0 (over multicast).
        if rank != 0 {
            let mut msg = mine.to_le_bytes().to_vec();
            msg.extend_from_slice(&mine_model.to_le_bytes());
            comm.multicast(&[0], &msg)?;
        } else {
            let (mut sum, mut min, mut max) = (mine, mine, mine);
            let mut models = Vec::new();
            if !mine_model.is_nan() {
                models.push(mine_model);
            }
            for _ in 1..nranks {
                let r = comm.recv_multicast()?;
                let bad = || format!("bad timing report from rank {}", r.source);
                let (w, m) = r.data.split_at_checked(8).with_context(bad)?;
                let v = f64::from_le_bytes(w.try_into().with_context(bad)?);
                let m = f64::from_le_bytes(m.try_into().with_context(bad)?);
                sum += v;
                min = min.min(v);
                max = max.max(v);
                if !m.is_nan() {
                    models.push(m);
                }
            }
            let model_avg_us =
                (!models.is_empty()).then(|| models.iter().sum::<f64>() / models.len() as f64);
            let model_max_us = models.iter().copied().reduce(f64::max);
            rows.push(Row {
                size,
                avg_us: sum / nranks as f64,
                min_us: min,
                max_us: max,
                iterations: iters,
                depth: comm.bcast_depth(args.root, size, args.algo),
                model_avg_us,
                model_max_us,
                cycle_us: Some(cycle_us),
            });
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if rank == 0 {
        let report = Report {
            results: rows,
            ..report_of(&comm, args.root, args.algo.to_string(), hosts)
        };
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!("# mcast Broadcast Latency Test (osu_bcast method)");
            println!(
                "# ranks: {}, root: {}, algorithm: {}, forwarding: {}, packet: {} B{}",
                report.ranks,
                report.root,
                report.algorithm,
                report.forwarding,
                report.packet_bytes,
                match (report.large_packet_bytes, report.large_from_bytes) {
                    (Some(b), Some(from)) => format!(" ({b} B from {from} B)"),
                    _ => String::new(),
                }
            );
            println!("{}", hosts_line(&report.hosts));
            if let Some(f) = &report.fabric {
                println!("# fabric: {f} (model latency: cost-model time, root post to completion)");
                println!(
                    "# Size       Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations   Model Avg(us)   Model Max(us)"
                );
            } else {
                println!(
                    "# Size       Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations"
                );
            }
            for r in &report.results {
                let model = match (r.model_avg_us, r.model_max_us) {
                    (Some(a), Some(m)) => format!("{a:>16.3}{m:>16.3}"),
                    _ => String::new(),
                };
                println!(
                    "{:<10}{:>18.2}{:>20.2}{:>20.2}{:>12}{model}",
                    r.size, r.avg_us, r.min_us, r.max_us, r.iterations
                );
            }
        }
    }
    comm.finalize()?;
    Ok(())
}

/// A bcast report without results.
fn report_of(comm: &Comm, root: usize, algorithm: String, hosts: Vec<HostRanks>) -> Report {
    Report {
        benchmark: "bcast",
        ranks: comm.size(),
        root,
        algorithm,
        forwarding: comm.config().forwarding.to_string(),
        packet_bytes: comm.packet_bytes(),
        large_packet_bytes: comm.packets().large().map(|l| l.0),
        large_from_bytes: comm.packets().large().map(|l| l.1),
        element: None,
        op: None,
        medium: match comm.medium() {
            mcast::Medium::Network => "network".into(),
            mcast::Medium::SharedMemory => "shared-memory".into(),
            mcast::Medium::Hosts { hosts } => format!("hosts:{hosts}"),
        },
        fabric: comm.fabric().map(str::to_string),
        links: links_of(comm),
        hosts,
        results: Vec::new(),
    }
}

/// The kinds of link this rank has to its peers, comma-separated.
fn links_of(comm: &Comm) -> String {
    let kinds: Vec<String> = comm.link_kinds().iter().map(|l| l.to_string()).collect();
    kinds.join(",")
}

/// How many of its own messages a rank of `--throughput` sends ahead of
/// its receives at most, when flow control lets it and there are as many
/// ranks (see [`throughput_ahead`]).
const THROUGHPUT_AHEAD: usize = 8;

/// The rank that rank `rank` of `n` sends to at step `j` of `--throughput`
/// (every other rank in turn), and the one it receives from there (the
/// rank that sends to it at that step).
fn throughput_peers(rank: usize, n: usize, j: usize) -> (usize, usize) {
    let k = 1 + j % (n - 1);
    ((rank + k) % n, (rank + n - k) % n)
}

/// How many messages ahead of its receives a rank of `--throughput` sends.
///
/// Each rank takes its messages in step order, each from the rank that
/// sent it at that step. Then a wait never closes a cycle: a rank waiting
/// to receive waits on one that has sent fewer messages, and a rank whose
/// send waits on flow control waits on a peer holding at least two of its
/// messages untaken, one n−1 steps after the other, so a peer that has sent
/// fewer (as long as a rank is at most n ahead). When flow control blocks
/// a pair with only one message untaken (a message near the window), that
/// holds only when a rank takes each step's message before it sends the
/// next: ahead = 1. Sending everything first, or taking messages in arrival
/// order, deadlocked with 4 MiB messages on 3 hosts × 2 (each rank blocked
/// sending to one blocked sending).
fn throughput_ahead(window: u64, cost: u64, n: usize) -> usize {
    // The flow control blocks a send once `out + cost > window` and
    // `out >= window / 4`, where `out` includes up to `window / 4` taken
    // but not yet credited: blocked means more than `3/4 window − cost`
    // untaken, which is at least one more message when this is ≥ cost.
    if window == 0 || window.saturating_mul(3) / 4 >= cost.saturating_mul(2) {
        THROUGHPUT_AHEAD.min(n)
    } else {
        1
    }
}

/// `--throughput`: see [`Args::throughput`].
fn throughput(comm: &Comm, size: usize, messages: usize, json: bool) -> Result<()> {
    let (rank, n) = (comm.rank(), comm.size());
    if n < 2 {
        bail!("--throughput needs at least 2 ranks");
    }
    let data = vec![0x5Au8; size];
    let check = |r: mcast::Received| {
        // One memcmp against the sent pattern (a byte loop with an early
        // exit took an eighth of the run's CPU at 4 MiB).
        if r.data[..] != data[..] {
            bail!("rank {rank}: corrupted message from rank {}", r.source);
        }
        Ok(())
    };
    let ahead = throughput_ahead(comm.flow_window(), comm.flow_cost(size), n);
    comm.barrier()?;
    let t0 = Instant::now();
    // Every rank gets exactly one message per step: it takes step i's
    // (from that step's sender) once it has sent step i + ahead − 1's.
    let mut received = 0;
    for j in 0..messages {
        comm.multicast(&[throughput_peers(rank, n, j).0], &data)?;
        if j + 1 >= ahead {
            check(comm.recv_multicast_from(throughput_peers(rank, n, received).1)?)?;
            received += 1;
        }
    }
    for i in received..messages {
        check(comm.recv_multicast_from(throughput_peers(rank, n, i).1)?)?;
    }
    comm.barrier()?;
    let secs = t0.elapsed().as_secs_f64();
    if rank == 0 {
        let bytes = (n * messages * size) as f64;
        #[derive(Serialize)]
        struct Tput<'a> {
            benchmark: &'static str,
            ranks: usize,
            message_bytes: usize,
            messages_per_rank: usize,
            packet_bytes: usize,
            fabric: Option<&'a str>,
            seconds: f64,
            bytes_per_s: f64,
            packets_per_s: f64,
        }
        let packets = n * messages * comm.packet_count(size);
        let t = Tput {
            benchmark: "throughput",
            ranks: n,
            message_bytes: size,
            messages_per_rank: messages,
            packet_bytes: comm.packets().for_len(size),
            fabric: comm.fabric(),
            seconds: secs,
            bytes_per_s: bytes / secs,
            packets_per_s: packets as f64 / secs,
        };
        if json {
            println!("{}", serde_json::to_string_pretty(&t)?);
        } else {
            println!(
                "# mcast throughput: {n} ranks, {messages} messages of {size} B per rank{}",
                t.fabric
                    .map(|f| format!(", fabric {f}"))
                    .unwrap_or_default()
            );
            println!(
                "{:.3} MB/s aggregate ({:.0} packets/s of {} B) in {secs:.3} s",
                t.bytes_per_s / 1e6,
                t.packets_per_s,
                t.packet_bytes
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    mcast::logging::init();
    let args = Args::parse();
    if let Some(n) = args.np {
        if std::env::var_os(mcast::config::ENV_RANK).is_none() {
            return match self_launch(n) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("mcbench: {e:#}");
                    ExitCode::from(2)
                }
            };
        }
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcbench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_sizes("1:16").unwrap(), vec![1, 2, 4, 8, 16]);
        assert_eq!(parse_sizes("4").unwrap(), vec![1, 2, 4]);
        assert_eq!(parse_sizes("0:2").unwrap(), vec![0, 1, 2]);
        assert!(parse_sizes("8:4").is_err());
        assert!(parse_sizes("x").is_err());
    }

    #[test]
    fn stale_buffers_fail_the_check() {
        let mut b = vec![0u8; 1000];
        fill(&mut b, 1000, 3);
        assert_eq!(check(&b, 1000, 3), None);
        assert_eq!(check(&b, 1000, 4), Some(0));
    }

    #[test]
    fn throughput_steps_pair_every_sender_with_its_receiver() {
        for n in 2..9 {
            for j in 0..3 * n {
                let mut got = vec![0; n];
                for r in 0..n {
                    let (to, from) = throughput_peers(r, n, j);
                    assert_ne!(to, r);
                    assert_eq!(throughput_peers(to, n, j).1, r, "n {n} step {j}");
                    assert_eq!(throughput_peers(from, n, j).0, r, "n {n} step {j}");
                    got[to] += 1;
                }
                assert!(got.iter().all(|&g| g == 1), "n {n} step {j}: {got:?}");
            }
        }
    }

    #[test]
    fn throughput_sends_ahead_only_where_flow_control_allows() {
        let mib = 1u64 << 20;
        // 64 MiB among 5 peers, 4 MiB messages: blocked means 2 untaken.
        assert_eq!(throughput_ahead(64 * mib / 5, 4 * mib + 1024, 6), 6);
        assert_eq!(throughput_ahead(64 * mib / 5, 4 * mib + 1024, 3), 3);
        assert_eq!(throughput_ahead(64 * mib / 15, 1024, 16), 8);
        // A window of two messages: blocked may mean one untaken.
        assert_eq!(throughput_ahead(8 * mib, 4 * mib + 1024, 6), 1);
        assert_eq!(throughput_ahead(0, 4 * mib, 6), 6);
    }
}
