//! `mclaunch --proxy`: one per remote host, like Open MPI's orted or
//! Hydra's proxy. The launch agent (`ssh HOST`, `srun`) starts it; it reads the job
//! ([`wire::ProxyJob`]) from stdin, starts that host's ranks exactly as
//! mclaunch starts local ones (`spawn::start_rank`: own process groups,
//! `PR_SET_PDEATHSIG`, a guardian, the report pipe), and sends back on
//! stdout their start, output, departure reports and exits.
//!
//! It stops its ranks (SIGTERM, then SIGKILL after the grace period) when
//! mclaunch says the job is over, when the channel to mclaunch ends or goes
//! silent, and when it is signalled; if the proxy itself is killed, its
//! guardian kills the ranks' groups. So no rank outlives the connection
//! to mclaunch.

pub(crate) mod wire;

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::ExitStatusExt;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use mcast::bootstrap::{read_frame, write_frame};

use crate::guardian::Guardian;
use crate::output::lines_into;
use crate::reports::Reports;
use crate::spawn::{start_rank, StartError};
use crate::spec::{JobSpec, OutputMode};
use crate::supervisor::{Event, SignalWatch};
use crate::{note, procs};
use wire::{Down, PollReader, ProxyJob, Up, HEARTBEAT, PROXY_VERSION};

/// How long mclaunch has to send the job after the proxy starts.
const JOB_WAIT: Duration = Duration::from_secs(60);
/// How long to wait for ranks to disappear after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Run as a proxy; returns the exit code.
pub fn serve() -> u8 {
    if let Err(e) = raw_stdout() {
        note(&format!("proxy: cannot make its terminal raw: {e}"));
        return 1;
    }
    // SAFETY: descriptor 0 is ours for the life of the process; the File
    // takes it over (nothing else reads stdin).
    let stdin = unsafe { File::from_raw_fd(0) };
    let mut reader = PollReader::new(stdin, JOB_WAIT);
    let (up, up_rx) = mpsc::channel::<Up>();
    let writer = thread::Builder::new()
        .name("up".into())
        .spawn(move || write_loop(up_rx));
    let Ok(writer) = writer else {
        note("proxy: cannot start its writer thread");
        return 1;
    };
    let code = match read_frame::<_, Down>(&mut reader) {
        Ok(Down::Job(job)) if job.version == PROXY_VERSION => run(job, reader, &up),
        Ok(Down::Job(job)) => refuse(
            &up,
            format!(
                "channel version {} (this proxy speaks {PROXY_VERSION}): \
                 mclaunch and the proxy are different builds",
                job.version
            ),
        ),
        Ok(other) => refuse(&up, format!("expected the job, got {other:?}")),
        Err(e) => refuse(&up, format!("no job from mclaunch: {e}")),
    };
    drop(up);
    let _ = writer.join();
    code
}

/// `srun --unbuffered` gives the proxy's stdout a pseudo-terminal: make it
/// raw (no newline translation, no flow control), so that the frames pass
/// byte for byte. A pipe or socket (ssh) is left alone.
fn raw_stdout() -> io::Result<()> {
    // SAFETY: isatty, tcgetattr, cfmakeraw and tcsetattr only read and
    // write the termios struct we own, on descriptor 1.
    unsafe {
        if libc::isatty(1) != 1 {
            return Ok(());
        }
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(1, &mut t) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::cfmakeraw(&mut t);
        if libc::tcsetattr(1, libc::TCSANOW, &t) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn refuse(up: &Sender<Up>, reason: String) -> u8 {
    note(&format!("proxy: {reason}"));
    let _ = up.send(Up::Refused { reason });
    1
}

/// Send frames to mclaunch as they come, a heartbeat whenever nothing went
/// for [`HEARTBEAT`]; ends when every sender is gone or stdout breaks.
fn write_loop(rx: mpsc::Receiver<Up>) {
    // SAFETY: descriptor 1 is ours; the proxy writes nothing else to stdout.
    let mut out = io::BufWriter::new(unsafe { File::from_raw_fd(1) });
    loop {
        let frame = match rx.recv_timeout(HEARTBEAT) {
            Ok(f) => f,
            Err(RecvTimeoutError::Timeout) => Up::Heartbeat,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let done = frame == Up::Done;
        // write_frame flushes the BufWriter after each frame.
        if write_frame(&mut out, &frame).is_err() || done {
            return;
        }
    }
}

/// One rank of this host, once started.
struct Rank {
    rank: u32,
    pgid: libc::pid_t,
    reaped: bool,
}

fn run(job: ProxyJob, mut reader: PollReader<File>, up: &Sender<Up>) -> u8 {
    let hostname = mcast::netif::hostname();
    let _ = up.send(Up::Ready {
        hostname,
        pid: std::process::id(),
    });
    let cwd = OsString::from_vec(job.cwd.clone());
    if std::env::set_current_dir(&cwd).is_err() {
        note(&format!(
            "proxy on {}: no directory {} here; the ranks start in {}",
            job.host,
            cwd.to_string_lossy(),
            std::env::current_dir().map_or("?".into(), |d| d.display().to_string())
        ));
    }
    let guardian = match Guardian::start(job.ranks.len()) {
        Ok(g) => g,
        Err(e) => return refuse(up, format!("cannot start the guardian: {e}")),
    };
    let (tx, events) = mpsc::channel();
    let Ok(signals) = SignalWatch::start(tx.clone()) else {
        return refuse(up, "cannot install signal handlers".into());
    };
    let (reports, reports_thread) = match Reports::start(tx.clone()) {
        Ok(r) => r,
        Err(e) => return refuse(up, format!("cannot open the report pipe: {e}")),
    };
    // mclaunch's frames become events; its silence or end of file too.
    reader.timeout = Duration::from_millis(job.silence_ms.max(1));
    {
        let tx = tx.clone();
        let _ = thread::Builder::new()
            .name("down".into())
            .spawn(move || loop {
                match read_frame::<_, Down>(&mut reader) {
                    Ok(d) => {
                        if tx.send(Event::Command(d)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Event::ParentGone(e.to_string()));
                        return;
                    }
                }
            });
    }
    let spec = JobSpec {
        output: OutputMode::Tagged,
        kill_grace: Duration::from_millis(job.kill_grace_ms),
        bind: if job.bind_core {
            crate::bind::BindTo::Core
        } else {
            crate::bind::BindTo::None
        },
        ..JobSpec::new(
            job.ranks.iter().map(|r| r.rank + 1).max().unwrap_or(1),
            OsString::from_vec(job.program.clone()),
            job.args.iter().cloned().map(OsString::from_vec).collect(),
        )
    };
    let mut ranks = Vec::new();
    let mut forwarders = Vec::new();
    let cpus = crate::bind::allowed_cpus();
    for (local, r) in job.ranks.iter().enumerate() {
        let cpu = crate::bind::cpu_for(spec.bind, &cpus, local);
        let env: Vec<(OsString, OsString)> = r
            .env
            .iter()
            .map(|(k, v)| (OsString::from_vec(k.clone()), OsString::from_vec(v.clone())))
            .collect();
        match start_rank(&spec, r.rank, &env, &reports, &tx, &guardian, false, cpu) {
            Ok(running) => {
                let _ = up.send(Up::Started {
                    rank: r.rank,
                    pid: running.pid as u32,
                });
                ranks.push(Rank {
                    rank: r.rank,
                    pgid: running.pid,
                    reaped: false,
                });
                let prefix = if job.tagged {
                    format!("[{}] ", r.rank)
                } else {
                    String::new()
                };
                if let Some(o) = running.stdout {
                    forwarders.push(forward(r.rank, o, false, &prefix, up));
                }
                if let Some(e) = running.stderr {
                    forwarders.push(forward(r.rank, e, true, &prefix, up));
                }
            }
            Err(StartError::Spawn(e)) | Err(StartError::Watch(e)) => {
                let _ = up.send(Up::SpawnFailed {
                    rank: r.rank,
                    errno: e.raw_os_error(),
                    message: e.to_string(),
                });
                break;
            }
        }
    }
    // Until mclaunch says the job is over (or cannot say anything any more).
    let grace = spec.kill_grace;
    let code = loop {
        let Ok(event) = events.recv() else { break 1 };
        match event {
            Event::Exited { rank, status } => {
                mark(&mut ranks, rank);
                let _ = up.send(Up::Exited {
                    rank,
                    status: status.into_raw(),
                });
            }
            Event::WaitFailed { rank, error } => {
                mark(&mut ranks, rank);
                note(&format!(
                    "proxy on {}: cannot wait for rank {rank}: {error}",
                    job.host
                ));
                let _ = up.send(Up::Exited {
                    rank,
                    status: libc::SIGKILL,
                });
            }
            Event::Lost(l) => {
                let _ = up.send(Up::Lost {
                    by: l.by,
                    peer: l.peer,
                    reason: l.reason,
                });
            }
            Event::Command(Down::Signal { rank, signal }) => {
                for r in ranks.iter().filter(|r| rank.is_none_or(|x| x == r.rank)) {
                    // SAFETY: killpg has no memory-safety preconditions.
                    unsafe { libc::killpg(r.pgid, signal) };
                }
            }
            Event::Command(Down::Finish) => break 0,
            Event::Command(_) => {}
            Event::ParentGone(why) => {
                note(&format!(
                    "proxy on {}: lost mclaunch ({why}); stopping its ranks",
                    job.host
                ));
                break 1;
            }
            Event::Signal(s) => {
                note(&format!(
                    "proxy on {}: received {}; stopping its ranks",
                    job.host,
                    crate::status::describe_signal(s)
                ));
                break 1;
            }
            _ => {}
        }
    };
    stop(&mut ranks, &events, up, libc::SIGTERM, grace);
    stop(&mut ranks, &events, up, libc::SIGKILL, KILL_WAIT);
    let end = Instant::now() + KILL_WAIT;
    for f in forwarders {
        while !f.is_finished() && Instant::now() < end {
            thread::sleep(Duration::from_millis(10));
        }
    }
    reports.stop();
    let _ = reports_thread.join();
    drop(signals);
    // A rank that died before its peers opened its shared-memory files
    // (arena and ring segment) left them in /dev/shm: remove them by the
    // ranks' pids, as mclaunch does for the ranks on its own host.
    crate::supervisor::remove_arenas(ranks.iter().map(|r| r.pgid));
    if ranks
        .iter()
        .all(|r| r.reaped && procs::group_is_gone(r.pgid))
    {
        guardian.disarm();
    } else {
        drop(guardian); // kills whatever survived
    }
    let _ = up.send(Up::Done);
    code
}

fn mark(ranks: &mut [Rank], rank: u32) {
    if let Some(r) = ranks.iter_mut().find(|r| r.rank == rank) {
        r.reaped = true;
    }
}

/// Signal every rank group that still has processes, then wait up to
/// `limit` for them all to end, passing exits on to mclaunch.
fn stop(
    ranks: &mut [Rank],
    events: &mpsc::Receiver<Event>,
    up: &Sender<Up>,
    signal: i32,
    limit: Duration,
) {
    let alive = |r: &Rank| !r.reaped || !procs::group_is_gone(r.pgid);
    if !ranks.iter().any(alive) {
        return;
    }
    for r in ranks.iter().filter(|r| alive(r)) {
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe { libc::killpg(r.pgid, signal) };
    }
    let end = Instant::now() + limit;
    while ranks.iter().any(alive) && Instant::now() < end {
        if let Ok(Event::Exited { rank, status }) = events.recv_timeout(Duration::from_millis(20)) {
            mark(ranks, rank);
            let _ = up.send(Up::Exited {
                rank,
                status: status.into_raw(),
            });
        }
    }
}

/// Forward one output stream of `rank` as [`Up::Output`] lines.
fn forward<R: io::Read + Send + 'static>(
    rank: u32,
    src: R,
    stderr: bool,
    prefix: &str,
    up: &Sender<Up>,
) -> thread::JoinHandle<()> {
    let (prefix, up) = (prefix.to_string(), up.clone());
    thread::spawn(move || {
        lines_into(&prefix, src, |line| {
            up.send(Up::Output {
                rank,
                stderr,
                bytes: line.to_vec(),
            })
            .map_err(|_| io::ErrorKind::BrokenPipe.into())
        })
    })
}
