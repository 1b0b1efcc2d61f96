//! mclaunch's side of a remote host: the launch agent (`ssh HOST ...`,
//! `srun --nodelist=HOST ...`)
//! running `mclaunch --proxy` there, a writer thread that sends it
//! [`Down`] frames and heartbeats, and a reader thread that turns its
//! [`Up`] frames into the supervisor's events (exits, departure reports,
//! start failures) and writes the ranks' output to mclaunch's own.
//!
//! The agent is the leader of its own process group, dies with mclaunch
//! (`PR_SET_PDEATHSIG`) and is known to the guardian, so however mclaunch
//! ends, the agent's connection closes and the proxy stops its ranks.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use mcast::bootstrap::{read_frame, write_frame};

use crate::guardian::Guardian;
use crate::proxy::wire::{Down, PollReader, ProxyJob, Up, HEARTBEAT};
use crate::reports::Lost;
use crate::spec::{HostPlan, LaunchAgent};
use crate::supervisor::Event;

/// What a proxy said that the supervisor acts on (exits and reports come
/// as the ordinary [`Event::Exited`] and [`Event::Lost`]).
#[derive(Debug)]
pub(crate) enum RemoteEvent {
    /// A remote rank's process started, with this pid on its host.
    Started { rank: u32, pid: u32 },
    /// A remote rank could not be started.
    SpawnFailed { rank: u32, error: io::Error },
    /// The proxy's channel ended before it said it was done: the host, the
    /// agent or the proxy is gone, and with it every rank still running there.
    Gone { host: usize, reason: String },
    /// The proxy finished: nothing of the job runs on the host any more.
    Done { host: usize },
}

/// One remote host's proxy, seen from mclaunch.
pub(crate) struct RemoteHost {
    /// The host's name, for messages.
    pub name: String,
    /// The ranks it runs.
    pub ranks: Vec<u32>,
    down: Option<Sender<Down>>,
    /// The agent's pid (= its process group).
    agent: libc::pid_t,
    /// The reader has ended (the proxy said done, or the channel broke).
    pub ended: bool,
}

/// Quote `s` for a POSIX shell (the agent hands its command to one).
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The options of the `srun` that starts a proxy: one task on the host,
/// run directly. `--overlap`: the step may share the allocation's CPUs
/// with other steps (Slurm 22.05 keeps a one-task step waiting while
/// another step holds the node's CPUs). No `--cpu-bind=none` (Open MPI
/// passes it so the ranks, the proxy's children, are not bound to its one
/// CPU): srun warns about it on every cluster without CPU binding; where
/// there is binding, `SLURM_CPU_BIND=none` in mclaunch's environment says
/// the same. `--unbuffered`: slurmstepd would otherwise hold the proxy's output
/// until a newline; srun then gives the proxy's stdout a pseudo-terminal,
/// which the proxy makes raw ([`crate::proxy`]). stdin is forwarded to the
/// one task as it is.
const SRUN_OPTIONS: [&str; 7] = [
    "--nodes=1",
    "--ntasks=1",
    "--kill-on-bad-exit=0",
    "--quiet",
    "--overlap",
    "--unbuffered",
    "--mpi=none",
];

/// The agent's command line for `host`: `AGENT... HOST 'exec PROXY
/// --proxy'` for an ssh-like agent, `srun OPTIONS --nodelist=HOST PROXY
/// --proxy` for srun.
pub(crate) fn agent_command(plan: &HostPlan, host: &str) -> Vec<OsString> {
    match &plan.agent {
        LaunchAgent::Shell(words) => {
            let mut argv: Vec<OsString> = words.iter().map(OsString::from).collect();
            argv.push(host.into());
            argv.push(format!("exec {} --proxy", shell_quote(&plan.proxy_program)).into());
            argv
        }
        LaunchAgent::Srun => std::iter::once("srun".to_string())
            .chain(SRUN_OPTIONS.map(String::from))
            .chain([
                format!("--nodelist={host}"),
                plan.proxy_program.clone(),
                "--proxy".into(),
            ])
            .map(OsString::from)
            .collect(),
    }
}

impl RemoteHost {
    /// Start the agent for host `host` of `plan` and send it `job`. Events
    /// go to `tx`; `output_done` gets one `()` when the reader ends (it is
    /// the host's output forwarder). The proxy must say it is ready within
    /// `startup` (an ssh login), and then say something at least every
    /// `silence`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        plan: &HostPlan,
        host: usize,
        job: ProxyJob,
        tx: Sender<Event>,
        output_done: Sender<()>,
        guardian: &Guardian,
        startup: Duration,
        silence: Duration,
    ) -> io::Result<RemoteHost> {
        let name = plan.hosts[host].name.clone();
        let ranks = job.ranks.iter().map(|r| r.rank).collect();
        let argv = agent_command(plan, &name);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0);
        let announcer = guardian.announcer();
        // SAFETY: the closure only calls prctl, getpid and write, which are
        // async-signal-safe.
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
                // Known to the guardian before ssh can start anything.
                if let Some(g) = announcer {
                    g.announce_self()?;
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot run the launch agent {:?}: {e}",
                    plan.agent.to_string()
                ),
            )
        })?;
        let agent = child.id() as libc::pid_t;
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => return Err(io::Error::other("the launch agent has no pipes")),
        };
        let (down, rx) = mpsc::channel::<Down>();
        down.send(Down::Job(job))
            .map_err(|_| io::Error::other("writer gone"))?;
        thread::Builder::new()
            .name(format!("{name}-down"))
            .spawn(move || write_loop(stdin, rx))?;
        let who = name.clone();
        thread::Builder::new()
            .name(format!("{name}-up"))
            .spawn(move || {
                let reader = PollReader::new(stdout, startup);
                let end = read_loop(reader, &who, silence, &tx);
                let event = match end {
                    Ok(()) => {
                        reap(&mut child, Duration::from_secs(5));
                        RemoteEvent::Done { host }
                    }
                    Err(why) => {
                        let status = reap(&mut child, Duration::from_millis(500));
                        let reason = match status {
                            Some(s) if !s.success() => {
                                format!(
                                    "{why}; the launch agent {}",
                                    crate::status::describe_status(s)
                                )
                            }
                            _ => why,
                        };
                        RemoteEvent::Gone { host, reason }
                    }
                };
                let _ = tx.send(Event::Remote(event));
                let _ = output_done.send(());
            })?;
        Ok(RemoteHost {
            name,
            ranks,
            down: Some(down),
            agent,
            ended: false,
        })
    }

    /// Send `signal` to one rank's process group on the host, or to all.
    pub(crate) fn signal(&self, rank: Option<u32>, signal: i32) {
        if let Some(d) = &self.down {
            let _ = d.send(Down::Signal { rank, signal });
        }
    }

    /// Tell the proxy the job is over.
    pub(crate) fn finish(&self) {
        if let Some(d) = &self.down {
            let _ = d.send(Down::Finish);
        }
    }

    /// Close the channel and kill the agent (the proxy then sees end of
    /// file and stops whatever still runs).
    pub(crate) fn close(&mut self) {
        self.down = None;
        if !self.ended {
            // SAFETY: killpg has no memory-safety preconditions; the group
            // is the agent's own and the reader has not reaped it yet.
            unsafe { libc::killpg(self.agent, libc::SIGKILL) };
        }
    }
}

/// Send frames as they come, and a heartbeat whenever nothing went for
/// [`HEARTBEAT`]. Ends when the channel closes (dropping stdin: the proxy
/// reads end of file) or the agent's pipe breaks.
fn write_loop(mut stdin: impl Write, rx: mpsc::Receiver<Down>) {
    loop {
        let frame = match rx.recv_timeout(HEARTBEAT) {
            Ok(f) => f,
            Err(RecvTimeoutError::Timeout) => Down::Heartbeat,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if write_frame(&mut stdin, &frame).is_err() {
            return;
        }
    }
}

/// Read the proxy's frames until it says done (`Ok`) or the channel ends
/// (`Err` with why).
fn read_loop<R: io::Read>(
    mut r: PollReader<R>,
    name: &str,
    silence: Duration,
    tx: &Sender<Event>,
) -> Result<(), String> {
    loop {
        let up: Up = read_frame(&mut r).map_err(|e| match e {
            mcast::Error::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof => {
                "the connection to its proxy closed".to_string()
            }
            mcast::Error::Io(io) if io.kind() == io::ErrorKind::TimedOut => format!(
                "its proxy said nothing for {} (host unreachable?)",
                crate::status::format_secs(r.timeout)
            ),
            other => format!("the connection to its proxy failed: {other}"),
        })?;
        let event = match up {
            Up::Ready { .. } => {
                r.timeout = silence;
                continue;
            }
            Up::Heartbeat => continue,
            Up::Started { rank, pid } => Event::Remote(RemoteEvent::Started { rank, pid }),
            Up::SpawnFailed {
                rank,
                errno,
                message,
            } => {
                let error = match errno {
                    Some(n) => io::Error::from_raw_os_error(n),
                    None => io::Error::other(message),
                };
                let error = io::Error::new(error.kind(), format!("on host {name}: {error}"));
                Event::Remote(RemoteEvent::SpawnFailed { rank, error })
            }
            Up::Output {
                stderr: false,
                bytes,
                ..
            } => {
                let mut out = io::stdout().lock();
                let _ = out.write_all(&bytes).and_then(|_| out.flush());
                continue;
            }
            Up::Output { bytes, .. } => {
                let _ = io::stderr().lock().write_all(&bytes);
                continue;
            }
            Up::Lost { by, peer, reason } => Event::Lost(Lost { by, peer, reason }),
            Up::Exited { rank, status } => Event::Exited {
                rank,
                status: ExitStatus::from_raw(status),
            },
            Up::Refused { reason } => return Err(format!("its proxy refused the job: {reason}")),
            Up::Done => return Ok(()),
        };
        if tx.send(event).is_err() {
            return Ok(());
        }
    }
}

/// Wait up to `limit` for the agent to exit, then kill and reap it.
fn reap(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let end = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < end => thread::sleep(Duration::from_millis(10)),
            _ => {
                // SAFETY: the agent's own group; not yet reaped.
                unsafe { libc::killpg(child.id() as libc::pid_t, libc::SIGKILL) };
                let _ = child.wait();
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    #[test]
    fn quoting_survives_a_shell() {
        assert_eq!(shell_quote("/usr/bin/mclaunch"), "/usr/bin/mclaunch");
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(shell_quote(""), "''");
        for s in ["/a b/it's", "$(rm -rf /)", "a;b", "`x`", "\"q\""] {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }

    #[test]
    fn the_agent_command_puts_the_host_before_the_proxy() {
        let mut plan = HostPlan {
            hosts: vec![],
            rank_host: vec![],
            agent: LaunchAgent::Shell(vec!["ssh".into(), "-F".into(), "cfg".into()]),
            proxy_program: "/opt/mcast dir/mclaunch".into(),
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        assert_eq!(
            agent_command(&plan, "h2"),
            [
                "ssh",
                "-F",
                "cfg",
                "h2",
                "exec '/opt/mcast dir/mclaunch' --proxy"
            ]
            .map(OsString::from)
            .to_vec()
        );
        // srun runs the proxy itself: no shell, so no quoting; one task
        // on the host, unbuffered, sharing the allocation's CPUs.
        plan.agent = LaunchAgent::Srun;
        let argv = agent_command(&plan, "h2");
        let tail = ["--nodelist=h2", "/opt/mcast dir/mclaunch", "--proxy"].map(OsString::from);
        assert_eq!(argv[0], "srun");
        assert!(argv.ends_with(&tail), "{argv:?}");
        for opt in [
            "--nodes=1",
            "--ntasks=1",
            "--unbuffered",
            "--overlap",
            "--mpi=none",
        ] {
            assert!(
                argv.contains(&OsString::from(opt)),
                "{opt} missing: {argv:?}"
            );
        }
    }
}
