//! mcast-colltest: checks the data collectives and point-to-point end to
//! end. Run it under mclaunch:
//!
//! ```text
//! mclaunch -n 5 mcast-colltest            # everything, checked
//! mclaunch -n 3 mcast-colltest --mismatch op
//! ```
//!
//! The default run: point-to-point (tags, any-source/any-tag, per
//! (source, tag) order, multi-packet messages); bad arguments (refused
//! locally, nothing sent); then every collective at every root for sizes
//! 0, 1, odd and a packet ± 1 (of data, and of the message on the wire), over every element type and every
//! operator, each checked against a local computation (the reductions in
//! the runtime's documented order, so floats compare bit for bit); and an
//! allreduce of `--big` bytes of f64, timed, then every other collective
//! once with `--big` bytes in all. Allreduce is checked in the
//! order of the algorithm `Comm::allreduce_algorithm` names (forced with
//! `MCAST_ALLREDUCE`), and an f64 sum of 1e16, 1 and −1e16 mixes is
//! gathered as bits to rank 0, which checks every rank got the same bits.
//! `--mismatch KIND` makes the last rank call differently (or, with
//! `algorithm`, run allreduce's ring where the others run Rabenseifner's;
//! with `barrier`, call a barrier where the others bcast)
//! and expects `Error::Mismatch` on every rank;
//! `--crash-rank R` makes rank R exit before an allreduce (or, with
//! `--crash-in barrier`, a barrier) the others expect to fail with
//! `PeerLost` naming R; `--stall` has rank 0 send to rank 1,
//! which never receives, and expects a `Timeout` naming rank 1. `--split`
//! runs it all on sub-communicators instead of the world: the even and the
//! odd ranks, each in reverse order (`Comm::split`); a crash then fails
//! only the dead rank's sub-communicator.

use std::fmt::Debug;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, ensure, Result};
use clap::Parser;
use mcast::{AllreduceAlgorithm, Comm, Element, Error, Op};

#[derive(Parser, Debug)]
#[command(name = "mcast-colltest", about = "Checks mcast's collectives")]
struct Args {
    /// Bytes of the timed f64 allreduce (0: none).
    #[arg(long, default_value_t = 8 << 20)]
    big: usize,
    /// op, count, root, type, collective or algorithm: the last rank calls
    /// differently.
    #[arg(long)]
    mismatch: Option<String>,
    /// This rank exits with status 3 before an allreduce.
    #[arg(long)]
    crash_rank: Option<usize>,
    /// The collective `--crash-rank` leaves the others in: allreduce or
    /// barrier.
    #[arg(long, default_value = "allreduce")]
    crash_in: String,
    /// Rank 0 sends to rank 1 until flow control stops it.
    #[arg(long)]
    stall: bool,
    /// Only time ITERS allreduces (Sum) of 1, 128 and 1024 f64 and of
    /// `--big` bytes, and print the mean per call at rank 0.
    #[arg(long, value_name = "ITERS")]
    latency: Option<usize>,
    /// Run on sub-communicators: even and odd world ranks, each reversed.
    #[arg(long)]
    split: bool,
    /// Check allreduce alone (every type, operator and size, the bits, the
    /// big one): what an allreduce algorithm's forced run needs.
    #[arg(long)]
    allreduce_only: bool,
}

/// A test element: values from a seed, and the operators, written here
/// independently of the runtime.
trait Gen: Element + PartialEq + Debug + Default {
    const FLOAT: bool;
    fn gen(seed: u64) -> Self;
    fn apply(op: Op, a: Self, b: Self) -> Self;
    fn same(a: Self, b: Self) -> bool;
}

macro_rules! gen_int {
    ($($t:ty),*) => {$(
        impl Gen for $t {
            const FLOAT: bool = false;
            fn gen(seed: u64) -> Self { mix(seed) as $t }
            fn apply(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum => a.wrapping_add(b),
                    Op::Prod => a.wrapping_mul(b),
                    Op::Min => a.min(b),
                    Op::Max => a.max(b),
                    Op::BitAnd => a & b,
                    Op::BitOr => a | b,
                    Op::BitXor => a ^ b,
                }
            }
            fn same(a: Self, b: Self) -> bool { a == b }
        }
    )*};
}
macro_rules! gen_float {
    ($($t:ty),*) => {$(
        impl Gen for $t {
            const FLOAT: bool = true;
            // Not dyadic: sums round, so only the documented order matches.
            fn gen(seed: u64) -> Self { (mix(seed) % 2001) as $t / 7.0 - 140.0 }
            fn apply(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum => a + b,
                    Op::Prod => a * b,
                    Op::Min => a.min(b),
                    Op::Max => a.max(b),
                    _ => unreachable!(),
                }
            }
            fn same(a: Self, b: Self) -> bool { a.to_bits() == b.to_bits() }
        }
    )*};
}
gen_int!(i8, i16, i32, i64, u8, u16, u32, u64);
gen_float!(f32, f64);

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Rank `r`'s contribution of `n` elements in case `case`.
fn data<T: Gen>(case: u64, r: usize, n: usize) -> Vec<T> {
    (0..n)
        .map(|i| T::gen(case << 40 ^ (r as u64) << 24 ^ i as u64))
        .collect()
}

fn combine<T: Gen>(op: Op, a: &mut [T], b: &[T]) {
    a.iter_mut()
        .zip(b)
        .for_each(|(x, &y)| *x = T::apply(op, *x, y));
}

/// The reduction of `v[lo..hi)` in the runtime's binomial-tree order.
fn tree<T: Gen>(v: &[Vec<T>], op: Op) -> Vec<T> {
    let mut acc: Vec<Vec<T>> = v.to_vec();
    let mut mask = 1;
    while mask < v.len() {
        for r in (0..v.len()).step_by(2 * mask) {
            if r + mask < v.len() {
                let b = acc[r + mask].clone();
                combine(op, &mut acc[r], &b);
            }
        }
        mask <<= 1;
    }
    acc.swap_remove(0)
}

/// The reduction of `v` folded to a power of two first (the pairs
/// (2i, 2i + 1) of the first 2e ranks), then by the binomial tree: the
/// order of allreduce's recursive doubling and Rabenseifner's algorithm.
fn folded<T: Gen>(v: &[Vec<T>], op: Op) -> Vec<T> {
    let p = 1usize << (usize::BITS - 1 - v.len().leading_zeros());
    let e = v.len() - p;
    let mut y: Vec<Vec<T>> = (0..e)
        .map(|i| {
            let mut a = v[2 * i].clone();
            combine(op, &mut a, &v[2 * i + 1]);
            a
        })
        .collect();
    y.extend_from_slice(&v[2 * e..]);
    tree(&y, op)
}

/// The ring allreduce's order: block b (of n nearly equal blocks) is
/// `((x_b op x_{b+1}) op ...) op x_{b-1}`, ranks mod n.
fn ring<T: Gen>(v: &[Vec<T>], op: Op) -> Vec<T> {
    let (n, len) = (v.len(), v[0].len());
    let (q, m) = (len / n, len % n);
    let start = |b: usize| b * q + b.min(m);
    let mut out = v[0].clone();
    for b in 0..n {
        for (i, o) in out.iter_mut().enumerate().take(start(b + 1)).skip(start(b)) {
            *o = (1..n).fold(v[b][i], |acc, k| T::apply(op, acc, v[(b + k) % n][i]));
        }
    }
    out
}

/// What allreduce gives under the algorithm `c` picks for `v`'s length.
fn allreduce_want<T: Gen>(c: &Comm, v: &[Vec<T>], op: Op) -> Vec<T> {
    match c.allreduce_algorithm(v[0].len() * std::mem::size_of::<T>()) {
        AllreduceAlgorithm::Doubling | AllreduceAlgorithm::Rabenseifner => folded(v, op),
        AllreduceAlgorithm::Ring => ring(v, op),
        _ => tree(v, op),
    }
}

/// Floating-point allreduce whose result depends on the order (1e16, 1
/// and −1e16 mixed): every rank's result, gathered to rank 0 as bits,
/// must be the same, equal to the algorithm's documented order, and the
/// same on a second call.
fn bit_identical(c: &Comm, counts: &[usize]) -> Result<()> {
    const VALUES: [f64; 6] = [1e16, 1.0, -1e16, 0.5, 3.0, -1.0];
    let (me, size) = (c.rank(), c.size());
    for &n in counts {
        let all: Vec<Vec<f64>> = (0..size)
            .map(|r| {
                let v = |i: usize| VALUES[(mix((r as u64) << 32 ^ i as u64) % 6) as usize];
                (0..n).map(v).collect()
            })
            .collect();
        let want = allreduce_want(c, &all, Op::Sum);
        let mut buf = all[me].clone();
        c.allreduce(&mut buf, Op::Sum)?;
        let mut again = all[me].clone();
        c.allreduce(&mut again, Op::Sum)?;
        check(&format!("allreduce bits n={n} second call"), &again, &buf)?;
        let bits: Vec<u64> = buf.iter().map(|x| x.to_bits()).collect();
        let mut every = vec![0u64; if me == 0 { n * size } else { 0 }];
        c.gather(0, &bits, &mut every)?;
        if me == 0 {
            for (r, got) in every.chunks(n.max(1)).enumerate().take(size) {
                if let Some(i) = (0..n).find(|&i| got[i] != bits[i]) {
                    bail!(
                        "allreduce bits n={n}: rank {r} has {} at {i}, rank 0 {}",
                        f64::from_bits(got[i]),
                        buf[i]
                    );
                }
            }
        }
        check(&format!("allreduce bits n={n}"), &buf, &want)?;
        // The values do make the order matter: rank order differs.
        if size >= 4 && n >= 1000 {
            let chain = (1..size).fold(all[0].clone(), |mut a, r| {
                combine(Op::Sum, &mut a, &all[r]);
                a
            });
            ensure!(chain != want, "n={n}: the sums do not depend on the order");
        }
    }
    Ok(())
}

fn check<T: Gen>(what: &str, got: &[T], want: &[T]) -> Result<()> {
    ensure!(
        got.len() == want.len(),
        "{what}: length {} vs {}",
        got.len(),
        want.len()
    );
    if let Some(i) = (0..got.len()).find(|&i| !T::same(got[i], want[i])) {
        bail!(
            "{what}: element {i} is {:?}, expected {:?}",
            got[i],
            want[i]
        );
    }
    Ok(())
}

fn ops<T: Gen>() -> Vec<Op> {
    let mut v = vec![Op::Sum, Op::Prod, Op::Min, Op::Max];
    if !<T as Gen>::FLOAT {
        v.extend([Op::BitAnd, Op::BitOr, Op::BitXor]);
    }
    v
}

/// Every collective on type `T` at element counts `counts`.
/// Set by `--allreduce-only`: `collectives` checks allreduce alone.
static ALLREDUCE_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn collectives<T: Gen>(c: &Comm, counts: &[usize], case: &mut u64) -> Result<()> {
    let only = ALLREDUCE_ONLY.load(std::sync::atomic::Ordering::Relaxed);
    let (me, size) = (c.rank(), c.size());
    let name = std::any::type_name::<T>();
    for &n in counts {
        *case += 1;
        let all: Vec<Vec<T>> = (0..size).map(|r| data(*case, r, n)).collect();
        let flat: Vec<T> = all.concat();
        for op in ops::<T>() {
            let what = |call: &str| format!("{call}<{name}> n={n} {op:?}");
            let mut buf = all[me].clone();
            c.allreduce(&mut buf, op)?;
            check(&what("allreduce"), &buf, &allreduce_want(c, &all, op))?;
            if only {
                continue;
            }
            let want = tree(&all, op);
            for root in 0..size {
                let mut buf = all[me].clone();
                c.reduce(root, &mut buf, op)?;
                let expect = if me == root { &want } else { &all[me] };
                check(&what(&format!("reduce root {root}")), &buf, expect)?;
            }
            let mut buf = all[me].clone();
            c.scan(&mut buf, op)?;
            let mut prefix = all[0].clone();
            for b in &all[1..=me] {
                combine(op, &mut prefix, b);
            }
            check(&what("scan"), &buf, &prefix)?;
            // reduce_scatter: blocks of n elements out of size × n.
            let big: Vec<Vec<T>> = (0..size).map(|r| data(*case + 1000, r, n * size)).collect();
            let whole = tree(&big, op);
            let mut recv = vec![T::default(); n];
            c.reduce_scatter(&big[me], &mut recv, op)?;
            check(&what("reduce_scatter"), &recv, &whole[me * n..(me + 1) * n])?;
        }
        if only {
            continue;
        }
        for root in 0..size {
            let mut recv = vec![T::default(); if me == root { n * size } else { 0 }];
            c.gather(root, &all[me], &mut recv)?;
            if me == root {
                check(&format!("gather<{name}> n={n} root {root}"), &recv, &flat)?;
            }
            let send = if me == root { flat.clone() } else { Vec::new() };
            let mut recv = vec![T::default(); n];
            c.scatter(root, &send, &mut recv)?;
            check(
                &format!("scatter<{name}> n={n} root {root}"),
                &recv,
                &all[me],
            )?;
        }
        let mut recv = vec![T::default(); n * size];
        c.allgather(&all[me], &mut recv)?;
        check(&format!("allgather<{name}> n={n}"), &recv, &flat)?;
        // alltoall: rank s's block d is data(case, s * size + d).
        let block = |s: usize, d: usize| data::<T>(*case + 2000, s * size + d, n);
        let send: Vec<T> = (0..size).flat_map(|d| block(me, d)).collect();
        let want: Vec<T> = (0..size).flat_map(|s| block(s, me)).collect();
        let mut recv = vec![T::default(); n * size];
        c.alltoall(&send, &mut recv)?;
        check(&format!("alltoall<{name}> n={n}"), &recv, &want)?;
    }
    Ok(())
}

/// Point-to-point: every rank sends every other rank messages with three
/// tags; receivers take tag 2 by source first, then the rest from any
/// source with any tag, checking each (source, tag)'s order.
fn point_to_point(c: &Comm) -> Result<()> {
    let (me, size) = (c.rank(), c.size());
    let p = c.packet_bytes();
    // A message is its 4-byte tag and the data: p - 4 fills one packet.
    let lens = [0, 1, p - 5, p - 4, p - 3, p + 1, 3 * p + 7, 17];
    let payload = |src: usize, dst: usize, i: usize| -> Vec<u8> {
        let len = lens[i % lens.len()];
        (0..len)
            .map(|j| (src * 31 + dst * 7 + i * 3 + j) as u8)
            .collect()
    };
    const K: usize = 12;
    for d in (0..size).filter(|&d| d != me) {
        for i in 0..K {
            c.send(d, (i % 3) as u32, &payload(me, d, i))?;
        }
    }
    let mut next = vec![[0usize; 3]; size];
    let mut expect = |m: &mcast::Message| -> Result<()> {
        let t = m.tag as usize;
        // The next message of (source, tag): index t, t + 3, t + 6, ...
        let i = t + 3 * next[m.source][t];
        next[m.source][t] += 1;
        ensure!(
            m.data[..] == payload(m.source, me, i)[..],
            "message {i} from rank {} (tag {t}) differs",
            m.source
        );
        Ok(())
    };
    for s in (0..size).filter(|&s| s != me) {
        for _ in 0..K / 3 {
            let m = c.recv(Some(s), Some(2))?;
            ensure!(
                m.source == s && m.tag == 2,
                "recv(Some({s}), Some(2)) got {m:?}"
            );
            expect(&m)?;
        }
    }
    for _ in 0..(size - 1) * (K - K / 3) {
        let m = c.recv(None, None)?;
        ensure!(m.tag != 2, "a tag-2 message was left");
        expect(&m)?;
    }
    c.barrier()?;
    Ok(())
}

/// Bad arguments are refused locally, and nothing is sent: the barrier after
/// them still matches on every rank.
fn bad_arguments(c: &Comm) -> Result<()> {
    let size = c.size();
    let bad = |r: Result<(), Error>, what: &str| match r {
        Err(Error::InvalidArgument(_)) => Ok(()),
        other => bail!("{what}: {other:?}, expected InvalidArgument"),
    };
    bad(
        c.reduce(size, &mut [1i32], Op::Sum),
        "reduce root out of range",
    )?;
    bad(
        c.allreduce(&mut [1.0f32], Op::BitAnd),
        "allreduce BitAnd on f32",
    )?;
    bad(c.scan(&mut [1.0f64], Op::BitXor), "scan BitXor on f64")?;
    bad(
        c.allgather(&[1u8; 2], &mut [0u8; 1]),
        "allgather short recv",
    )?;
    let send = vec![1u64; size + 1];
    bad(
        c.reduce_scatter(&send, &mut [0u64; 1], Op::Sum),
        "reduce_scatter send",
    )?;
    if c.rank() == 0 {
        bad(
            c.gather(0, &[1i8], &mut []),
            "gather short recv at the root",
        )?;
        bad(
            c.scatter(0, &[1i8], &mut [0, 0]),
            "scatter short send at the root",
        )?;
    }
    bad(
        c.alltoall(&[0i32; 3], &mut [0i32; 2]),
        "alltoall lengths differ",
    )?;
    bad(c.send(size, 0, b"x"), "send out of range")?;
    // A send to itself is queued for its own recv, in order per tag, and
    // a recv from any source sees it too.
    let me = c.rank();
    c.send(me, 7, b"first")?;
    c.send(me, 8, b"other tag")?;
    c.send(me, 7, b"second")?;
    for (tag, want) in [
        (Some(7), &b"first"[..]),
        (Some(7), b"second"),
        (None, b"other tag"),
    ] {
        let m = c.recv(Some(me), tag)?;
        ensure!(
            m.source == me && &m.data[..] == want,
            "self recv {tag:?} got {m:?}"
        );
    }
    c.send(me, 9, b"")?;
    let m = c.recv(None, Some(9))?;
    ensure!(
        m.source == me && m.data.is_empty(),
        "self recv any got {m:?}"
    );
    bad(
        c.recv(Some(size), None).map(|_| ()),
        "recv from out of range",
    )?;
    c.barrier()?;
    Ok(())
}

/// The last rank calls differently; every rank must get `Mismatch`.
fn mismatch(c: &Comm, kind: &str) -> Result<()> {
    let last = c.rank() + 1 == c.size();
    let r = match kind {
        "op" => c.allreduce(&mut [1i32; 5], if last { Op::Max } else { Op::Sum }),
        "count" => c.allreduce(&mut vec![1.0f64; if last { 6 } else { 5 }], Op::Sum),
        "type" if last => c.allreduce(&mut [1.0f32; 10], Op::Sum),
        "type" => c.allreduce(&mut [1.0f64; 5], Op::Sum),
        "root" => c.reduce(usize::from(last), &mut [1u8; 3], Op::Sum),
        "collective" if last => c.scan(&mut [1i64; 4], Op::Sum),
        "collective" => c.allreduce(&mut [1i64; 4], Op::Sum),
        "algorithm" => c.allreduce(&mut [1.0f64; 40], Op::Sum),
        // On one host the barrier sends no message (barrier flags): the
        // others' bcast packet, or a probe, finds it.
        "barrier" if last => c.barrier(),
        "barrier" => c.bcast(0, &mut [7u8]),
        other => {
            bail!("--mismatch {other}: op, count, type, root, collective, algorithm or barrier")
        }
    };
    // A rank whose part ends with sending (a non-root of reduce) may
    // return before the mismatch is found: its next call reports it.
    let (r, when) = match r {
        Ok(()) => (c.barrier(), "next call"),
        e => (e, "call"),
    };
    match r {
        Err(Error::Mismatch { op, detail }) => {
            println!("rank {} mismatch ok ({when}): {op}: {detail}", c.rank());
            Ok(())
        }
        other => bail!("--mismatch {kind}: {other:?}, expected Mismatch"),
    }
}

fn run(args: &Args) -> Result<()> {
    let world = if args.mismatch.as_deref() == Some("algorithm") {
        // The last rank runs allreduce's ring, the others Rabenseifner's.
        let mut cfg = mcast::Config::from_env()?;
        let last = cfg.job.as_ref().is_some_and(|j| j.rank + 1 == j.size);
        cfg.allreduce = if last {
            AllreduceAlgorithm::Ring
        } else {
            AllreduceAlgorithm::Rabenseifner
        };
        Comm::with_config(cfg)?
    } else {
        mcast::init()?
    };
    // The world's rank and size name this process in what it prints.
    let (me, size) = (world.rank(), world.size());
    if args.split {
        let sub = world.split(Some(me as u32 % 2), -(me as i32))?;
        let sub = sub.ok_or_else(|| anyhow::anyhow!("split gave no communicator"))?;
        ensure!(
            sub.world_rank(sub.rank()) == Some(me),
            "split: rank {} of communicator {} is not world rank {me}",
            sub.rank(),
            sub.id()
        );
        if let Some(dead) = args.crash_rank.filter(|&d| d < size) {
            past_split(&world, me, dead)?;
        }
        if checks(args, &sub, me, size)? {
            drop(sub);
            world.finalize()?;
            println!("rank {me} of {size} ok");
        }
        return Ok(());
    }
    if checks(args, &world, me, size)? {
        world.finalize()?;
        println!("rank {me} of {size} ok");
    }
    Ok(())
}

/// Tag of the "past the split" messages (see [`past_split`]).
const PAST_SPLIT: u32 = 0x5917;

/// Hold the rank that is to crash until every other rank has left the
/// split. The split is a world collective: a member lost while another
/// is still in it fails it there (README "Failure semantics"), and that
/// rank then never reaches the sub-communicator's collective this
/// scenario tests. Each other rank tells `dead` it is past the split; a
/// send returns once the NI has the message, so it needs nothing back.
fn past_split(world: &Comm, me: usize, dead: usize) -> Result<()> {
    if me != dead {
        world.send(dead, PAST_SPLIT, &[])?;
        return Ok(());
    }
    // From each rank by name: the others leave as soon as their own
    // collective is done, and a receive from any source reports each such
    // departure once.
    for r in (0..world.size()).filter(|&r| r != me) {
        world.recv(Some(r), Some(PAST_SPLIT))?;
    }
    Ok(())
}

/// Everything `args` asks for, on communicator `c`; this process is rank
/// `wme` of `wsize` in the world. `Ok(true)`: the world may finalize (a
/// mismatch poisoned it, or a peer is gone, otherwise).
fn checks(args: &Args, c: &Comm, wme: usize, wsize: usize) -> Result<bool> {
    let (me, size) = (c.rank(), c.size());
    if let Some(kind) = &args.mismatch {
        mismatch(c, kind)?;
        println!("rank {wme} of {wsize} ok");
        return Ok(false);
    }
    if let Some(dead) = args.crash_rank {
        if wme == dead {
            std::process::exit(3);
        }
        let op = args.crash_in.as_str();
        let res = match op {
            "allreduce" => c.allreduce(&mut [1.0f64; 100], Op::Sum),
            "barrier" => c.barrier(),
            _ => bail!("--crash-in {op}: allreduce or barrier"),
        };
        match res {
            Err(Error::PeerLost { rank, .. }) if rank == dead => {
                println!("rank {wme} of {wsize} ok: {op} lost rank {rank}");
                return Ok(false);
            }
            Ok(()) if (0..size).all(|r| c.world_rank(r) != Some(dead)) => {
                // It leaves at once: a member still taking its result must
                // not fail for it (a departure is dated per communicator).
                println!("rank {wme} of {wsize} ok: {op} without rank {dead}");
                return Ok(false);
            }
            other => bail!("{op} with rank {dead} dead: {other:?}"),
        }
    }
    if let Some(iters) = args.latency {
        for n in [1, 128, 1024, args.big / 8] {
            let mut buf = vec![1.0f64; n];
            let iters = if n > 1024 { iters.div_ceil(100) } else { iters };
            c.barrier()?;
            let t = Instant::now();
            for _ in 0..iters {
                c.allreduce(&mut buf, Op::Sum)?;
            }
            let per = t.elapsed() / iters.max(1) as u32;
            if me == 0 {
                println!(
                    "allreduce {} bytes on {size} ranks: {per:?} per call",
                    n * 8
                );
            }
        }
        return Ok(true);
    }
    if args.stall {
        ensure!(!args.split, "--stall runs on the world");
        if me == 0 {
            let chunk = vec![7u8; 64 << 10];
            let r = (0..100_000).try_for_each(|_| c.send(1, 0, &chunk));
            match r {
                Err(Error::Timeout { detail, .. }) if detail.starts_with("rank 1 ") => {
                    println!("rank 0 stalled ok: {detail}")
                }
                other => bail!("sends to a rank that never receives: {other:?}"),
            }
        } else {
            // Out of mcast (heartbeats go on) until rank 0 has given up.
            std::thread::sleep(c.config().timeout + std::time::Duration::from_millis(1500));
        }
        c.barrier()?;
        println!("rank {me} of {size} ok");
        return Ok(false);
    }
    ALLREDUCE_ONLY.store(args.allreduce_only, std::sync::atomic::Ordering::Relaxed);
    if !args.allreduce_only {
        point_to_point(c)?;
        bad_arguments(c)?;
    }
    let p = c.packet_bytes();
    let mut case = 0;
    // A collective's message is a 16-byte fingerprint and the data: p - 16
    // bytes fill one packet.
    collectives::<i8>(c, &[0, 1, 13, p - 17, p - 16, p - 15, p + 1], &mut case)?;
    collectives::<i32>(c, &[1, 7, p / 4 + 1], &mut case)?;
    collectives::<u16>(c, &[3], &mut case)?;
    collectives::<i16>(c, &[5], &mut case)?;
    collectives::<i64>(c, &[p / 8 + 1], &mut case)?;
    collectives::<u8>(c, &[17], &mut case)?;
    collectives::<u32>(c, &[3], &mut case)?;
    collectives::<u64>(c, &[0, p / 8 - 1, 5], &mut case)?;
    collectives::<f32>(c, &[1, 11], &mut case)?;
    collectives::<f64>(c, &[0, 1, 9, p / 8 + 1], &mut case)?;
    bit_identical(c, &[0, 1, 2 * size + 1, p / 8 - 3, 20_000])?;
    if args.big > 0 {
        let n = args.big / 8;
        let all: Vec<Vec<f64>> = (0..size).map(|r| data(99, r, n)).collect();
        let mut buf = all[me].clone();
        c.barrier()?;
        let t = Instant::now();
        c.allreduce(&mut buf, Op::Sum)?;
        let dt = t.elapsed();
        check("allreduce big", &buf, &allreduce_want(c, &all, Op::Sum))?;
        if me == 0 {
            println!("allreduce {} bytes f64 on {size} ranks: {dt:?}", args.big);
        }
        if !args.allreduce_only {
            big_messages(c, args.big)?;
        }
    }
    Ok(true)
}

/// Every other collective once with `big` bytes in all (so with blocks of
/// `big / size` where a rank holds `size` blocks), checked.
fn big_messages(c: &Comm, big: usize) -> Result<()> {
    let (me, size) = (c.rank(), c.size());
    let n = big / 8;
    let block = n / size;
    let all: Vec<Vec<u64>> = (0..size).map(|r| data(77, r, n)).collect();
    let mut buf = all[me].clone();
    c.reduce(size - 1, &mut buf, Op::BitXor)?;
    if me == size - 1 {
        check("reduce big", &buf, &tree(&all, Op::BitXor))?;
    }
    let mut buf = all[me].clone();
    c.scan(&mut buf, Op::Max)?;
    let mut prefix = all[0].clone();
    for b in &all[1..=me] {
        combine(Op::Max, &mut prefix, b);
    }
    check("scan big", &buf, &prefix)?;
    let mut recv = vec![0u64; block];
    let whole = tree(&all, Op::Sum);
    if block > 0 {
        c.reduce_scatter(&all[me][..block * size], &mut recv, Op::Sum)?;
        let part: Vec<Vec<u64>> = all.iter().map(|v| v[..block * size].to_vec()).collect();
        let whole = tree(&part, Op::Sum);
        check(
            "reduce_scatter big",
            &recv,
            &whole[me * block..(me + 1) * block],
        )?;
    }
    let mut bytes = if me == 0 {
        whole.iter().flat_map(|x| x.to_le_bytes()).collect()
    } else {
        vec![0u8; n * 8]
    };
    c.bcast(0, &mut bytes)?;
    let want: Vec<u8> = whole.iter().flat_map(|x| x.to_le_bytes()).collect();
    ensure!(
        bytes == want,
        "bcast big: the root's bytes did not arrive whole"
    );
    let mine = &all[me][..block];
    let flat: Vec<u64> = all.iter().flat_map(|v| v[..block].to_vec()).collect();
    let mut recv = vec![0u64; if me == 0 { block * size } else { 0 }];
    c.gather(0, mine, &mut recv)?;
    if me == 0 {
        check("gather big", &recv, &flat)?;
    }
    let send = if me == size - 1 {
        flat.clone()
    } else {
        Vec::new()
    };
    let mut recv = vec![0u64; block];
    c.scatter(size - 1, &send, &mut recv)?;
    check("scatter big", &recv, mine)?;
    let mut recv = vec![0u64; block * size];
    c.allgather(mine, &mut recv)?;
    check("allgather big", &recv, &flat)?;
    // alltoall: rank s's block d is its data at d.
    let split = block;
    let send = &all[me][..split * size];
    let want: Vec<u64> = (0..size)
        .flat_map(|s| all[s][me * split..(me + 1) * split].to_vec())
        .collect();
    let mut recv = vec![0u64; split * size];
    c.alltoall(send, &mut recv)?;
    check("alltoall big", &recv, &want)?;
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcast-colltest: {e:#}");
            ExitCode::FAILURE
        }
    }
}
