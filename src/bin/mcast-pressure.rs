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
//!   each receiver sleeps `--sleep-us` after every `recv_multicast`. Then
//!   rank 0 broadcasts how many it sent and the receivers take the rest.
//! * `never-recv`: as `flood`, but rank `--idle` never calls
//!   `recv_multicast`. With flow control the source stalls on it: its
//!   `multicast` fails with `Timeout` (set `MCAST_TIMEOUT_SECS` below
//!   `--secs`) naming the idle rank, and the source prints `BLOCKED`.
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

/// Rank 0 multicasts to every other rank (but never `idle`'s receives) for
/// `secs`; the rest receive, sleeping `sleep` after each.
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
    let dests: Vec<usize> = (1..n).collect();
    let start = Instant::now();
    let mut sent = 0u64;
    if me == 0 {
        let data = vec![7u8; bytes];
        while start.elapsed().as_secs_f64() < secs {
            match comm.multicast(&dests, &data) {
                Ok(()) => sent += 1,
                Err(e @ Error::Timeout { .. }) => {
                    say(format!("BLOCKED rank={me} sent={sent} err={e}"));
                    break;
                }
                Err(e) => return Err(e).context(format!("multicast #{sent}")),
            }
        }
    }
    // Receivers take what arrives while the source sends; the count comes
    // after.
    let mut got = 0u64;
    let receiving = me != 0 && idle != Some(me);
    let mut total = [0u8; 8];
    if receiving {
        while start.elapsed().as_secs_f64() < secs {
            match comm.recv_multicast_timeout(Duration::from_millis(200)) {
                Ok(m) => {
                    if m.data.len() != bytes || m.data.iter().any(|&b| b != 7) {
                        bail!("multicast #{got} delivered wrong data");
                    }
                    got += 1;
                    std::thread::sleep(sleep);
                }
                Err(Error::Timeout { .. }) => {}
                Err(e) => return Err(e).context(format!("recv_multicast #{got}")),
            }
        }
    }
    total.copy_from_slice(&sent.to_le_bytes());
    comm.bcast(0, &mut total).context("bcast of the count")?;
    let total = u64::from_le_bytes(total);
    if receiving {
        while got < total {
            comm.recv_multicast()
                .context("the rest of the multicasts")?;
            got += 1;
        }
    }
    Ok(if me == 0 { sent } else { got })
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
