//! `mcbench --coll X`: the data collectives and point-to-point latency,
//! each measured the way its OSU benchmark measures its MPI counterpart.
//!
//! Collectives (osu_allreduce, osu_gather, ...): per size, warm-up
//! iterations, then timed iterations of one call each followed by an
//! untimed barrier; each rank averages its own times; the table gives the
//! average, minimum and maximum over ranks. Reductions (allreduce, reduce,
//! reduce_scatter, scan) move `f32` with `Op::Sum` (OSU's floats), sizes
//! rounded down to whole elements and sizes below one element skipped; the
//! others move `u8`. Sizes are OSU's: the whole vector for the reductions
//! (reduce_scatter: each rank gets `size / 4 / n` elements), one rank's
//! block for gather, scatter, allgather and alltoall.
//!
//! `latency` is osu_latency: ranks 0 and 1 ping-pong `send`/`recv`
//! messages, no barrier in between; the latency is half the round trip at
//! rank 0, averaged (further ranks only take part in the barriers).
//!
//! Every iteration's result is checked against a local computation outside
//! the timed region (OSU's `-c`); any mismatch exits non-zero.

use std::time::Instant;

use anyhow::{bail, ensure, Result};
use clap::ValueEnum;
use mcast::{Comm, Op};

use crate::{Args, Report, Row, LARGE_MESSAGE};

/// What mcbench measures.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coll {
    Bcast,
    Allreduce,
    Reduce,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    #[value(name = "reduce_scatter", alias = "reduce-scatter")]
    ReduceScatter,
    Scan,
    Latency,
}

impl Coll {
    pub fn name(self) -> &'static str {
        match self {
            Coll::Bcast => "bcast",
            Coll::Allreduce => "allreduce",
            Coll::Reduce => "reduce",
            Coll::Gather => "gather",
            Coll::Scatter => "scatter",
            Coll::Allgather => "allgather",
            Coll::Alltoall => "alltoall",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::Scan => "scan",
            Coll::Latency => "latency",
        }
    }

    fn float(self) -> bool {
        matches!(
            self,
            Coll::Allreduce | Coll::Reduce | Coll::ReduceScatter | Coll::Scan
        )
    }

    fn rooted(self) -> bool {
        matches!(self, Coll::Reduce | Coll::Gather | Coll::Scatter)
    }
}

/// Element `j` of rank `r`'s input in iteration `i`: small integers, so
/// f32 sums are exact in any order.
fn val(r: usize, j: usize, i: usize) -> f32 {
    ((j + 3 * r + i) % 16) as f32
}

/// Ranks `0..=last` summed at element `j` of iteration `i`.
fn sum(last: usize, j: usize, i: usize) -> f32 {
    (0..=last).map(|r| val(r, j, i)).sum()
}

/// `buf` is 16-periodic: element j must be `want[j % 16]`.
fn check_f32(buf: &[f32], offset: usize, want: impl Fn(usize) -> f32) -> Option<usize> {
    let w: [f32; 16] = std::array::from_fn(|k| want((offset + k) % 16));
    buf.iter().enumerate().position(|(j, &v)| v != w[j % 16])
}

fn fill_f32(buf: &mut [f32], r: usize, offset: usize, i: usize) {
    for (j, v) in buf.iter_mut().enumerate() {
        *v = val(r, offset + j, i);
    }
}

/// The seed of the bytes rank `src` sends to `dst` in iteration `i`
/// (`crate::pattern` uses it mod 256, through a bijection): for up to 256
/// ranks, blocks from different sources to one rank differ, blocks from one
/// source to different ranks differ, and so do consecutive iterations.
fn key(i: usize, src: usize, dst: usize) -> usize {
    src.wrapping_add(dst.wrapping_mul(17))
        .wrapping_add(i.wrapping_mul(101))
}

/// Wrap a failed check into an error naming rank, call, size and iteration.
fn verify(bad: Option<usize>, what: &str, rank: usize, size: usize, i: usize) -> Result<()> {
    if let Some(at) = bad {
        bail!("rank {rank}: wrong {what} at element {at} of a {size}-byte call (iteration {i})");
    }
    Ok(())
}

/// One rank's state for one size: buffers, the call, the check.
struct Bench<'a> {
    comm: &'a Comm,
    coll: Coll,
    root: usize,
    size: usize,
    /// Elements per (rank's) block.
    n: usize,
    fa: Vec<f32>,
    fb: Vec<f32>,
    ba: Vec<u8>,
    bb: Vec<u8>,
}

impl<'a> Bench<'a> {
    /// Buffers for blocks of `n` elements (`size` bytes asked for).
    fn new(comm: &'a Comm, coll: Coll, root: usize, size: usize, n: usize) -> Self {
        let np = comm.size();
        let at_root = |len: usize| if comm.rank() == root { len } else { 0 };
        let (fa, fb, ba, bb) = match coll {
            Coll::Allreduce | Coll::Reduce | Coll::Scan => (n, 0, 0, 0),
            Coll::ReduceScatter => (np * n, n, 0, 0),
            Coll::Gather => (0, 0, n, at_root(np * n)),
            Coll::Scatter => (0, 0, at_root(np * n), n),
            Coll::Allgather => (0, 0, n, np * n),
            Coll::Alltoall => (0, 0, np * n, np * n),
            Coll::Latency | Coll::Bcast => unreachable!(),
        };
        Bench {
            comm,
            coll,
            root,
            size,
            n,
            fa: vec![0.0; fa],
            fb: vec![0.0; fb],
            ba: vec![0; ba],
            bb: vec![0; bb],
        }
    }

    fn prep(&mut self, i: usize) {
        let (r, np, n) = (self.comm.rank(), self.comm.size(), self.n);
        match self.coll {
            Coll::Allreduce | Coll::Reduce | Coll::Scan | Coll::ReduceScatter => {
                fill_f32(&mut self.fa, r, 0, i)
            }
            Coll::Gather | Coll::Allgather => crate::fill(&mut self.ba, n, key(i, r, 0)),
            Coll::Scatter | Coll::Alltoall => {
                if self.coll == Coll::Alltoall || r == self.root {
                    for d in 0..np {
                        crate::fill(&mut self.ba[d * n..(d + 1) * n], n, key(i, r, d));
                    }
                }
            }
            Coll::Latency | Coll::Bcast => unreachable!(),
        }
    }

    fn call(&mut self) -> Result<(), mcast::Error> {
        let c = self.comm;
        match self.coll {
            Coll::Allreduce => c.allreduce(&mut self.fa, Op::Sum),
            Coll::Reduce => c.reduce(self.root, &mut self.fa, Op::Sum),
            Coll::Scan => c.scan(&mut self.fa, Op::Sum),
            Coll::ReduceScatter => c.reduce_scatter(&self.fa, &mut self.fb, Op::Sum),
            Coll::Gather => c.gather(self.root, &self.ba, &mut self.bb),
            Coll::Scatter => c.scatter(self.root, &self.ba, &mut self.bb),
            Coll::Allgather => c.allgather(&self.ba, &mut self.bb),
            Coll::Alltoall => c.alltoall(&self.ba, &mut self.bb),
            Coll::Latency | Coll::Bcast => unreachable!(),
        }
    }

    fn check(&self, i: usize) -> Result<()> {
        let (r, np, n, size) = (self.comm.rank(), self.comm.size(), self.n, self.size);
        let bad = match self.coll {
            Coll::Allreduce => check_f32(&self.fa, 0, |j| sum(np - 1, j, i)),
            Coll::Reduce if r == self.root => check_f32(&self.fa, 0, |j| sum(np - 1, j, i)),
            Coll::Reduce => check_f32(&self.fa, 0, |j| val(r, j, i)),
            Coll::Scan => check_f32(&self.fa, 0, |j| sum(r, j, i)),
            Coll::ReduceScatter => check_f32(&self.fb, r * n, |j| sum(np - 1, j, i)),
            Coll::Gather if r != self.root => None,
            Coll::Gather | Coll::Allgather => (0..np).find_map(|s| {
                crate::check(&self.bb[s * n..(s + 1) * n], n, key(i, s, 0)).map(|at| s * n + at)
            }),
            Coll::Scatter => crate::check(&self.bb, n, key(i, self.root, r)),
            Coll::Alltoall => (0..np).find_map(|s| {
                crate::check(&self.bb[s * n..(s + 1) * n], n, key(i, s, r)).map(|at| s * n + at)
            }),
            Coll::Latency | Coll::Bcast => unreachable!(),
        };
        verify(bad, self.coll.name(), r, size, i)
    }
}

/// (timed iterations, warm-up) for `size` bytes: the bcast defaults
/// (osu_latency's 10000/1000 and 100/10 for `latency`) unless given.
fn counts(args: &Args, coll: Coll, fabric: bool, size: usize) -> (usize, usize) {
    let large = size > LARGE_MESSAGE || (coll != Coll::Latency && size == LARGE_MESSAGE);
    let (i, x) = match (coll == Coll::Latency, fabric, large) {
        (true, false, false) => (10000, 100),
        (true, false, true) => (1000, 10),
        (_, false, false) => (1000, 200),
        (_, false, true) => (100, 10),
        (_, true, false) => (100, 10),
        (_, true, true) => (10, 2),
    };
    (
        args.iterations.unwrap_or(i).max(1),
        args.warmup.unwrap_or(x),
    )
}

/// `--coll latency` at one size: rank 0's one-way latency in µs (0 elsewhere).
fn pingpong(comm: &Comm, size: usize, iters: usize, warmup: usize) -> Result<f64> {
    let rank = comm.rank();
    let mut buf = vec![0u8; size];
    let mut total = 0.0;
    for i in 0..warmup + iters {
        match rank {
            0 => {
                crate::fill(&mut buf, size, key(i, 0, 1));
                let t0 = Instant::now();
                comm.send(1, 1, &buf)?;
                let m = comm.recv(Some(1), Some(1))?;
                let dt = t0.elapsed().as_secs_f64();
                if i >= warmup {
                    total += dt;
                }
                ensure!(
                    m.data.len() == size,
                    "rank 0: echo of {} bytes",
                    m.data.len()
                );
                verify(
                    crate::check(&m.data, size, key(i, 0, 1)),
                    "echo",
                    0,
                    size,
                    i,
                )?;
            }
            1 => {
                let m = comm.recv(Some(0), Some(1))?;
                comm.send(0, 1, &m.data)?;
                ensure!(m.data.len() == size, "rank 1: got {} bytes", m.data.len());
                verify(
                    crate::check(&m.data, size, key(i, 0, 1)),
                    "ping",
                    1,
                    size,
                    i,
                )?;
            }
            _ => {}
        }
    }
    Ok(total * 1e6 / (2 * iters) as f64)
}

/// Measure `coll` at every size; rank 0 returns the rows.
pub fn measure(comm: &Comm, args: &Args, sizes: &[usize], fabric: bool) -> Result<Vec<Row>> {
    let (rank, np, coll) = (comm.rank(), comm.size(), args.coll);
    if coll.rooted() && args.root >= np {
        bail!("--root {} but only {np} ranks", args.root);
    }
    if coll == Coll::Latency && np < 2 {
        bail!("--coll latency needs at least 2 ranks");
    }
    let mut rows = Vec::new();
    for &size in sizes {
        let n = if coll.float() { size / 4 } else { size };
        let n = if coll == Coll::ReduceScatter {
            n / np
        } else {
            n
        };
        if n == 0 && coll != Coll::Latency {
            continue;
        }
        let (iters, warmup) = counts(args, coll, fabric, size);
        comm.barrier()?;
        let mine = if coll == Coll::Latency {
            pingpong(comm, size, iters, warmup)?
        } else {
            let mut b = Bench::new(comm, coll, args.root, size, n);
            let mut total = 0.0;
            for i in 0..warmup + iters {
                b.prep(i);
                let t0 = Instant::now();
                b.call()?;
                let dt = t0.elapsed().as_secs_f64();
                if i >= warmup {
                    total += dt;
                }
                b.check(i)?;
                comm.barrier()?;
            }
            total * 1e6 / iters as f64
        };
        let mut all = vec![0.0f64; if rank == 0 { np } else { 0 }];
        comm.gather(0, &[mine], &mut all)?;
        if rank == 0 {
            let ts: &[f64] = if coll == Coll::Latency {
                &all[..1]
            } else {
                &all
            };
            rows.push(Row {
                size,
                avg_us: ts.iter().sum::<f64>() / ts.len() as f64,
                min_us: ts.iter().copied().fold(f64::INFINITY, f64::min),
                max_us: ts.iter().copied().fold(0.0, f64::max),
                iterations: iters,
                depth: None,
                model_avg_us: None,
                model_max_us: None,
                cycle_us: None,
            });
        }
    }
    Ok(rows)
}

/// The OSU-style table of [`measure`]'s rows.
pub fn print_table(r: &Report, coll: Coll) {
    let osu = format!("osu_{}", r.benchmark);
    if coll == Coll::Latency {
        println!("# mcast Latency Test (osu_latency method: ping-pong between ranks 0 and 1)");
        println!(
            "# ranks: {}, send/recv, element: u8, packet: {} B",
            r.ranks, r.packet_bytes
        );
        println!("{}", crate::hosts_line(&r.hosts));
        if let Some(f) = &r.fabric {
            println!("# fabric: {f} (wall-clock times)");
        }
        println!("# Size          Latency (us)");
        for row in &r.results {
            println!("{:<10}{:>18.2}", row.size, row.avg_us);
        }
        return;
    }
    let mut name = coll.name().replace('_', "-");
    name[..1].make_ascii_uppercase();
    println!("# mcast {name} Latency Test ({osu} method)");
    let root = if coll.rooted() {
        format!("root: {}, ", r.root)
    } else {
        String::new()
    };
    let op = r.op.map(|o| format!(", op: {o}")).unwrap_or_default();
    println!(
        "# ranks: {}, {root}element: {}{op}, packet: {} B",
        r.ranks,
        r.element.unwrap_or("u8"),
        r.packet_bytes
    );
    println!("{}", crate::hosts_line(&r.hosts));
    if let Some(f) = &r.fabric {
        println!("# fabric: {f} (wall-clock times; no model-latency columns for --coll)");
    }
    println!("# Size       Avg Latency(us)     Min Latency(us)     Max Latency(us)  Iterations");
    for row in &r.results {
        println!(
            "{:<10}{:>18.2}{:>20.2}{:>20.2}{:>12}",
            row.size, row.avg_us, row.min_us, row.max_us, row.iterations
        );
    }
}

/// The element type and operator `coll` reports.
pub fn element_op(coll: Coll) -> (&'static str, Option<&'static str>) {
    if coll.float() {
        ("f32", Some("Sum"))
    } else {
        ("u8", None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_values_are_exact() {
        assert_eq!(sum(2, 0, 0), 0.0 + 3.0 + 6.0);
        let mut b = vec![0.0f32; 40];
        fill_f32(&mut b, 1, 0, 2);
        assert_eq!(check_f32(&b, 0, |j| val(1, j, 2)), None);
        assert_eq!(check_f32(&b, 0, |j| val(1, j, 3)), Some(0));
    }

    #[test]
    fn misrouted_or_stale_blocks_fail_the_check() {
        let n = 300;
        for i in [0, 1, 255, 1000] {
            for a in 0..256 {
                let mut blk = vec![0u8; n];
                crate::fill(&mut blk, n, key(i, a, 5));
                for b in (0..256).filter(|&b| b != a) {
                    assert!(crate::check(&blk, n, key(i, b, 5)).is_some());
                }
                crate::fill(&mut blk, n, key(i, 5, a));
                for b in (0..256).filter(|&b| b != a) {
                    assert!(crate::check(&blk, n, key(i, 5, b)).is_some());
                }
                assert!(crate::check(&blk, n, key(i + 1, 5, a)).is_some());
            }
        }
    }
}
