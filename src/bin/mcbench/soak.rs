//! `mcbench --soak SECONDS`: random collectives on every rank from a shared
//! seed, each checked with a checksum, until the time is up.
//!
//! Every operation starts with a 16-byte bcast from rank 0 carrying "go on?"
//! and the operation's seed; every rank derives the same operation from that
//! seed: a bcast (random root, size, algorithm), a multicast (random source,
//! destination subset, size, algorithm) or a barrier. Sizes are log-uniform
//! from 0 to `--soak-max-bytes` (4 MiB by default). The payload is a function of
//! the seed, so every receiver knows its checksum; any difference is
//! corruption. At the end rank 0 gathers every rank's counts and prints the
//! totals; the exit status is non-zero on any error or corruption.

use std::io::IsTerminal;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use mcast::{Algorithm, Comm};
use serde::{Deserialize, Serialize};

/// splitmix64: every rank runs it in lockstep from the shared seed.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// The payload of the operation with seed `seed`.
fn payload(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng::new(seed ^ 0xdead_beef);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&r.next().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// A 64-bit checksum (FNV-1a over 8-byte words, then the tail).
pub fn checksum(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ b.len() as u64;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
        h = (h ^ x).wrapping_mul(0x100_0000_01b3).rotate_left(29);
    }
    for &x in words.remainder() {
        h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// One rank's (and, summed, the job's) totals.
#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Totals {
    pub ops: u64,
    pub bcasts: u64,
    pub multicasts: u64,
    pub barriers: u64,
    /// Bytes this rank received and checked.
    pub bytes: u64,
    pub errors: u64,
    pub corrupt: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.ops += o.ops;
        self.bcasts += o.bcasts;
        self.multicasts += o.multicasts;
        self.barriers += o.barriers;
        self.bytes += o.bytes;
        self.errors += o.errors;
        self.corrupt += o.corrupt;
    }
}

#[derive(Debug, Serialize)]
struct SoakReport {
    benchmark: &'static str,
    ranks: usize,
    seconds: f64,
    seed: u64,
    totals: Totals,
    first_error: Option<String>,
}

const ALGOS: [Algorithm; 7] = [
    Algorithm::Auto,
    Algorithm::Flat,
    Algorithm::Chain,
    Algorithm::Binomial,
    Algorithm::KBinomial { k: None },
    Algorithm::KBinomial { k: Some(2) },
    Algorithm::KBinomial { k: Some(3) },
];

fn size(rng: &mut Rng, max: usize) -> usize {
    let bits = usize::BITS - max.leading_zeros();
    let e = rng.below(bits as u64 + 1) as u32;
    let cap = if e >= usize::BITS {
        max
    } else {
        (1usize << e).min(max)
    };
    rng.below(cap as u64 + 1) as usize
}

fn one_op(comm: &Comm, seed: u64, max: usize, t: &mut Totals) -> Result<()> {
    let (me, n) = (comm.rank(), comm.size());
    let mut rng = Rng::new(seed);
    let kind = rng.below(20);
    let algo = ALGOS[rng.below(ALGOS.len() as u64) as usize];
    t.ops += 1;
    if kind < 2 {
        t.barriers += 1;
        comm.barrier()?;
        return Ok(());
    }
    let len = size(&mut rng, max);
    if kind < 11 {
        t.bcasts += 1;
        let root = rng.below(n as u64) as usize;
        let data = payload(seed, len);
        let mut buf = if me == root {
            data.clone()
        } else {
            vec![0u8; len]
        };
        comm.bcast_with(root, &mut buf, algo)?;
        if me != root {
            t.bytes += len as u64;
            if checksum(&buf) != checksum(&data) {
                t.corrupt += 1;
                bail!("bcast (seed {seed:#x}, root {root}, {len} B, {algo}): checksum differs");
            }
        }
        return Ok(());
    }
    t.multicasts += 1;
    let src = rng.below(n as u64) as usize;
    let dests: Vec<usize> = (0..n).filter(|&d| d != src && rng.below(2) == 1).collect();
    let data = payload(seed, len);
    if me == src {
        comm.multicast_with(&dests, &data, algo)?;
    } else if dests.contains(&me) {
        // Another source may run ahead (a bcast root does not wait), so take
        // this operation's multicast from its own source.
        let got = comm.recv_multicast_from(src)?.data;
        t.bytes += got.len() as u64;
        if got.len() != len || checksum(&got) != checksum(&data) {
            t.corrupt += 1;
            bail!(
                "multicast (seed {seed:#x}, source {src}, {len} B, {algo}): got {} B, checksum differs",
                got.len()
            );
        }
    }
    Ok(())
}

/// Run the soak for `secs` seconds; returns whether it was clean.
pub fn run(comm: &Comm, secs: f64, seed: Option<u64>, max: usize, json: bool) -> Result<bool> {
    let (me, n) = (comm.rank(), comm.size());
    let mut seed_buf = seed
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
        .to_le_bytes();
    comm.bcast(0, &mut seed_buf)?;
    let seed = u64::from_le_bytes(seed_buf);
    let mut master = Rng::new(seed);
    let start = Instant::now();
    let limit = Duration::from_secs_f64(secs);
    let bar = (me == 0 && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(limit.as_secs().max(1));
        b.set_style(
            indicatif::ProgressStyle::with_template("soak {bar:30} {pos}/{len} s {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let mut t = Totals::default();
    let mut first_error = None;
    loop {
        let mut ctl = [0u8; 16];
        if me == 0 {
            let go = start.elapsed() < limit;
            ctl[..8].copy_from_slice(&(go as u64).to_le_bytes());
            ctl[8..].copy_from_slice(&master.next().to_le_bytes());
            if let Some(b) = &bar {
                b.set_position(start.elapsed().as_secs());
                b.set_message(format!("{} ops", t.ops));
            }
        }
        if let Err(e) = comm.bcast(0, &mut ctl) {
            t.errors += 1;
            first_error = Some(format!("rank {me}: control bcast: {e}"));
            break;
        }
        let go = u64::from_le_bytes(ctl[..8].try_into().unwrap_or_default());
        if go == 0 {
            break;
        }
        let op_seed = u64::from_le_bytes(ctl[8..].try_into().unwrap_or_default());
        if let Err(e) = one_op(comm, op_seed, max, &mut t) {
            t.errors += 1;
            first_error = Some(format!("rank {me}: {e:#}"));
            break;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let elapsed = start.elapsed().as_secs_f64();
    if let Some(e) = &first_error {
        // A failed collective poisons the communicator: report and stop here.
        eprintln!("mcbench --soak: {e}");
        println!("soak: rank {me} stopped after {} ops: {e}", t.ops);
        return Ok(false);
    }
    // Gather every rank's totals at rank 0.
    let mine = postcard::to_stdvec(&t).context("encoding totals")?;
    let mut all = t;
    if me != 0 {
        comm.multicast(&[0], &mine)?;
    } else {
        for _ in 1..n {
            let r = comm.recv_multicast()?;
            let other: Totals = postcard::from_bytes(&r.data)
                .with_context(|| format!("totals from rank {}", r.source))?;
            all.add(&other);
        }
    }
    if me == 0 {
        // Every rank counted every operation; report them once.
        let per_rank_ops = t;
        let totals = Totals {
            ops: per_rank_ops.ops,
            bcasts: per_rank_ops.bcasts,
            multicasts: per_rank_ops.multicasts,
            barriers: per_rank_ops.barriers,
            ..all
        };
        let report = SoakReport {
            benchmark: "soak",
            ranks: n,
            seconds: elapsed,
            seed,
            totals,
            first_error: None,
        };
        if json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!(
                "soak: {} ranks, {:.1} s, seed {seed}: {} ops ({} bcast, {} multicast, {} barrier), \
                 {} bytes received and checked ({:.1} MiB/s), {} errors, {} corrupt",
                n,
                elapsed,
                totals.ops,
                totals.bcasts,
                totals.multicasts,
                totals.barriers,
                totals.bytes,
                totals.bytes as f64 / elapsed.max(1e-9) / (1 << 20) as f64,
                totals.errors,
                totals.corrupt
            );
        }
        return Ok(totals.errors == 0 && totals.corrupt == 0);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_see_single_bit_flips() {
        let a = payload(7, 10_001);
        let mut b = a.clone();
        assert_eq!(checksum(&a), checksum(&b));
        b[5000] ^= 1;
        assert_ne!(checksum(&a), checksum(&b));
        assert_ne!(checksum(&a[..10_000]), checksum(&a));
    }

    #[test]
    fn sizes_stay_in_range_and_reach_both_ends() {
        let mut r = Rng::new(3);
        let s: Vec<usize> = (0..20_000).map(|_| size(&mut r, 4 << 20)).collect();
        assert!(s.iter().all(|&x| x <= 4 << 20));
        assert!(s.contains(&0));
        assert!(s.iter().any(|&x| x > 2 << 20));
    }
}
