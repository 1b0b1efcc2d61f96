//! mcast-faults: fault-injection scenarios for the whole-system tests (and for
//! measuring failure detection by hand). Run under mclaunch:
//!
//! ```text
//! mclaunch -n 8 --on-failure continue mcast-faults kill --victim 3 --at 40
//! mclaunch -n 4 mcast-faults hostile --go-file /tmp/go
//! ```
//!
//! * `kill`: every rank prints `READY rank=R pid=P` and runs a stream of broadcasts (the root rotates). At
//!   iteration `--at` the victim prints `KILL rank=V pid=P t_ns=T` and sends
//!   itself SIGKILL (or SIGSTOP with `--signal stop`). Every survivor must then get `Error::PeerLost` naming the
//!   victim; it prints `LOST rank=V by=R t_ns=T iter=I`. The survivors then
//!   show that non-collective work goes on: the lowest survivor multicasts to
//!   the others, who check the data and print `SURVIVED rank=R`.
//! * `depart`: the same stream, but at iteration `--at` the victim leaves
//!   without `finalize` (`--how return`: returns from its scenario, so its
//!   `Comm` is dropped as `main` returns; `drop`: drops it and lives on for
//!   `--linger-ms`; `forget`: `mem::forget`s it, lives on for `--linger-ms`
//!   and exits). It prints `DEPART rank=V pid=P t_ns=T how=H iter=I`.
//!   Every other rank must get `Error::PeerLost` naming it and prints
//!   `LOST rank=V by=R t_ns=T iter=I reason=...` (the reason to the end of
//!   the line), then the survivors' multicast as in `kill`. Any other error
//!   is printed as `ERROR by=R t_ns=T iter=I error=...`.
//! * `kill --signal stop`: a victim that is resumed (SIGCONT) after its
//!   peers declared it lost prints `CUTOFF rank=V t_ns=T iter=I error=...`
//!   for the error its next call returns.
//! * `hostile`: every rank prints `ADDR rank=R data=IP:PORT
//!   rendezvous=IP:PORT`, then waits (bounded) for `--go-file` to exist while
//!   the test attacks those ports, then runs checked broadcasts and multicasts
//!   and prints `rank R of N ok`.
//!
//! Times are wall-clock nanoseconds since the Unix epoch, so the test can
//! compare them across processes of one machine.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use mcast::{Comm, Error};

#[derive(Parser, Debug)]
#[command(
    name = "mcast-faults",
    about = "Fault-injection scenarios (run under mclaunch)"
)]
struct Args {
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand, Debug)]
enum Scenario {
    /// A stream of broadcasts in which one rank kills itself with SIGKILL.
    Kill {
        /// The rank that dies.
        #[arg(long)]
        victim: usize,
        /// The iteration at which it dies.
        #[arg(long)]
        at: u64,
        /// Bytes per broadcast.
        #[arg(long, default_value_t = 1000)]
        bytes: usize,
        /// How the victim goes: `kill` (SIGKILL: its connections close) or
        /// `stop` (SIGSTOP: it hangs with its connections open, so only the
        /// heartbeat can tell).
        #[arg(long, default_value = "kill", value_parser = ["kill", "stop"])]
        signal: String,
        /// Give up (exit 1) if the stream runs this many iterations.
        #[arg(long, default_value_t = 1_000_000)]
        max_iters: u64,
    },
    /// A stream of broadcasts that one rank leaves without `finalize`.
    Depart {
        /// The rank that leaves.
        #[arg(long)]
        victim: usize,
        /// The iteration at which it leaves.
        #[arg(long)]
        at: u64,
        /// How: `return` (its `Comm` dropped as main returns), `drop` (drop
        /// it and live on), `forget` (`mem::forget` it, then exit).
        #[arg(long, default_value = "return", value_parser = ["return", "drop", "forget"])]
        how: String,
        /// How long the victim lives on after `drop` or `forget`, in ms.
        #[arg(long, default_value_t = 0)]
        linger_ms: u64,
        /// Bytes per broadcast.
        #[arg(long, default_value_t = 1000)]
        bytes: usize,
        /// Give up (exit 1) if the stream runs this many iterations.
        #[arg(long, default_value_t = 1_000_000)]
        max_iters: u64,
    },
    /// Print the listening ports, wait for the go file, then run checked traffic.
    Hostile {
        /// Wait for this file to exist before starting the traffic.
        #[arg(long)]
        go_file: PathBuf,
        /// Iterations of checked traffic.
        #[arg(long, default_value_t = 50)]
        iters: usize,
    },
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn fill(buf: &mut [u8], seed: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i as u64).wrapping_mul(0x9e37_79b9).wrapping_add(seed) as u8;
    }
}

fn kill(comm: &Comm, victim: usize, at: u64, bytes: usize, sig: i32, max_iters: u64) -> Result<()> {
    let (me, n) = (comm.rank(), comm.size());
    if victim >= n || n < 2 {
        bail!("victim {victim} is not a rank of {n} (need at least 2 ranks)");
    }
    say(format!("READY rank={me} pid={}", std::process::id()));
    let mut buf = vec![0u8; bytes];
    let mut want = vec![0u8; bytes];
    for i in 0..max_iters {
        if me == victim && i == at {
            say(format!(
                "KILL rank={me} pid={} t_ns={}",
                std::process::id(),
                now_ns()
            ));
            // SAFETY: raise has no memory-safety preconditions.
            unsafe { libc::raise(sig) };
        }
        if me == victim && i >= at {
            // Resumed after a stop: the peers have cut it off meanwhile.
            if let Err(e) = bcast_checked(comm, i, &mut buf, &mut want) {
                say(format!(
                    "CUTOFF rank={me} t_ns={} iter={i} error={e}",
                    now_ns()
                ));
                return Err(e).context(format!("bcast #{i}"));
            }
            continue;
        }
        let root = (i as usize) % n;
        fill(&mut want, i);
        if me == root {
            buf.copy_from_slice(&want);
        }
        match comm.bcast(root, &mut buf) {
            Ok(()) => {
                if buf != want {
                    bail!("bcast #{i} delivered wrong data");
                }
            }
            Err(Error::PeerLost { rank, reason }) => {
                say(format!(
                    "LOST rank={rank} by={me} t_ns={} iter={i}",
                    now_ns()
                ));
                if rank != victim {
                    bail!("expected rank {victim} to be lost, got rank {rank}: {reason}");
                }
                return survivors_multicast(comm, victim);
            }
            Err(e) => return Err(e).context(format!("bcast #{i}")),
        }
    }
    bail!("rank {victim} never died within {max_iters} iterations")
}

/// Bcast #i of the stream (the root rotates), checking the data.
fn bcast_checked(comm: &Comm, i: u64, buf: &mut [u8], want: &mut [u8]) -> Result<(), Error> {
    let root = (i as usize) % comm.size();
    fill(want, i);
    if comm.rank() == root {
        buf.copy_from_slice(want);
    }
    comm.bcast(root, buf)?;
    if buf != want {
        return Err(Error::Protocol(format!("bcast #{i} delivered wrong data")));
    }
    Ok(())
}

/// The bcast stream of `kill`, which the victim leaves without finalize.
fn depart(
    comm: Comm,
    victim: usize,
    at: u64,
    how: &str,
    linger: Duration,
    bytes: usize,
    max_iters: u64,
) -> Result<()> {
    let (me, n) = (comm.rank(), comm.size());
    if victim >= n || n < 2 {
        bail!("victim {victim} is not a rank of {n} (need at least 2 ranks)");
    }
    say(format!("READY rank={me} pid={}", std::process::id()));
    let mut buf = vec![0u8; bytes];
    let mut want = vec![0u8; bytes];
    for i in 0..max_iters {
        if me == victim && i == at {
            say(format!(
                "DEPART rank={me} pid={} t_ns={} how={how} iter={i}",
                std::process::id(),
                now_ns()
            ));
            match how {
                "drop" => drop(comm),
                "forget" => std::mem::forget(comm),
                _ => return Ok(()),
            }
            std::thread::sleep(linger);
            return Ok(());
        }
        match bcast_checked(&comm, i, &mut buf, &mut want) {
            Ok(()) => {}
            Err(Error::PeerLost { rank, reason }) => {
                say(format!(
                    "LOST rank={rank} by={me} t_ns={} iter={i} reason={reason}",
                    now_ns()
                ));
                if rank != victim {
                    bail!("expected rank {victim} to be lost, got rank {rank}: {reason}");
                }
                return survivors_multicast(&comm, victim);
            }
            Err(e) => {
                say(format!(
                    "ERROR by={me} t_ns={} iter={i} error={e}",
                    now_ns()
                ));
                return Err(e).context(format!("bcast #{i}"));
            }
        }
    }
    bail!("rank {victim} never left within {max_iters} iterations")
}

/// After the loss: the lowest survivor multicasts to the other survivors.
fn survivors_multicast(comm: &Comm, victim: usize) -> Result<()> {
    let me = comm.rank();
    let survivors: Vec<usize> = (0..comm.size()).filter(|&r| r != victim).collect();
    let src = survivors[0];
    let msg = b"the living carry on".repeat(100);
    if me == src {
        // A multicast that includes the dead rank is refused, naming it.
        match comm.multicast(&[victim], &msg) {
            Err(Error::PeerLost { rank, .. }) if rank == victim => {}
            other => bail!("multicast to the dead rank: {other:?}"),
        }
        comm.multicast(&survivors[1..], &msg)?;
    } else {
        // From `src` itself: a survivor that is done exits without
        // finalize (none is possible after a loss), and `recv_multicast`
        // from any source would report that departure.
        let r = comm
            .recv_multicast_from(src)
            .context("survivors' multicast")?;
        if r.source != src || r.data[..] != msg[..] {
            bail!(
                "survivors' multicast came from {} with wrong data",
                r.source
            );
        }
    }
    say(format!("SURVIVED rank={me}"));
    Ok(())
}

fn hostile(comm: Comm, go_file: &Path, iters: usize) -> Result<()> {
    let (me, n) = (comm.rank(), comm.size());
    let rendezvous = std::env::var(mcast::config::ENV_RENDEZVOUS).unwrap_or_default();
    say(format!(
        "ADDR rank={me} data={} rendezvous={rendezvous}",
        comm.data_addr().unwrap_or("-")
    ));
    let deadline = Instant::now() + Duration::from_secs(120);
    while !go_file.exists() {
        if Instant::now() > deadline {
            bail!("{} did not appear within 120 s", go_file.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    comm.barrier()?;
    for i in 0..iters {
        let root = i % n;
        let len = 1 + (i * 7919) % 20_000;
        let mut buf = vec![0u8; len];
        let mut want = vec![0u8; len];
        fill(&mut want, i as u64);
        if me == root {
            buf.copy_from_slice(&want);
        }
        comm.bcast(root, &mut buf)?;
        if buf != want {
            bail!("bcast #{i} delivered wrong data");
        }
        // Root multicasts the same data to every other rank.
        if me == root {
            let dests: Vec<usize> = (0..n).filter(|&d| d != root).collect();
            comm.multicast(&dests, &want)?;
        } else {
            // A later root may run ahead (a bcast root does not wait), so
            // take this iteration's multicast from its own source.
            let data = comm.recv_multicast_from(root)?.data;
            if data[..] != want[..] {
                bail!("multicast #{i} from rank {root} delivered wrong data");
            }
        }
    }
    say(format!("rank {me} of {n} ok"));
    comm.finalize()?;
    Ok(())
}

fn main() -> ExitCode {
    mcast::logging::init();
    let args = Args::parse();
    let res = mcast::init()
        .context("joining the job")
        .and_then(|comm| match &args.scenario {
            Scenario::Kill {
                victim,
                at,
                bytes,
                signal,
                max_iters,
            } => {
                let sig = if signal == "stop" {
                    libc::SIGSTOP
                } else {
                    libc::SIGKILL
                };
                kill(&comm, *victim, *at, *bytes, sig, *max_iters)
            }
            Scenario::Depart {
                victim,
                at,
                how,
                linger_ms,
                bytes,
                max_iters,
            } => depart(
                comm,
                *victim,
                *at,
                how,
                Duration::from_millis(*linger_ms),
                *bytes,
                *max_iters,
            ),
            Scenario::Hostile { go_file, iters } => hostile(comm, go_file, *iters),
        });
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One write: stderr is unbuffered, and other processes (the
            // other ranks, mclaunch) write to it too.
            let line = format!("mcast-faults: {e:#}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            ExitCode::FAILURE
        }
    }
}
