//! mcast-selftest: checks a job end to end. Run it under mclaunch or srun:
//!
//! ```text
//! mclaunch -n 8 mcast-selftest
//! srun --mpi=pmi2 -N3 -n6 mcast-selftest
//! ```
//!
//! Each rank prints one line, `selftest: rank R of N ok (...) on HOST`.
//!
//! Every rank takes part in: a bcast from every root (or `--roots K` of
//! them), with every algorithm, at every size of the list (by default 0, 1, P−1, P, P+1, 3P+7 and 8 MiB, where P
//! is the packet size), each checked byte for byte; then rounds of multicasts to
//! random destination sets (including the empty set, and the source alone,
//! which must be refused),
//! whose sets every rank derives from a shared seed so it knows what to expect;
//! then bursts of multicasts from several sources at once, checking that each
//! source's multicasts arrive in order. Any mismatch exits non-zero.

use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;
use mcast::Algorithm;

#[derive(Parser, Debug)]
#[command(
    name = "mcast-selftest",
    about = "End-to-end check of an mcast job (run under mclaunch or srun --mpi=pmi2)"
)]
struct Args {
    /// Comma-separated message sizes in bytes; P in an expression is the packet size
    /// (e.g. `0,1,P-1,P,P+1,3P+7,8388608`).
    #[arg(long, default_value = "0,1,P-1,P,P+1,3P+7,8388608")]
    sizes: String,
    /// Comma-separated algorithms; `default` is every chain algorithm plus,
    /// under a topology, every topology-aware one it supports.
    #[arg(long, default_value = "default")]
    algos: String,
    /// Bcast from this many roots, spread evenly over the ranks (default:
    /// every rank), to keep big jobs short.
    #[arg(long, value_name = "K")]
    roots: Option<usize>,
    /// Rounds of random-subset multicasts.
    #[arg(long, default_value_t = 40)]
    multicast_rounds: usize,
    /// Seed for the random destination sets.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// After the first barrier, every rank stays out of mcast for SECS
    /// seconds (fractions allowed) before the next barrier: a stretch in
    /// which only heartbeats keep the ranks from declaring each other lost.
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    idle: f64,
    /// Test hook: this rank exits with status 3 after the first barrier.
    #[arg(long)]
    crash_rank: Option<usize>,
    /// Under `mclaunch --fabric`: before anything else, one bcast from rank
    /// 0 of SIZE bytes with ALGO (`ALGO:SIZE`, e.g. `chain:384`); every
    /// rank prints `model rank R cycles C` (its model latency) and exits.
    /// The first operation of a job meets an idle fabric, so the cycles
    /// can be checked against `mcsim run`.
    #[arg(long, value_name = "ALGO:SIZE")]
    model_bcast: Option<String>,
}

fn parse_size(expr: &str, p: usize) -> Result<usize> {
    let e = expr.trim().replace(' ', "");
    let (mul, rest) = match e.find('P') {
        None => return e.parse().with_context(|| format!("size {expr:?}")),
        Some(i) => {
            let m = if i == 0 {
                1
            } else {
                e[..i]
                    .parse::<usize>()
                    .with_context(|| format!("size {expr:?}"))?
            };
            (m, &e[i + 1..])
        }
    };
    let base = mul * p;
    Ok(if let Some(a) = rest.strip_prefix('+') {
        base + a.parse::<usize>()?
    } else if let Some(s) = rest.strip_prefix('-') {
        base.checked_sub(s.parse::<usize>()?)
            .context("negative size")?
    } else if rest.is_empty() {
        base
    } else {
        bail!("size {expr:?}: expected nP, nP+a or nP-a")
    })
}

/// splitmix64: a tiny deterministic generator every rank runs in lockstep.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn pattern(buf: &mut [u8], seed: u64) {
    let s = seed as u8;
    for (i, b) in buf.iter_mut().enumerate() {
        *b = ((i >> 8) as u8 ^ i as u8).wrapping_add(s);
    }
}

fn first_diff(buf: &[u8], seed: u64) -> Option<usize> {
    let s = seed as u8;
    buf.iter()
        .enumerate()
        .position(|(i, &b)| b != ((i >> 8) as u8 ^ i as u8).wrapping_add(s))
}

fn run(args: &Args) -> Result<String> {
    let started = std::time::Instant::now();
    let comm = mcast::init()?;
    let startup = started.elapsed();
    let (rank, n) = (comm.rank(), comm.size());
    if let Some(spec) = &args.model_bcast {
        let (algo, size) = spec
            .rsplit_once(':')
            .with_context(|| format!("--model-bcast {spec}: expected ALGO:SIZE"))?;
        let algo: Algorithm = algo.parse()?;
        let size: usize = size.parse().context("--model-bcast size")?;
        let mut b = vec![0u8; size];
        if rank == 0 {
            pattern(&mut b, 7);
        }
        comm.bcast_with(0, &mut b, algo)?;
        if rank != 0 && first_diff(&b, 7).is_some() {
            bail!("model bcast: wrong bytes at rank {rank}");
        }
        let cycles = comm.last_model_latency().map_or(0, |m| m.cycles);
        comm.finalize()?;
        return Ok(format!("model rank {rank} cycles {cycles}"));
    }
    let p = comm.packet_bytes();
    let sizes: Vec<usize> = args
        .sizes
        .split(',')
        .map(|s| parse_size(s, p))
        .collect::<Result<_>>()?;
    let algos: Vec<Algorithm> = if args.algos == "default" {
        let mut v: Vec<Algorithm> = "auto,flat,chain,binomial,kbinomial,kbinomial:2,kbinomial:3"
            .split(',')
            .map(|a| a.parse())
            .collect::<Result<_, _>>()?;
        match &comm.config().topology {
            Some(t) if t.is_hypercube() => v.extend(Algorithm::TOPOLOGY),
            Some(_) => v.push(Algorithm::UTorus),
            None => {}
        }
        v
    } else {
        args.algos
            .split(',')
            .map(|a| a.parse())
            .collect::<Result<_, _>>()?
    };
    comm.barrier()?;
    if args.crash_rank == Some(rank) {
        eprintln!("rank {rank}: crashing on purpose");
        std::process::exit(3);
    }
    if !(args.idle >= 0.0 && args.idle < 1e6) {
        bail!("--idle {}: expected a number of seconds", args.idle);
    }
    if args.idle > 0.0 {
        std::thread::sleep(std::time::Duration::from_secs_f64(args.idle));
        comm.barrier()?;
    }

    // Bcast: every root, algorithm and size.
    let mut case = 0u64;
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut buf = vec![0u8; max];
    let k = args.roots.unwrap_or(n).clamp(1, n);
    for root in (0..k).map(|i| i * n / k) {
        for &algo in &algos {
            for &size in &sizes {
                case += 1;
                let b = &mut buf[..size];
                if rank == root {
                    pattern(b, case);
                } else {
                    b.fill(0);
                }
                comm.bcast_with(root, b, algo)
                    .with_context(|| format!("bcast root {root} algo {algo} size {size}"))?;
                if let Some(at) = first_diff(b, case) {
                    bail!(
                        "bcast root {root} algo {algo} size {size}: byte {at} wrong at rank {rank}"
                    );
                }
            }
        }
    }

    // Multicast to random subsets, one source per round.
    let mut rng = Rng(args.seed);
    let mut mcasts = 0;
    for round in 0..args.multicast_rounds {
        let src = round % n;
        let dests: Vec<usize> = match round % 5 {
            0 => Vec::new(),
            1 => vec![src],
            _ => (0..n).filter(|&d| rng.below(2) == 1 && d != src).collect(),
        };
        let algo = algos[rng.below(algos.len())];
        let size = sizes[rng.below(sizes.len())].min(1 << 20);
        let seed = 1000 + round as u64;
        if rank == src {
            let mut data = vec![0u8; size];
            pattern(&mut data, seed);
            let res = comm.multicast_with(&dests, &data, algo);
            if dests == [src] {
                // The source alone is not a valid set: an error, and nothing sent.
                if !matches!(res, Err(mcast::Error::InvalidArgument(_))) {
                    bail!("multicast to the source alone returned {res:?}");
                }
            } else {
                res.with_context(|| format!("multicast round {round} to {dests:?}"))?;
            }
        } else if dests.contains(&rank) {
            let r = comm
                .recv_multicast()
                .with_context(|| format!("recv_multicast round {round}"))?;
            if r.source != src || r.data.len() != size || first_diff(&r.data, seed).is_some() {
                bail!(
                    "multicast round {round}: rank {rank} got {} bytes from {}, expected {size} from {src}",
                    r.data.len(),
                    r.source
                );
            }
            mcasts += 1;
        }
        comm.barrier()?;
    }

    // Bursts: every rank multicasts several messages to a shared random set at
    // once; each destination checks per-source order.
    let burst = 5;
    let sets: Vec<Vec<usize>> = (0..n)
        .map(|s| (0..n).filter(|&d| rng.below(3) > 0 && d != s).collect())
        .collect();
    for i in 0..burst {
        let mut d = vec![0u8; 1 + (i * 997) % (3 * p + 7)];
        pattern(&mut d, (rank * 100 + i) as u64);
        comm.multicast(&sets[rank], &d)?;
    }
    let expect: usize = (0..n)
        .filter(|&s| s != rank && sets[s].contains(&rank))
        .count()
        * burst;
    let mut next = vec![0usize; n];
    for _ in 0..expect {
        let r = comm.recv_multicast()?;
        let i = next[r.source];
        if r.data.len() != 1 + (i * 997) % (3 * p + 7)
            || first_diff(&r.data, (r.source * 100 + i) as u64).is_some()
        {
            bail!(
                "burst: rank {rank} got multicast #{i} from {} out of order or corrupted",
                r.source
            );
        }
        next[r.source] += 1;
        mcasts += 1;
    }
    // What carried the packets to the peers: ring, unix, tcp, fabric.
    let links: Vec<String> = comm.link_kinds().iter().map(|l| l.to_string()).collect();
    // Packets handed to ranks of this host as arena descriptors, not bytes.
    let descriptors = comm.shm_packets_sent();
    comm.finalize()?;
    Ok(format!(
        "selftest: rank {rank} of {n} ok on host {} ({case} bcasts, {mcasts} multicasts \
         received; start-up {:.1} s, all {:.1} s; {descriptors} shm descriptors sent; links {})",
        mcast::netif::hostname(),
        startup.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        if links.is_empty() {
            "none".into()
        } else {
            links.join(",")
        }
    ))
}

fn main() -> ExitCode {
    mcast::logging::init();
    let args = Args::parse();
    match run(&args) {
        Ok(msg) => {
            println!("{msg}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One write: stderr is unbuffered, and other processes (the
            // other ranks, mclaunch) write to it too.
            let line = format!("mcast-selftest: {e:#}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            ExitCode::FAILURE
        }
    }
}
