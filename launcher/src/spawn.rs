//! Starting one rank's process.
//!
//! Every rank is the leader of its own process group (so teardown can signal
//! everything it started) and gets `PR_SET_PDEATHSIG = SIGKILL`, so it dies with
//! mclaunch even if mclaunch is killed with SIGKILL. The death signal fires when
//! the *thread* that forked exits, so ranks must be spawned from the main thread.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread;

use crate::guardian::{Announcer, Guardian};
use crate::reports::Reports;
use crate::spec::{JobSpec, OutputMode};
use crate::supervisor::Event;

/// The `MCAST_*` and `-x` variables for one rank, in the order they are
/// applied; `identity`: its QUIC bundle (hex) under `--transport quic`.
pub fn rank_env(
    spec: &JobSpec,
    rank: u32,
    rendezvous: &str,
    token: &str,
    fabric_port: Option<&str>,
    identity: Option<&str>,
) -> Vec<(OsString, OsString)> {
    use mcast::config::{
        ENV_FABRIC, ENV_QUIC_IDENTITY, ENV_RANK, ENV_RENDEZVOUS, ENV_SIZE, ENV_TOKEN,
    };
    let mut env = spec.env.clone();
    if let Some(addr) = fabric_port {
        env.retain(|(k, _)| k != ENV_FABRIC);
        env.push((ENV_FABRIC.into(), addr.into()));
    }
    env.push((ENV_RANK.into(), rank.to_string().into()));
    env.push((ENV_SIZE.into(), spec.nranks.to_string().into()));
    env.push((ENV_RENDEZVOUS.into(), rendezvous.into()));
    env.push((ENV_TOKEN.into(), token.into()));
    if let Some(id) = identity {
        env.push((ENV_QUIC_IDENTITY.into(), id.into()));
    }
    env
}

/// The command that runs a rank on this host.
fn command_for(spec: &JobSpec, env: &[(OsString, OsString)]) -> Command {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd
}

/// Rank 0 reads mclaunch's stdin unless it is a terminal (a rank in its own
/// process group reading the terminal would be stopped by SIGTTIN) or
/// `stdin` is false (a proxy's stdin is its channel to mclaunch); every
/// other rank reads /dev/null.
fn stdin_for(rank: u32, stdin: bool) -> Stdio {
    // SAFETY: isatty only inspects a file descriptor.
    let stdin_is_tty = unsafe { libc::isatty(libc::STDIN_FILENO) } == 1;
    if rank == 0 && stdin && !stdin_is_tty {
        Stdio::inherit()
    } else {
        Stdio::null()
    }
}

/// Start `rank`. With [`OutputMode::Tagged`] its stdout and stderr are pipes
/// (taken by the caller from the returned [`Child`]). `report_fd`, if any,
/// is the departure-report pipe's write end: the rank inherits it, named by
/// `MCAST_REPORT_FD` (`mcast::logging`). `stdin`: whether rank 0 may read
/// this process's stdin. `cpu`: the CPU it is bound to (`--bind-to core`,
/// see [`crate::bind`]), if any. `guardian`: the child announces its
/// process group to it before it execs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn spawn_rank(
    spec: &JobSpec,
    rank: u32,
    env: &[(OsString, OsString)],
    report_fd: Option<std::os::fd::RawFd>,
    stdin: bool,
    cpu: Option<usize>,
    guardian: Option<Announcer>,
) -> io::Result<Child> {
    let mut cmd = command_for(spec, env);
    if let Some(fd) = report_fd {
        cmd.env(mcast::logging::ENV_REPORT_FD, fd.to_string());
    }
    cmd.stdin(stdin_for(rank, stdin));
    match spec.output {
        OutputMode::Inherit => {
            cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        }
        OutputMode::Tagged => {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
    }
    cmd.process_group(0);
    // SAFETY: getpid has no preconditions.
    let launcher = unsafe { libc::getpid() };
    let cpus = cpu.map(crate::bind::cpu_set);
    // SAFETY: the closure runs between fork and exec, and only makes
    // async-signal-safe system calls (prctl, getppid, getpid, write, fcntl,
    // sched_setaffinity on a set made before the fork) and builds an
    // io::Error from an errno value, which does not allocate.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // mclaunch may have died before prctl took effect: then the death
            // signal will never come, and this child must not run.
            if libc::getppid() != launcher {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(g) = guardian {
                g.announce_self()?;
            }
            if let Some(fd) = report_fd {
                crate::reports::Reports::inherit_in_child(fd)?;
            }
            if let Some(set) = &cpus {
                crate::bind::bind_self(set)?;
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// A rank started on this host: its pid (= its process group) and, with
/// tagged output, its output pipes for the caller to forward.
pub(crate) struct Running {
    pub pid: libc::pid_t,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

/// Why [`start_rank`] failed.
pub(crate) enum StartError {
    /// The process could not be started.
    Spawn(io::Error),
    /// It started but no thread could wait for it (it was killed and reaped).
    Watch(io::Error),
}

/// Start `rank` on this host (mclaunch, or a host's proxy): spawn it (it
/// tells the guardian its process group itself), and start the waiter
/// thread that sends its exit on `tx`, after the reports it wrote before
/// it ended. `cpu`: as for [`spawn_rank`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_rank(
    spec: &JobSpec,
    rank: u32,
    env: &[(OsString, OsString)],
    reports: &Arc<Reports>,
    tx: &Sender<Event>,
    guardian: &Guardian,
    stdin: bool,
    cpu: Option<usize>,
) -> Result<Running, StartError> {
    let mut child = spawn_rank(
        spec,
        rank,
        env,
        Some(reports.write_fd()),
        stdin,
        cpu,
        guardian.announcer(),
    )
    .map_err(StartError::Spawn)?;
    let pid = child.id() as libc::pid_t;
    let running = Running {
        pid,
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
    };
    let tx = tx.clone();
    let reports = reports.clone();
    let waiter = thread::Builder::new()
        .name(format!("rank{rank}-wait"))
        .spawn(move || {
            let event = match child.wait() {
                Ok(status) => Event::Exited { rank, status },
                Err(error) => Event::WaitFailed { rank, error },
            };
            // Whatever the rank reported before it ended goes first.
            reports.drain();
            let _ = tx.send(event);
        });
    match waiter {
        Ok(_) => Ok(running),
        Err(e) => {
            // The child went down with the closure: kill and reap it here.
            // SAFETY: plain system calls on a child we started and have not reaped.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            Err(StartError::Watch(e))
        }
    }
}
