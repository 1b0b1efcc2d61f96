//! Bulk transfer one way between two hosts with nothing of mcast but its
//! link settings: QUIC (quinn, with mcast's endpoint, transport settings
//! and certificate checks), TLS 1.3 over TCP (rustls, the same provider and
//! certificates) or plain TCP. It measures what each stack alone moves on a
//! network, the ceiling for mcast's links over it (issue 19; README
//! "Clusters"). `bench/compare-quic/raw.py` runs it across the namespace
//! test cluster.
//!
//! ```text
//! mcquic-raw serve --mode quic --bind 10.77.0.12:0
//!     prints `READY <port> <client bundle, hex>`, takes one connection,
//!     reads the length it announces and that many bytes, answers one byte
//! mcquic-raw send --mode quic --to 10.77.0.12:PORT --bytes N --chunk C
//!     reads the bundle line on standard input (never on a command line),
//!     sends, waits for the answer, prints JSON: bytes, seconds, MB/s,
//!     and the Unix times it started and ended (`--start-at T`: start at
//!     Unix time T once connected, so flows of several hosts overlap)
//! ```
//!
//! The clock runs from the connection's first byte (after the handshake)
//! to the server's answer, so the figure is the stack's steady transfer.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::{Parser, Subcommand, ValueEnum};
use mcast::quic::ca::{JobCa, RankIdentity, Validity};
use mcast::quic::endpoint::{self, LinkOptions};
use mcast::quic::rdv;

/// The job id of the certificates this tool makes for itself.
const JOB: u32 = 0x51_0c_a1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// quinn with mcast's link settings (one bidirectional stream).
    Quic,
    /// TLS 1.3 over TCP (rustls, the provider mcast's QUIC uses).
    Tls,
    /// Plain TCP.
    Tcp,
}

#[derive(Parser)]
#[command(
    about = "One-way bulk transfer over QUIC, TLS over TCP or TCP, with mcast's link settings"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Take one transfer; print `READY <port> <client bundle, hex>` first.
    Serve {
        #[arg(long, value_enum)]
        mode: Mode,
        /// Address to listen on (port 0: any free one).
        #[arg(long)]
        bind: SocketAddr,
        /// Give up after this many seconds in all.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// Send `--bytes` to a server, reading its line on standard input.
    Send {
        #[arg(long, value_enum)]
        mode: Mode,
        #[arg(long)]
        to: SocketAddr,
        /// Bytes to move.
        #[arg(long, default_value_t = 1 << 30)]
        bytes: u64,
        /// Bytes per write (one buffer, written again and again).
        #[arg(long, default_value_t = 4 << 20)]
        chunk: usize,
        /// Start sending at this Unix time (seconds), once connected, so
        /// that flows from several hosts run at once (their clocks agree).
        #[arg(long)]
        start_at: Option<f64>,
        /// Give up after this many seconds in all.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Serve {
            mode,
            bind,
            timeout,
        } => {
            watchdog(Duration::from_secs(timeout), "serve");
            serve(mode, bind)
        }
        Cmd::Send {
            mode,
            to,
            bytes,
            chunk,
            start_at,
            timeout,
        } => {
            watchdog(Duration::from_secs(timeout), "send");
            send(mode, to, bytes, chunk.max(1), start_at)
        }
    }
}

/// End the process with an error once `limit` has passed, whatever it is
/// waiting for (a peer that never connects, a transfer that stalls).
fn watchdog(limit: Duration, what: &'static str) {
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!("mcquic-raw {what}: not done within {limit:?}");
        std::process::exit(1);
    });
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        bail!("the bundle is not hex");
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).context("the bundle is not hex"))
        .collect()
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Take one transfer (bounded by the watchdog).
fn serve(mode: Mode, bind: SocketAddr) -> Result<()> {
    let ca = JobCa::new(JOB, Validity::starting_now(Duration::from_secs(3600)))?;
    let client = ca.issue(1)?;
    let ready = |port: u16| {
        println!("READY {port} {}", hex(&client.to_bytes()));
        let _ = std::io::stdout().flush();
    };
    match mode {
        Mode::Quic => {
            let me = ca.issue(0)?;
            let rt = runtime()?;
            rt.block_on(async {
                let opts = LinkOptions::default();
                let ep = endpoint::endpoint(&me, bind, &opts)?;
                ready(ep.local_addr()?.port());
                let conn = endpoint::accept(&ep, &me, &opts).await?.connection;
                let (mut tx, mut rx) = conn.accept_bi().await?;
                let mut len = [0u8; 8];
                rx.read_exact(&mut len).await?;
                let mut left = u64::from_le_bytes(len);
                while left > 0 {
                    match rx.read_chunk(usize::MAX, true).await? {
                        Some(c) => left = left.saturating_sub(c.bytes.len() as u64),
                        None => bail!("the stream ended {left} bytes short"),
                    }
                }
                tx.write_all(b"k").await?;
                tx.finish()?;
                let _ = tokio::time::timeout(Duration::from_secs(5), tx.stopped()).await;
                Ok(())
            })
        }
        Mode::Tls | Mode::Tcp => {
            let listener = TcpListener::bind(bind)?;
            ready(listener.local_addr()?.port());
            let (sock, _) = listener.accept()?;
            if mode == Mode::Tcp {
                return drain(sock);
            }
            let cfg = rdv::server_config(&ca.issue_rendezvous()?)?;
            let conn = rustls::ServerConnection::new(cfg)?;
            drain(rustls::StreamOwned::new(conn, sock))
        }
    }
}

/// Read the announced length and that many bytes, then answer.
fn drain(mut s: impl Read + Write) -> Result<()> {
    let mut len = [0u8; 8];
    s.read_exact(&mut len)?;
    let mut left = u64::from_le_bytes(len);
    let mut buf = vec![0u8; 1 << 20];
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        match s.read(&mut buf[..want])? {
            0 => bail!("the connection ended {left} bytes short"),
            n => left -= n as u64,
        }
    }
    s.write_all(b"k")?;
    s.flush()?;
    Ok(())
}

/// Now as Unix time in seconds.
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// How long until `start_at` (Unix seconds; none: now), at most a minute.
fn until(start_at: Option<f64>) -> Duration {
    start_at.map_or(Duration::ZERO, |t| {
        Duration::from_secs_f64((t - unix_now()).clamp(0.0, 60.0))
    })
}

fn send(mode: Mode, to: SocketAddr, bytes: u64, chunk: usize, start_at: Option<f64>) -> Result<()> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let me = RankIdentity::from_bytes(&unhex(&line)?)?;
    let data = Bytes::from(vec![0x5au8; chunk]);
    let (t0, secs) = match mode {
        Mode::Quic => runtime()?.block_on(send_quic(&me, to, bytes, &data, start_at))?,
        Mode::Tcp => {
            let s = TcpStream::connect(to)?;
            std::thread::sleep(until(start_at));
            push(s, bytes, &data)?
        }
        Mode::Tls => {
            let conn = rustls::ClientConnection::new(
                rdv::client_config(&me)?,
                rdv::server_name(me.job())?,
            )?;
            let mut s = rustls::StreamOwned::new(conn, TcpStream::connect(to)?);
            // The handshake first, off the clock.
            while s.conn.is_handshaking() {
                s.conn.complete_io(&mut s.sock)?;
            }
            std::thread::sleep(until(start_at));
            push(s, bytes, &data)?
        }
    };
    let mbps = bytes as f64 / secs / 1e6;
    println!(
        "{{\"mode\": \"{mode:?}\", \"bytes\": {bytes}, \"chunk\": {chunk}, \"secs\": {secs:.6}, \"mb_per_s\": {mbps:.1}, \"t0\": {t0:.6}, \"t1\": {:.6}}}",
        t0 + secs
    );
    Ok(())
}

/// Send the length and `bytes` of `data` repeated; wait for the answer.
/// Returns the Unix time it started and the seconds it took.
fn push(mut s: impl Read + Write, bytes: u64, data: &[u8]) -> Result<(f64, f64)> {
    let (t0, t) = (unix_now(), Instant::now());
    s.write_all(&bytes.to_le_bytes())?;
    let mut left = bytes;
    while left > 0 {
        let n = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        s.write_all(&data[..n])?;
        left -= n as u64;
    }
    s.flush()?;
    let mut k = [0u8; 1];
    s.read_exact(&mut k)?;
    Ok((t0, t.elapsed().as_secs_f64()))
}

async fn send_quic(
    me: &RankIdentity,
    to: SocketAddr,
    bytes: u64,
    data: &Bytes,
    start_at: Option<f64>,
) -> Result<(f64, f64)> {
    let opts = LinkOptions::default();
    let any: SocketAddr = if to.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let ep = endpoint::endpoint(me, any, &opts)?;
    let conn = endpoint::connect(&ep, me, to, 0, &opts).await?;
    let (mut tx, mut rx) = conn.open_bi().await?;
    tokio::time::sleep(until(start_at)).await;
    let (t0, t) = (unix_now(), Instant::now());
    tx.write_all(&bytes.to_le_bytes()).await?;
    let mut left = bytes;
    while left > 0 {
        let n = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        // As mcast's links do: quinn keeps the bytes, no copy.
        tx.write_chunk(data.slice(..n)).await?;
        left -= n as u64;
    }
    let mut k = [0u8; 1];
    rx.read_exact(&mut k).await?;
    let secs = t.elapsed().as_secs_f64();
    conn.close(0u32.into(), b"done");
    ep.wait_idle().await;
    Ok((t0, secs))
}
