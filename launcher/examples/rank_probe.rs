//! A minimal rank that speaks the rendezvous protocol directly, for testing
//! mclaunch without the full runtime.
//!
//! ```text
//! mclaunch -n 3 rank_probe [--skip RANK] [--skip-action sleep|exit] [--stray]
//! ```
//!
//! Each rank reads its `MCAST_*` environment, connects to the rendezvous, sends
//! a `Hello` with data address `127.0.0.1:(1000 + rank)`, prints the reply and
//! exits 0 on `Table`, 3 on `Failed`.
//!
//! - `--skip RANK` (repeatable): that rank never joins; it sleeps for a minute
//!   (`--skip-action sleep`, the default) or exits 0 at once (`--skip-action exit`).
//! - `--stray`: rank 0 first sends a hello with a wrong token on a second
//!   connection and prints how it was answered (exit 4 if it was accepted).

use std::net::TcpStream;
use std::process::ExitCode;
use std::time::Duration;

use mcast::bootstrap::{read_frame, write_frame, Hello, RendezvousReply, PROTOCOL_VERSION};
use mcast::config::{ENV_RANK, ENV_RENDEZVOUS, ENV_SIZE, ENV_TOKEN};

struct Options {
    skip: Vec<u32>,
    skip_exits: bool,
    stray: bool,
}

fn parse_options() -> Result<Options, String> {
    let mut opts = Options {
        skip: Vec::new(),
        skip_exits: false,
        stray: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--skip" => {
                let r = args.next().ok_or("--skip needs a rank")?;
                opts.skip
                    .push(r.parse().map_err(|_| format!("bad rank {r:?}"))?);
            }
            "--skip-action" => match args.next().as_deref() {
                Some("sleep") => opts.skip_exits = false,
                Some("exit") => opts.skip_exits = true,
                other => return Err(format!("bad --skip-action {other:?}")),
            },
            "--stray" => opts.stray = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(opts)
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

/// Send a hello on a new connection and return the reply.
fn exchange(rendezvous: &str, hello: &Hello) -> Result<RendezvousReply, String> {
    let mut stream =
        TcpStream::connect(rendezvous).map_err(|e| format!("connect {rendezvous}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    write_frame(&mut stream, hello).map_err(|e| format!("send hello: {e}"))?;
    read_frame(&mut stream).map_err(|e| format!("read reply: {e}"))
}

fn probe() -> Result<u8, String> {
    let opts = parse_options()?;
    let rank: u32 = env(ENV_RANK)?.parse().map_err(|_| "bad rank")?;
    let size: u32 = env(ENV_SIZE)?.parse().map_err(|_| "bad size")?;
    let rendezvous = env(ENV_RENDEZVOUS)?;
    let token = env(ENV_TOKEN)?;

    if opts.skip.contains(&rank) {
        println!("rank {rank}: not joining");
        if !opts.skip_exits {
            std::thread::sleep(Duration::from_secs(60));
        }
        return Ok(0);
    }

    let hello = Hello {
        version: PROTOCOL_VERSION,
        token,
        rank,
        size,
        data_addr: format!("127.0.0.1:{}", 1000 + rank),
        pid: std::process::id(),
    };

    if opts.stray && rank == 0 {
        let stray = Hello {
            token: "0123456789abcdef0123456789abcdef".into(),
            ..hello.clone()
        };
        match exchange(&rendezvous, &stray)? {
            RendezvousReply::Failed { reason } => println!("stray rejected: {reason}"),
            reply => {
                println!("stray accepted: {reply:?}");
                return Ok(4);
            }
        }
    }

    match exchange(&rendezvous, &hello)? {
        RendezvousReply::Table { job, addrs } => {
            println!("rank {rank}: table job={job} addrs={}", addrs.join(","));
            Ok(0)
        }
        RendezvousReply::Failed { reason } => {
            println!("rank {rank}: failed: {reason}");
            Ok(3)
        }
    }
}

fn main() -> ExitCode {
    match probe() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("rank_probe: {e}");
            ExitCode::from(2)
        }
    }
}
