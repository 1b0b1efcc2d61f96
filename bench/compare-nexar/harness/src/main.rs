//! nexar-bcast: nexar's broadcast latency, measured like mcast's mcbench
//! (the osu_bcast method).
//!
//! One process per rank. Rank 0 is the seed process (`seed`), every other
//! rank joins it (`join`); nexar's seed assigns ranks 1.. in arrival order.
//!
//! For each message size (powers of two, 1 B to 4 MiB by default): a
//! barrier; warm-up iterations; then timed iterations, each one
//! `NexarClient::broadcast_host` from rank 0 (u8 elements) timed on every
//! rank, followed by an untimed barrier. The root fills the buffer with a
//! per-iteration pattern before its clock starts; receivers check every byte
//! after theirs stops, and a wrong byte fails the run. Each rank averages its
//! timed iterations; rank 0 reports the average, minimum and maximum of those
//! averages, as text or (`--json`) in the shape of `mcbench --json`.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nexar::{BufferRef, ClusterConfig, CpuAdapter, DataType, Host, NexarClient};
use serde::Serialize;

/// osu_bcast's (and mcbench's) threshold between small and large messages.
const LARGE_MESSAGE: usize = 8192;
/// nexar's tree_broadcast sends flat (root to every rank) below this many ranks.
const TREE_BROADCAST_THRESHOLD: usize = 4;

const USAGE: &str = "usage: nexar-bcast <seed|join> --seed ADDR:PORT --np N [--bind ADDR:PORT] \
[--advertise ADDR:PORT] [--rank R] [-m MIN:MAX|MAX] [-i ITERS] [-x WARMUP] [--timeout SECS] [--json]
  seed: rank 0; binds nexar's seed node on --seed and joins it.
  join: any other rank; joins the seed at --seed; --rank asks the seed for
        rank R (default: the seed assigns ranks in arrival order).
  --timeout: exit non-zero after SECS (default 600), whatever the state.
  --bind: this rank's mesh address (QUIC/UDP and the TCP bulk sidecar);
          default: the seed's IP, port 0.
  Token: NEXAR_CLUSTER_TOKEN (required by nexar off loopback).
  Transport tuning: nexar's own NEXAR_* variables (NexarConfig::from_env),
  e.g. NEXAR_ENABLE_TCP_BULK_SIDECAR=0 to keep collectives on QUIC.";

struct Args {
    role: String,
    seed: SocketAddr,
    np: u32,
    bind: Option<SocketAddr>,
    advertise: Option<SocketAddr>,
    rank: Option<u32>,
    timeout: f64,
    sizes: Vec<usize>,
    iterations: Option<usize>,
    warmup: Option<usize>,
    json: bool,
}

fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    let num = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("{v}: {e}"));
    let (lo, hi) = match s.split_once(':') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => (1, num(s)?),
    };
    if lo > hi {
        return Err(format!("message sizes {s}: MIN is above MAX"));
    }
    let mut out = Vec::new();
    let mut v = lo.max(1);
    while v <= hi {
        out.push(v);
        v *= 2;
    }
    Ok(out)
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let role = it.next().ok_or("missing role")?;
    if role != "seed" && role != "join" {
        return Err(format!("unknown role {role}"));
    }
    let (mut seed, mut np, mut bind, mut advertise) = (None, None, None, None);
    let (mut rank, mut timeout) = (None, 600.0);
    let (mut sizes, mut iterations, mut warmup, mut json) = (None, None, None, false);
    while let Some(flag) = it.next() {
        if flag == "--json" {
            json = true;
            continue;
        }
        let val = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {val}: {e}");
        match flag.as_str() {
            "--seed" => seed = Some(val.parse().map_err(|e| bad(&e))?),
            "--np" => np = Some(val.parse().map_err(|e| bad(&e))?),
            "--bind" => bind = Some(val.parse().map_err(|e| bad(&e))?),
            "--advertise" => advertise = Some(val.parse().map_err(|e| bad(&e))?),
            "--rank" => rank = Some(val.parse().map_err(|e| bad(&e))?),
            "--timeout" => timeout = val.parse().map_err(|e| bad(&e))?,
            "-m" | "--message-size" => sizes = Some(parse_sizes(&val)?),
            "-i" | "--iterations" => iterations = Some(val.parse().map_err(|e| bad(&e))?),
            "-x" | "--warmup" => warmup = Some(val.parse().map_err(|e| bad(&e))?),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(Args {
        role,
        seed: seed.ok_or("--seed is required")?,
        np: np.ok_or("--np is required")?,
        bind,
        advertise,
        rank,
        timeout,
        sizes: match sizes {
            Some(s) => s,
            None => parse_sizes("1:4194304")?,
        },
        iterations,
        warmup,
        json,
    })
}

/// The 256-byte period of iteration `iter`'s `size`-byte message: byte i is
/// `i as u8 + seed` (mcbench's pattern; consecutive iterations differ in
/// every byte, so a stale buffer never passes).
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
    buf[bad * 256..]
        .iter()
        .zip(p.iter())
        .position(|(a, b)| a != b)
        .map(|at| bad * 256 + at)
}

#[derive(Serialize)]
struct Row {
    size: usize,
    avg_us: f64,
    min_us: f64,
    max_us: f64,
    iterations: usize,
    /// Rank 0's wall clock per timed iteration (fill, broadcast, check,
    /// barrier), as mcbench's `cycle_us`: what no barrier can flatter.
    cycle_us: f64,
}

#[derive(Serialize, Clone)]
struct HostRanks {
    host: String,
    ranks: Vec<u32>,
}

#[derive(Serialize)]
struct Report {
    benchmark: &'static str,
    implementation: String,
    ranks: u32,
    root: u32,
    algorithm: String,
    links: String,
    hosts: Vec<HostRanks>,
    results: Vec<Row>,
}

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Rank 0 collects one message from every other rank (raw QUIC lane),
/// in rank order.
async fn gather_at_root(client: &NexarClient, mine: Vec<u8>) -> Res<Vec<Vec<u8>>> {
    if client.rank() != 0 {
        client.send_bytes(0, &mine).await?;
        return Ok(Vec::new());
    }
    let mut all = vec![mine];
    for r in 1..client.world_size() {
        all.push(client.recv_bytes(r).await?.to_vec());
    }
    Ok(all)
}

async fn run(args: Args) -> Res<()> {
    let bind = args
        .bind
        .unwrap_or_else(|| SocketAddr::new(args.seed.ip(), 0));
    let mut cfg = ClusterConfig::new(args.np)
        .with_bind_addr(bind)
        .with_join_timeout(Duration::from_secs(60));
    if let Some(a) = args.advertise {
        cfg = cfg.with_advertise_addr(a);
    }
    if let Some(r) = args.rank {
        cfg = cfg.with_requested_rank(r);
    }
    let sidecar = cfg.nexar.enable_tcp_bulk_sidecar;
    let sidecar_tls = cfg.nexar.encrypt_bulk_transport;
    let adapter = Arc::new(CpuAdapter::new());
    let client = if args.role == "seed" {
        NexarClient::bootstrap_seed(args.seed, &cfg, adapter).await?
    } else {
        NexarClient::bootstrap_join(args.seed, &cfg, adapter).await?
    };
    let (rank, n) = (client.rank(), client.world_size());
    let root = 0u32;

    // Which host each rank runs on.
    let names = gather_at_root(&client, hostname().into_bytes()).await?;
    let mut hosts: Vec<HostRanks> = Vec::new();
    for (r, name) in names.iter().enumerate() {
        let name = String::from_utf8_lossy(name).into_owned();
        match hosts.iter_mut().find(|h| h.host == name) {
            Some(h) => h.ranks.push(r as u32),
            None => hosts.push(HostRanks {
                host: name,
                ranks: vec![r as u32],
            }),
        }
    }

    let mut rows = Vec::new();
    let mut buf = vec![0u8; *args.sizes.last().unwrap_or(&0)];
    for &size in &args.sizes {
        let large = size >= LARGE_MESSAGE;
        let iters = args
            .iterations
            .unwrap_or(if large { 100 } else { 1000 })
            .max(1);
        let warmup = args.warmup.unwrap_or(if large { 10 } else { 200 });
        let buf = &mut buf[..size];
        client.barrier().await?;
        let mut total = 0.0f64;
        let mut cycle_start = Instant::now();
        for i in 0..warmup + iters {
            if i == warmup {
                cycle_start = Instant::now();
            }
            if rank == root {
                fill(buf, size, i);
            }
            // SAFETY: `buf` is a live, exclusively borrowed host buffer of
            // `size` bytes for the whole call.
            let mut br = unsafe { BufferRef::<Host>::new(buf.as_mut_ptr() as u64, size) };
            let t0 = Instant::now();
            client
                .broadcast_host(&mut br, size, DataType::U8, root)
                .await?;
            let dt = t0.elapsed().as_secs_f64();
            if i >= warmup {
                total += dt;
            }
            if rank != root {
                if let Some(at) = check(buf, size, i) {
                    return Err(format!(
                        "rank {rank}: wrong byte at offset {at} of a {size}-byte broadcast (iteration {i})"
                    )
                    .into());
                }
            }
            client.barrier().await?;
        }
        let cycle_us = cycle_start.elapsed().as_secs_f64() * 1e6 / iters as f64;
        let mine = total * 1e6 / iters as f64;
        let all = gather_at_root(&client, mine.to_le_bytes().to_vec()).await?;
        if rank == 0 {
            let v: Vec<f64> = all
                .iter()
                .map(|b| b.as_slice().try_into().map(f64::from_le_bytes))
                .collect::<Result<_, _>>()
                .map_err(|_| "bad timing report")?;
            rows.push(Row {
                size,
                avg_us: v.iter().sum::<f64>() / v.len() as f64,
                min_us: v.iter().copied().fold(f64::INFINITY, f64::min),
                max_us: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                iterations: iters,
                cycle_us,
            });
        }
    }

    if rank == 0 {
        let report = Report {
            benchmark: "bcast",
            implementation: "nexar 0.2.0".into(),
            ranks: n,
            root,
            algorithm: if (n as usize) < TREE_BROADCAST_THRESHOLD {
                "nexar tree_broadcast: flat (root sends to every rank)".into()
            } else {
                "nexar tree_broadcast: binary tree".into()
            },
            links: match (sidecar, sidecar_tls) {
                (false, _) => "quic".into(),
                (true, true) => "quic+tcp-sidecar(tls)".into(),
                (true, false) => "quic+tcp-sidecar(plain)".into(),
            },
            hosts,
            results: rows,
        };
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!("# nexar Broadcast Latency Test (osu_bcast method)");
            println!(
                "# ranks: {}, root: {}, algorithm: {}, links: {}",
                report.ranks, report.root, report.algorithm, report.links
            );
            for h in &report.hosts {
                println!("# host {}: ranks {:?}", h.host, h.ranks);
            }
            println!(
                "# Size       Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations"
            );
            for r in &report.results {
                println!(
                    "{:<10}{:>18.2}{:>20.2}{:>20.2}{:>12}",
                    r.size, r.avg_us, r.min_us, r.max_us, r.iterations
                );
            }
        }
    }
    // Flush and close every connection: a rank that exits right after its
    // last collective could otherwise lose that collective's last message.
    client.shutdown().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("nexar-bcast: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let IpAddr::V4(ip) = args.seed.ip() {
        if ip.is_unspecified() {
            eprintln!("nexar-bcast: --seed must be an address the ranks can dial");
            return ExitCode::from(2);
        }
    }
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        eprintln!("nexar-bcast: --timeout {}: expected seconds", args.timeout);
        return ExitCode::from(2);
    }
    let limit = Duration::from_secs_f64(args.timeout);
    match tokio::time::timeout(limit, run(args)).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Err(_) => {
            eprintln!("nexar-bcast: timed out after {} s", limit.as_secs_f64());
            // Do not wait for the runtime's tasks (a stuck peer) on the way out.
            std::process::exit(1);
        }
        Ok(Err(e)) => {
            eprintln!("nexar-bcast: {e}");
            ExitCode::FAILURE
        }
    }
}
