//! mcast-pressure: load that must not make memory grow without bound (issue
//! "bounded memory"). Run under mclaunch; the test (tests/pressure.rs) reads
//! every rank's peak RSS from `/proc/PID/status` while it runs.
//!
//! ```text
//! mclaunch -n 8 mcast-pressure bcast-loop --secs 60 --bytes 1000
//! mclaunch -n 8 mcast-pressure flood --secs 60 --bytes 65536 --sleep-us 1000
//! mclaunch -n 4 mcast-pressure never-recv --secs 30 --idle 1
//! ```
//!
//! * `bcast-loop`: rank 0 broadcasts `--bytes` to every rank, in a loop,
//!   for `--secs` (the root decides when to stop and says so in the data).
//! * `flood`: rank 0 multicasts `--bytes` to every other rank for `--secs`;
//!   each receiver sleeps `--sleep-us` after every `recv_multicast`, and
//!   takes messages until the last (marked in its first byte).
//! * `never-recv`: as `flood`, but rank `--idle` never calls
//!   `recv_multicast`. With flow control the source stalls on it: its
//!   `multicast` fails with `Timeout` (set `MCAST_TIMEOUT_SECS` below
//!   `--secs`) naming the idle rank, and the source prints `BLOCKED`, then
//!   sends the last message to the others. Every rank finalizes after
//!   `--secs`.
//!
//! Every rank prints `READY rank=R pid=P` first and `DONE rank=R count=C`
//! last.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use mcast::{Comm, Error};

#[derive(Parser, Debug)]
#[command(
    name = "mcast-pressure",
    about = "Sustained load for memory bounds (run under mclaunch)"
)]
struct Args {
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand, Debug)]
enum Scenario {
    /// Rank 0 broadcasts in a loop.
    BcastLoop {
        #[arg(long, default_value_t = 60.0)]
        secs: f64,
        #[arg(long, default_value_t = 1000)]
        bytes: usize,
    },
    /// Rank 0 multicasts to slow receivers.
    Flood {
        #[arg(long, default_value_t = 60.0)]
        secs: f64,
        #[arg(long, default_value_t = 65536)]
        bytes: usize,
        /// Each receiver sleeps this long after every receive.
        #[arg(long, default_value_t = 1000)]
        sleep_us: u64,
    },
    /// Rank 0 multicasts to every rank; rank `--idle` never receives.
    NeverRecv {
        #[arg(long, default_value_t = 60.0)]
        secs: f64,
        #[arg(long, default_value_t = 65536)]
        bytes: usize,
        #[arg(long, default_value_t = 1)]
        idle: usize,
    },
}

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn bcast_loop(comm: &Comm, secs: f64, bytes: usize) -> Result<u64> {
    let bytes = bytes.max(1);
    let start = Instant::now();
    let mut buf = vec![0u8; bytes];
    let mut count = 0u64;
    loop {
        if comm.rank() == 0 {
            // The first byte says whether this is the last one.
            let last = start.elapsed().as_secs_f64() >= secs;
            buf.fill(count as u8);
            buf[0] = last as u8;
        }
        comm.bcast(0, &mut buf)
            .with_context(|| format!("bcast #{count}"))?;
        count += 1;
        if buf[0] == 1 {
            return Ok(count);
        }
        if buf.len() > 1 && buf[1] != (count - 1) as u8 {
            bail!("bcast #{} delivered wrong data", count - 1);
        }
    }
}

/// Rank 0 multicasts to every other rank for `secs`, then sends a last
/// message (first byte 1) to every rank but `idle`; the receivers take
/// messages until the last, sleeping `sleep` after each. `idle` never
/// receives.
fn flood(
    comm: &Comm,
    secs: f64,
    bytes: usize,
    sleep: Duration,
    idle: Option<usize>,
) -> Result<u64> {
    let (me, n) = (comm.rank(), comm.size());
    if n < 2 {
        bail!("needs at least 2 ranks");
    }
    let bytes = bytes.max(1);
    let start = Instant::now();
    let mut count = 0u64;
    if me == 0 {
        let dests: Vec<usize> = (1..n).collect();
        let mut data = vec![7u8; bytes];
        data[0] = 0;
        while start.elapsed().as_secs_f64() < secs {
            match comm.multicast(&dests, &data) {
                Ok(()) => count += 1,
                Err(e @ Error::Timeout { .. }) => {
                    say(format!("BLOCKED rank={me} sent={count} err={e}"));
                    break;
                }
                Err(e) => return Err(e).context(format!("multicast #{count}")),
            }
        }
        let receivers: Vec<usize> = dests.into_iter().filter(|&d| Some(d) != idle).collect();
        data[0] = 1;
        comm.multicast(&receivers, &data)
            .context("the last multicast")?;
    } else if idle != Some(me) {
        loop {
            // The source may stall for MCAST_TIMEOUT_SECS on an idle rank.
            let m = comm
                .recv_multicast_timeout(Duration::from_secs_f64(2.0 * secs))
                .with_context(|| format!("recv_multicast #{count}"))?;
            if m.data.len() != bytes || m.data[1..].iter().any(|&b| b != 7) {
                bail!("multicast #{count} delivered wrong data");
            }
            if m.data[0] == 1 {
                break;
            }
            count += 1;
            std::thread::sleep(sleep);
        }
    }
    // Everyone (the idle rank too, as if computing) finalizes at about the
    // same time, so no wait in the final barrier comes near the timeout.
    if let Some(left) = Duration::from_secs_f64(secs).checked_sub(start.elapsed()) {
        std::thread::sleep(left);
    }
    Ok(count)
}

fn main() -> ExitCode {
    mcast::logging::init();
    let args = Args::parse();
    let res = mcast::init().context("joining the job").and_then(|comm| {
        say(format!(
            "READY rank={} pid={}",
            comm.rank(),
            std::process::id()
        ));
        let count = match args.scenario {
            Scenario::BcastLoop { secs, bytes } => bcast_loop(&comm, secs, bytes)?,
            Scenario::Flood {
                secs,
                bytes,
                sleep_us,
            } => flood(&comm, secs, bytes, Duration::from_micros(sleep_us), None)?,
            Scenario::NeverRecv { secs, bytes, idle } => {
                flood(&comm, secs, bytes, Duration::ZERO, Some(idle))?
            }
        };
        say(format!("DONE rank={} count={count}", comm.rank()));
        comm.finalize().context("finalize")
    });
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let line = format!("mcast-pressure: {e:#}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            ExitCode::FAILURE
        }
    }
}
