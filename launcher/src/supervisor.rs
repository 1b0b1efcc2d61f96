//! Running a job: spawn the ranks, watch one event channel, tear everything down.
//!
//! All events arrive on one mpsc channel: rank exits (one waiter thread per
//! rank), the ranks' departure reports (`reports`: rank j declared rank k
//! lost), signals to mclaunch (a signal-hook thread) and the rendezvous's
//! verdict. The main thread spawns the ranks (required by `PR_SET_PDEATHSIG`)
//! and then waits on that channel against the job deadline.
//!
//! Who is blamed: the first failure *in time*, not the first exit reaped
//! (`blame`). A rank declared lost that has not exited `kill_grace` later
//! (hung, stopped) is killed, so the job always ends.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io;
use std::process::ExitStatus;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::{Handle as SignalsHandle, Signals};

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;

use crate::blame::Blame;
use crate::error::LaunchError;
use crate::guardian::Guardian;
use crate::output::{spawn_forwarder, Sink};
use crate::proxy::wire::{Down, ProxyJob, ProxyRank, PROXY_VERSION};
use crate::remote::{RemoteEvent, RemoteHost};
use crate::rendezvous::Rendezvous;
use crate::reports::{Lost, Reports};
use crate::spawn::{rank_env, start_rank, StartError};
use crate::spec::{JobSpec, OnFailure};
use crate::status::{describe_signal, describe_status, ranks_phrase, shell_exit_code};
use crate::{note, procs, token};

/// How long to wait for ranks to disappear after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// Least time a proxy may be silent before its host counts as gone (the
/// ranks' `MCAST_FAILURE_TIMEOUT` if longer): a loaded host's ssh may
/// stall for a moment.
const PROXY_SILENCE: Duration = Duration::from_secs(5);
/// How often teardown re-checks whether a rank's process group is empty
/// (processes other than the rank itself are not our children, so their
/// exits produce no event).
const GROUP_POLL: Duration = Duration::from_millis(20);
/// How long to wait for forwarded output to drain after the ranks are gone.
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// Something the supervisor reacts to.
#[derive(Debug)]
pub(crate) enum Event {
    /// A rank's process ended.
    Exited { rank: u32, status: ExitStatus },
    /// Waiting for a rank's process failed.
    WaitFailed { rank: u32, error: io::Error },
    /// A rank declared a peer lost (it will fail because of that, if at all).
    Lost(Lost),
    /// mclaunch received a signal.
    Signal(i32),
    /// Every rank has received the address table.
    RendezvousComplete,
    /// The rendezvous cannot complete.
    RendezvousFailed(String),
    /// A remote host's proxy said something (mclaunch).
    Remote(RemoteEvent),
    /// mclaunch sent a command (a proxy).
    Command(Down),
    /// The channel to mclaunch ended or went silent (a proxy).
    ParentGone(String),
}

/// How a job ended. Ranks have been stopped by the time [`run`] returns it.
#[derive(Debug)]
pub enum Outcome {
    /// Every rank exited with status 0.
    Success,
    /// `rank` was the first to exit with a non-zero status or by a signal.
    RankFailed {
        /// The failing rank.
        rank: u32,
        /// Its process id (on its host).
        pid: u32,
        /// Its host, when it ran on another one.
        host: Option<String>,
        /// How it ended.
        status: ExitStatus,
        /// With `--on-failure continue`: the ranks that failed after it.
        also_failed: Vec<u32>,
        /// Whether a peer declared it lost before it ended.
        lost: Option<LostBy>,
    },
    /// `rank` could not be started.
    SpawnFailed {
        /// The rank that could not start (earlier ranks had started).
        rank: u32,
        /// The program that was to run.
        program: OsString,
        /// Why it did not start.
        error: io::Error,
    },
    /// The ranks could not all join the rendezvous.
    RendezvousFailed {
        /// Why, naming the ranks concerned.
        reason: String,
    },
    /// A remote host's proxy went away (the host vanished, the launch
    /// agent or the proxy was killed) while ranks ran there.
    HostLost {
        /// The host.
        host: String,
        /// Its ranks that had started and not ended.
        ranks: Vec<u32>,
        /// Its ranks that never started (the agent could not reach the
        /// host, or the proxy went away before starting them).
        unstarted: Vec<u32>,
        /// What happened to the channel.
        reason: String,
    },
    /// `--timeout` expired.
    TimedOut {
        /// The `--timeout` value.
        after: Duration,
        /// Ranks that had not exited when it expired.
        running: Vec<u32>,
    },
    /// mclaunch was asked to stop by a signal.
    Interrupted {
        /// The signal received.
        signal: i32,
        /// Ranks that had not exited when it arrived.
        running: Vec<u32>,
    },
    /// mclaunch itself failed while the job was running.
    Internal {
        /// What went wrong.
        reason: String,
    },
}

impl Outcome {
    /// mclaunch's exit code: 0 on success; the failing rank's exit code or
    /// 128 + its signal; 127 / 126 when the program is not found / not
    /// executable; 124 on `--timeout`; 128 + signal when mclaunch was signalled;
    /// 1 for rendezvous and internal failures.
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::RankFailed { status, .. } => shell_exit_code(*status),
            Outcome::SpawnFailed { error, .. } => match error.kind() {
                io::ErrorKind::NotFound => 127,
                io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            },
            Outcome::RendezvousFailed { .. }
            | Outcome::Internal { .. }
            | Outcome::HostLost { .. } => 1,
            Outcome::TimedOut { .. } => 124,
            Outcome::Interrupted { signal, .. } => u8::try_from(128 + signal).unwrap_or(255),
        }
    }

    /// True when every rank succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Success)
    }

    /// One line for the user, without the `mclaunch: ` prefix; `None` on success.
    pub fn message(&self) -> Option<String> {
        Some(match self {
            Outcome::Success => return None,
            Outcome::RankFailed {
                rank,
                pid,
                host,
                status,
                also_failed,
                lost,
            } => {
                let on = host
                    .as_ref()
                    .map_or(String::new(), |h| format!(" on host {h}"));
                let mut m = format!("rank {rank} (pid {pid}){on} {}", describe_status(*status));
                if let Some(l) = lost {
                    m.push_str(&l.phrase());
                }
                if !also_failed.is_empty() {
                    m.push_str(&format!(
                        "; later, {} also failed",
                        ranks_phrase(also_failed)
                    ));
                }
                m
            }
            Outcome::SpawnFailed {
                rank,
                program,
                error,
            } => format!(
                "cannot start rank {rank} ({}): {error}",
                program.to_string_lossy()
            ),
            Outcome::RendezvousFailed { reason } => format!("rendezvous failed: {reason}"),
            Outcome::HostLost {
                host,
                ranks,
                unstarted,
                reason,
            } => {
                let mut what = Vec::new();
                if !ranks.is_empty() {
                    what.push(format!(
                        "{} running there {} lost",
                        ranks_phrase(ranks),
                        if ranks.len() == 1 { "is" } else { "are" }
                    ));
                }
                if !unstarted.is_empty() {
                    what.push(format!("{} never started there", ranks_phrase(unstarted)));
                }
                format!("lost host {host}: {reason}; {}", what.join("; "))
            }
            Outcome::TimedOut { after, running } => format!(
                "job timed out after {}; {} still running, killed",
                crate::status::format_secs(*after),
                running_phrase(running)
            ),
            Outcome::Interrupted { signal, running } => format!(
                "received {}; stopped the job ({} still running)",
                describe_signal(*signal),
                running_phrase(running)
            ),
            Outcome::Internal { reason } => reason.clone(),
        })
    }
}

/// Which peer declared a failed rank lost, and whether mclaunch had to kill it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostBy {
    /// The first rank to report it lost.
    pub by: u32,
    /// Why, as that rank saw it.
    pub reason: String,
    /// mclaunch killed it because it had not exited within the grace period.
    pub killed_after: Option<Duration>,
}

impl LostBy {
    fn phrase(&self) -> String {
        let mut m = format!("; rank {} had reported it lost ({})", self.by, self.reason);
        if let Some(g) = self.killed_after {
            m.push_str(&format!(
                " and mclaunch killed it {} later",
                crate::status::format_secs(g)
            ));
        }
        m
    }
}

fn running_phrase(running: &[u32]) -> String {
    match running.len() {
        0 => "no ranks were".into(),
        1 => format!("{} was", ranks_phrase(running)),
        _ => format!("{} were", ranks_phrase(running)),
    }
}

/// Run a job to its end and stop everything it started.
///
/// Must be called from the main thread: ranks are spawned by the calling
/// thread and receive SIGKILL when it exits. Installs handlers for SIGINT,
/// SIGTERM and SIGHUP for the duration of the job (they stop the job).
pub fn run(spec: &JobSpec) -> Result<Outcome, LaunchError> {
    if spec.nranks == 0 {
        return Err(LaunchError::Usage("a job needs at least one rank".into()));
    }
    // First, while mclaunch has few descriptors and threads.
    let guardian = Guardian::start(spec.nranks as usize)
        .map_err(|e| LaunchError::setup("cannot start the guardian process", e))?;
    let local = match spec.placement.hosts() {
        None => spec.nranks,
        Some(plan) => (0..spec.nranks)
            .filter(|&r| plan.remote_host(r).is_none())
            .count() as u32,
    };
    warn_oversubscribed(local);
    let token = token::generate()
        .map_err(|e| LaunchError::setup("cannot read /dev/urandom for the job token", e))?;
    let (identities, rendezvous_tls) = quic_identities(spec, &token)?;
    let (tx, events) = mpsc::channel();
    let signals = SignalWatch::start(tx.clone())
        .map_err(|e| LaunchError::setup("cannot install signal handlers", e))?;
    let rendezvous = Rendezvous::start(
        spec.placement.rendezvous_bind(),
        spec.nranks,
        token.clone(),
        spec.rendezvous_timeout,
        tx.clone(),
        rendezvous_tls.as_ref(),
    )
    .map_err(|e| LaunchError::setup("cannot start the rendezvous server", e))?;
    drop(rendezvous_tls);

    let fabric = match &spec.fabric {
        None => None,
        Some(f) => Some(
            mcast_emulator::socket_fabric::FabricServer::start(
                &f.spec,
                f.cost.clone(),
                token.clone(),
                spec.nranks as usize,
                failure_timeout(spec),
            )
            .map_err(|e| {
                LaunchError::setup(
                    format!("cannot start the fabric `{}`", f.spec),
                    io::Error::other(e.to_string()),
                )
            })?,
        ),
    };
    let (reports, reports_thread) = Reports::start(tx.clone())
        .map_err(|e| LaunchError::setup("cannot open the report pipe", e))?;
    let (output_done, output_events) = mpsc::channel();
    let mut job = Job {
        spec,
        events,
        tx,
        ranks: Vec::new(),
        rendezvous,
        output_done,
        output_events,
        forwarders: 0,
        failed: None,
        blame: Blame::default(),
        reports,
        guardian: &guardian,
        fabric_ports: fabric
            .as_ref()
            .map(|f| f.host_addrs().to_vec())
            .unwrap_or_default(),
        remotes: BTreeMap::new(),
        identities,
    };
    let outcome = match job.launch(&token) {
        Some(failed) => failed,
        None => job.supervise(),
    };
    job.teardown();
    job.finish_remotes();
    let quiet = job.quiet();
    job.drain_output();
    remove_arenas(
        job.ranks
            .iter()
            .filter(|r| r.host.is_none())
            .filter_map(|r| r.pgid),
    );
    job.reports.stop();
    drop(job);
    let _ = reports_thread.join();
    if quiet {
        guardian.disarm();
    } else {
        drop(guardian); // kills whatever survived teardown
    }
    if let Some(f) = fabric {
        if spec.fabric.as_ref().is_some_and(|f| f.stats) {
            match serde_json::to_string(&f.stats()) {
                Ok(j) => eprintln!("mclaunch: fabric stats {j}"),
                Err(e) => eprintln!("mclaunch: fabric stats: {e}"),
            }
        }
        f.shutdown();
    }
    drop(signals);
    Ok(outcome)
}

/// One line on stderr when the ranks on this machine outnumber its cores:
/// they then take turns on them, and timings (and failure timeouts) stretch.
fn warn_oversubscribed(nranks: u32) {
    if let Ok(cores) = thread::available_parallelism() {
        if nranks as usize > cores.get() {
            note(&format!(
                "warning: {nranks} ranks on {} cores: the ranks are oversubscribed \
                 (they take turns on the cores; expect slower, noisier timings)",
                cores.get()
            ));
        }
    }
}

/// The ranks' `MCAST_FAILURE_TIMEOUT` (from `-x`, else mclaunch's own
/// environment, else the runtime's default): the fabric declares a silent
/// rank lost within it, as a peer would.
fn failure_timeout(spec: &JobSpec) -> std::time::Duration {
    use mcast::config::{parse_failure_timeout, DEFAULT_FAILURE_TIMEOUT, ENV_FAILURE_TIMEOUT};
    let v = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == ENV_FAILURE_TIMEOUT)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os(ENV_FAILURE_TIMEOUT));
    // A bad value is the ranks' error to report; the fabric takes the default.
    v.and_then(|v| parse_failure_timeout(v.to_str()?).ok())
        .unwrap_or(DEFAULT_FAILURE_TIMEOUT)
}

/// Remove the shared-memory arenas (`/dev/shm/mcast-PID-...`, see
/// `mcast::arena_prefix`) the ranks left behind. A rank unlinks its own as
/// soon as its peers have it open, so only a rank that died during start-up
/// leaves one.
pub(crate) fn remove_arenas(pids: impl Iterator<Item = libc::pid_t>) {
    let prefixes: Vec<String> = pids.map(|p| mcast::arena_prefix(p as u32)).collect();
    let Ok(dir) = std::fs::read_dir(mcast::ARENA_DIR) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if prefixes.iter().any(|p| name.starts_with(p.as_str())) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A rank of the job.
struct RankProc {
    /// Its process group id (= its pid, on its host), once known.
    pgid: Option<libc::pid_t>,
    /// The remote host it runs on (through that host's proxy), if any.
    host: Option<usize>,
    /// Whether its exit has been collected (or it never started).
    reaped: bool,
}

struct Job<'a> {
    spec: &'a JobSpec,
    events: Receiver<Event>,
    /// Kept so that `events` never disconnects.
    tx: Sender<Event>,
    ranks: Vec<RankProc>,
    rendezvous: Rendezvous,
    output_done: Sender<()>,
    output_events: Receiver<()>,
    forwarders: usize,
    /// With `--on-failure continue`: the failure noted so far (the one
    /// reported unless an earlier one in time turns up).
    failed: Option<Outcome>,
    /// Who failed first in time.
    blame: Blame,
    reports: Arc<Reports>,
    guardian: &'a Guardian,
    /// `--fabric`: host port i's address for rank i.
    fabric_ports: Vec<String>,
    /// The proxies of the remote hosts, by host index.
    remotes: BTreeMap<usize, RemoteHost>,
    /// `--transport quic`: every rank's bundle (hex), by rank.
    identities: Vec<String>,
}

impl Job<'_> {
    /// Start every rank: the remote hosts' proxies first (their agents
    /// take a while to log in), then the local ranks. Returns the outcome
    /// if the job ends before all have started (one cannot be started, one
    /// fails, a signal arrives).
    fn launch(&mut self, token: &str) -> Option<Outcome> {
        let rendezvous = self.rendezvous.addr().to_string();
        let n = self.spec.nranks;
        let plan = self.spec.placement.hosts();
        for rank in 0..n {
            self.blame.started();
            self.ranks.push(RankProc {
                pgid: None,
                host: plan.and_then(|p| p.remote_host(rank)),
                reaped: true,
            });
        }
        if let Some(plan) = plan {
            if let Some(outcome) = self.launch_remote(plan, &rendezvous, token) {
                return Some(outcome);
            }
        }
        let cpus = crate::bind::allowed_cpus();
        let mut local = 0;
        for rank in 0..n {
            if self.ranks[rank as usize].host.is_some() {
                continue;
            }
            let cpu = crate::bind::cpu_for(self.spec.bind, &cpus, local);
            local += 1;
            let port = self.fabric_ports.get(rank as usize).map(String::as_str);
            let id = self.identities.get(rank as usize).map(String::as_str);
            let env = rank_env(self.spec, rank, &rendezvous, token, port, id);
            let running = start_rank(
                self.spec,
                rank,
                &env,
                &self.reports,
                &self.tx,
                self.guardian,
                true,
                cpu,
            );
            let running = match running {
                Ok(r) => r,
                Err(StartError::Spawn(error)) => {
                    return Some(Outcome::SpawnFailed {
                        rank,
                        program: self.spec.program.clone(),
                        error,
                    })
                }
                Err(StartError::Watch(e)) => {
                    return Some(Outcome::Internal {
                        reason: format!("cannot watch rank {rank}: {e}"),
                    })
                }
            };
            self.ranks[rank as usize].pgid = Some(running.pid);
            self.ranks[rank as usize].reaped = false;
            if let Some(out) = running.stdout {
                self.forward(rank, out, Sink::Stdout);
            }
            if let Some(err) = running.stderr {
                self.forward(rank, err, Sink::Stderr);
            }
            // Stop launching if the job has already ended (a rank failed,
            // mclaunch was signalled).
            while let Ok(event) = self.events.try_recv() {
                if let Some(outcome) = self.on_event(event) {
                    return Some(outcome);
                }
            }
        }
        None
    }

    /// Rank `rank`'s QUIC bundle (hex), if the job runs over QUIC.
    fn id(&self, rank: u32) -> Option<&str> {
        self.identities.get(rank as usize).map(String::as_str)
    }

    /// Start the proxy of every remote host of `plan`, each with its ranks.
    fn launch_remote(
        &mut self,
        plan: &crate::spec::HostPlan,
        rendezvous: &str,
        token: &str,
    ) -> Option<Outcome> {
        let cwd = std::env::current_dir().unwrap_or_default();
        let silence = failure_timeout(self.spec).max(PROXY_SILENCE);
        for (h, host) in plan.hosts.iter().enumerate() {
            let ranks: Vec<u32> = (0..self.spec.nranks)
                .filter(|&r| plan.remote_host(r) == Some(h))
                .collect();
            if host.local || ranks.is_empty() {
                continue;
            }
            let raw = |s: &OsString| s.as_bytes().to_vec();
            let job = ProxyJob {
                version: PROXY_VERSION,
                host: host.name.clone(),
                program: raw(&self.spec.program),
                args: self.spec.args.iter().map(raw).collect(),
                cwd: cwd.as_os_str().as_bytes().to_vec(),
                ranks: ranks
                    .iter()
                    .map(|&rank| ProxyRank {
                        rank,
                        env: rank_env(self.spec, rank, rendezvous, token, None, self.id(rank))
                            .iter()
                            .map(|(k, v)| (raw(k), raw(v)))
                            .collect(),
                    })
                    .collect(),
                tagged: self.spec.output == crate::spec::OutputMode::Tagged,
                kill_grace_ms: self.spec.kill_grace.as_millis() as u64,
                silence_ms: silence.as_millis() as u64,
                bind_core: self.spec.bind == crate::bind::BindTo::Core,
            };
            let started = RemoteHost::start(
                plan,
                h,
                job,
                self.tx.clone(),
                self.output_done.clone(),
                self.guardian,
                self.spec.rendezvous_timeout,
                silence,
            );
            match started {
                Ok(remote) => {
                    self.forwarders += 1;
                    for &r in &remote.ranks {
                        self.ranks[r as usize].reaped = false;
                    }
                    self.remotes.insert(h, remote);
                }
                Err(error) => {
                    return Some(Outcome::SpawnFailed {
                        rank: ranks[0],
                        program: plan.agent.program().into(),
                        error,
                    })
                }
            }
        }
        None
    }

    /// Send `signal` to a rank's process group, wherever it runs.
    fn signal_rank(&self, rank: u32, signal: libc::c_int) {
        let r = &self.ranks[rank as usize];
        match (r.host, r.pgid) {
            (Some(h), _) => {
                if let Some(remote) = self.remotes.get(&h) {
                    remote.signal(Some(rank), signal);
                }
            }
            // SAFETY: killpg has no memory-safety preconditions.
            (None, Some(pgid)) => unsafe {
                libc::killpg(pgid, signal);
            },
            (None, None) => {}
        }
    }

    /// Once the ranks are stopped: tell every proxy the job is over, wait
    /// (bounded) for each to say it is done, and close the channels.
    fn finish_remotes(&mut self) {
        if self.remotes.is_empty() {
            return;
        }
        for r in self.remotes.values().filter(|r| !r.ended) {
            r.finish();
        }
        let end = Instant::now() + self.spec.kill_grace + KILL_WAIT + KILL_WAIT;
        while self.remotes.values().any(|r| !r.ended) {
            let left = end.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Remote(e)) => {
                    self.on_remote(e);
                }
                Ok(Event::Exited { rank, .. }) => self.mark_reaped(rank),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        for (_, r) in self.remotes.iter_mut() {
            if !r.ended {
                note(&format!(
                    "the proxy on host {} did not finish; closing its connection",
                    r.name
                ));
            }
            r.close();
        }
    }

    /// Book what a proxy said; `Some` when it ends the job.
    fn on_remote(&mut self, event: RemoteEvent) -> Option<Outcome> {
        match event {
            RemoteEvent::Started { rank, pid } => {
                if let Some(r) = self.ranks.get_mut(rank as usize) {
                    r.pgid = Some(pid as libc::pid_t);
                }
                None
            }
            RemoteEvent::SpawnFailed { rank, error } => {
                let error = not_found_hint(error, &self.spec.program);
                self.mark_reaped(rank);
                // The proxy starts its host's ranks in order and stops at
                // the first that fails: the ones it has not reported started
                // never will be, so nothing of theirs is left to wait for
                // (before, teardown waited its grace and its SIGKILL bound
                // for them and then said they survived SIGKILL).
                if let Some(host) = self.ranks.get(rank as usize).and_then(|r| r.host) {
                    for r in self.ranks.iter_mut() {
                        if r.host == Some(host) && r.pgid.is_none() {
                            r.reaped = true;
                        }
                    }
                }
                Some(Outcome::SpawnFailed {
                    rank,
                    program: self.spec.program.clone(),
                    error,
                })
            }
            RemoteEvent::Done { host } | RemoteEvent::Gone { host, .. } => {
                let gone = match event {
                    RemoteEvent::Gone { reason, .. } => Some(reason),
                    _ => None,
                };
                let remote = self.remotes.get_mut(&host)?;
                remote.ended = true;
                let name = remote.name.clone();
                let lost: Vec<u32> = remote
                    .ranks
                    .iter()
                    .copied()
                    .filter(|&r| !self.ranks[r as usize].reaped)
                    .collect();
                for &r in &lost {
                    self.mark_reaped(r);
                }
                let (ranks, unstarted): (Vec<u32>, Vec<u32>) = lost
                    .iter()
                    .partition(|&&r| self.ranks[r as usize].pgid.is_some());
                match gone {
                    Some(reason) if !lost.is_empty() => Some(Outcome::HostLost {
                        host: name,
                        ranks,
                        unstarted,
                        reason,
                    }),
                    _ => None,
                }
            }
        }
    }

    fn forward<R: io::Read + Send + 'static>(&mut self, rank: u32, src: R, sink: Sink) {
        match spawn_forwarder(rank, src, sink, self.output_done.clone()) {
            Ok(_) => self.forwarders += 1,
            Err(e) => note(&format!("cannot forward the output of rank {rank}: {e}")),
        }
    }

    /// The remote host a rank ran on, by name.
    fn host_of(&self, rank: u32) -> Option<String> {
        let h = self.ranks.get(rank as usize)?.host?;
        self.remotes.get(&h).map(|r| r.name.clone())
    }

    fn running(&self) -> Vec<u32> {
        (0u32..)
            .zip(&self.ranks)
            .filter(|(_, r)| !r.reaped)
            .map(|(rank, _)| rank)
            .collect()
    }

    fn mark_reaped(&mut self, rank: u32) {
        if let Some(r) = self.ranks.get_mut(rank as usize) {
            r.reaped = true;
        }
    }

    /// Wait for the job to end.
    fn supervise(&mut self) -> Outcome {
        let started = Instant::now();
        let deadline = self.spec.timeout.map(|t| (t, started + t));
        loop {
            if self.ranks.iter().all(|r| r.reaped) {
                return self.final_outcome();
            }
            // Wake for the job deadline and for the next rank to kill.
            let kill_at = self.next_kill();
            let wake = match (deadline.map(|(_, at)| at), kill_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let event = match wake {
                None => self
                    .events
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
                Some(at) => self
                    .events
                    .recv_timeout(at.saturating_duration_since(Instant::now())),
            };
            let event = match event {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => {
                    if deadline.is_some_and(|(_, at)| Instant::now() >= at) {
                        return Outcome::TimedOut {
                            after: deadline.map(|(t, _)| t).unwrap_or_default(),
                            running: self.running(),
                        };
                    }
                    self.kill_declared();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Outcome::Internal {
                        reason: "lost track of the ranks".into(),
                    }
                }
            };
            if let Some(outcome) = self.on_event(event) {
                return outcome;
            }
        }
    }

    /// When the next rank declared lost and still running is to be killed.
    fn next_kill(&self) -> Option<Instant> {
        self.blame
            .to_kill(self.spec.kill_grace)
            .map(|(_, at)| at)
            .min()
    }

    /// Kill every rank declared lost by a peer at least `kill_grace` ago
    /// that is still running (stopped, hung): it can no longer take part.
    fn kill_declared(&mut self) {
        let grace = self.spec.kill_grace;
        let now = Instant::now();
        let due: Vec<u32> = self
            .blame
            .to_kill(grace)
            .filter(|(_, at)| *at <= now)
            .map(|(rank, _)| rank)
            .collect();
        for rank in due {
            let pgid = self.ranks[rank as usize].pgid.unwrap_or(0);
            let by = self
                .blame
                .entry(rank)
                .and_then(|e| e.declared.as_ref())
                .map_or(0, |(l, _)| l.by);
            let on = self
                .host_of(rank)
                .map_or(String::new(), |h| format!(" on host {h}"));
            note(&format!(
                "rank {rank} (pid {pgid}){on} was reported lost by rank {by} {} ago and is \
                 still running: killing it",
                crate::status::format_secs(grace)
            ));
            self.signal_rank(rank, libc::SIGKILL);
            self.blame.killed(rank, grace);
        }
    }

    /// The outcome for failed rank `rank`.
    fn rank_failed(&self, rank: u32, also_failed: Vec<u32>) -> Outcome {
        let e = self.blame.entry(rank);
        Outcome::RankFailed {
            rank,
            pid: self
                .ranks
                .get(rank as usize)
                .and_then(|r| r.pgid)
                .map_or(0, |p| p as u32),
            host: self.host_of(rank),
            // Only called for ranks that have ended.
            status: e.and_then(|e| e.status).unwrap_or_default(),
            also_failed,
            lost: e.and_then(|e| {
                e.declared.as_ref().map(|(l, _)| LostBy {
                    by: l.by,
                    reason: l.reason.clone(),
                    killed_after: e.killed_after,
                })
            }),
        }
    }

    /// Every rank has ended: the first failure in time, the others after it.
    fn final_outcome(&self) -> Outcome {
        match self.blame.failures().split_first() {
            None => Outcome::Success,
            Some((&first, rest)) => self.rank_failed(first, rest.to_vec()),
        }
    }

    /// With `--on-failure continue`: say once, when it is known, which rank
    /// failed first.
    fn note_first_failure(&mut self) {
        if self.failed.is_some() || self.running().is_empty() {
            return;
        }
        if let Some(rank) = self.blame.first_failure() {
            let outcome = self.rank_failed(rank, Vec::new());
            if let Some(m) = outcome.message() {
                note(&format!(
                    "{m}; the other ranks run on (--on-failure continue)"
                ));
            }
            self.failed = Some(outcome);
        }
    }

    /// React to an event while the job runs; `Some` when it ends the job.
    fn on_event(&mut self, event: Event) -> Option<Outcome> {
        match event {
            Event::Exited { rank, status } => {
                self.mark_reaped(rank);
                self.blame.exited(rank, status);
                // A rank that ends before the rendezvous completes makes it
                // fail at once, naming the rank.
                self.rendezvous.rank_exited(rank, describe_status(status));
                self.verdict()
            }
            Event::Lost(lost) => {
                self.blame.lost(lost, Instant::now());
                self.verdict()
            }
            Event::WaitFailed { rank, error } => {
                self.mark_reaped(rank);
                Some(Outcome::Internal {
                    reason: format!("cannot wait for rank {rank}: {error}"),
                })
            }
            Event::Signal(signal) => Some(Outcome::Interrupted {
                signal,
                running: self.running(),
            }),
            Event::RendezvousComplete => None,
            Event::RendezvousFailed(reason) => Some(Outcome::RendezvousFailed { reason }),
            Event::Remote(e) => self.on_remote(e),
            Event::Command(_) | Event::ParentGone(_) => None,
        }
    }

    /// After a rank ended or was declared lost: `Some` when the job is to
    /// stop now (`--on-failure stop` and the first failure is known).
    fn verdict(&mut self) -> Option<Outcome> {
        match self.spec.on_failure {
            OnFailure::Stop => self
                .blame
                .first_failure()
                .map(|rank| self.rank_failed(rank, Vec::new())),
            OnFailure::Continue => {
                self.note_first_failure();
                None
            }
        }
    }

    /// Ranks whose process is still running or whose process group still holds
    /// live processes.
    fn lingering(&self) -> Vec<u32> {
        let mut live: Option<HashSet<libc::pid_t>> = None;
        (0u32..)
            .zip(&self.ranks)
            .filter(|(_, r)| {
                if !r.reaped {
                    return true;
                }
                // A remote rank's group is its proxy's to watch.
                let Some(pgid) = r.pgid.filter(|_| r.host.is_none()) else {
                    return false;
                };
                if procs::group_is_gone(pgid) {
                    return false;
                }
                // Members remain, possibly only zombies: ask /proc (once).
                let live = live.get_or_insert_with(|| {
                    procs::live_groups()
                        .unwrap_or_else(|_| self.ranks.iter().filter_map(|r| r.pgid).collect())
                });
                live.contains(&pgid)
            })
            .map(|(rank, _)| rank)
            .collect()
    }

    /// True when every rank has been reaped and its process group has no live process.
    fn quiet(&self) -> bool {
        self.lingering().is_empty()
    }

    fn signal_groups(&self, signal: libc::c_int) {
        for rank in self.lingering() {
            self.signal_rank(rank, signal);
        }
    }

    /// Stop every process the ranks started: SIGTERM to each rank's process
    /// group, SIGKILL after the grace period (at once on a second signal to
    /// mclaunch), each followed by a bounded wait.
    fn teardown(&mut self) {
        if self.quiet() {
            return;
        }
        self.signal_groups(libc::SIGTERM);
        if self.wait_quiet(self.spec.kill_grace) {
            return;
        }
        self.signal_groups(libc::SIGKILL);
        if !self.wait_quiet(KILL_WAIT) {
            let left = self.lingering();
            note(&format!(
                "processes of {} survived SIGKILL for {}",
                ranks_phrase(&left),
                crate::status::format_secs(KILL_WAIT)
            ));
        }
    }

    /// Wait up to `limit` for [`Job::quiet`]; false if it did not happen, or if
    /// mclaunch was signalled again (meaning: stop waiting).
    fn wait_quiet(&mut self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        loop {
            if self.quiet() {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            match self.events.recv_timeout((end - now).min(GROUP_POLL)) {
                Ok(Event::Exited { rank, .. }) | Ok(Event::WaitFailed { rank, .. }) => {
                    self.mark_reaped(rank)
                }
                Ok(Event::Remote(e)) => {
                    self.on_remote(e);
                }
                Ok(Event::Signal(_)) => return false,
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
    }

    /// Wait (bounded) for the output forwarders to reach end of file.
    fn drain_output(&mut self) {
        let end = Instant::now() + OUTPUT_DRAIN;
        while self.forwarders > 0 {
            let left = end.saturating_duration_since(Instant::now());
            if self.output_events.recv_timeout(left).is_err() {
                note("some rank output was not forwarded: its pipe is still open");
                return;
            }
            self.forwarders -= 1;
        }
    }
}

/// Forwards SIGINT, SIGTERM and SIGHUP to the event channel while alive.
pub(crate) struct SignalWatch {
    handle: SignalsHandle,
    thread: Option<thread::JoinHandle<()>>,
}

impl SignalWatch {
    pub(crate) fn start(tx: Sender<Event>) -> io::Result<SignalWatch> {
        let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        let handle = signals.handle();
        let thread = thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    if tx.send(Event::Signal(signal)).is_err() {
                        return;
                    }
                }
            })?;
        Ok(SignalWatch {
            handle,
            thread: Some(thread),
        })
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn exit_codes_and_messages() {
        let failed = Outcome::RankFailed {
            rank: 3,
            pid: 42,
            host: None,
            status: ExitStatus::from_raw(7 << 8),
            also_failed: vec![],
            lost: None,
        };
        assert_eq!(failed.exit_code(), 7);
        assert_eq!(
            failed.message().unwrap(),
            "rank 3 (pid 42) exited with status 7"
        );
        let later = Outcome::RankFailed {
            rank: 3,
            pid: 42,
            host: None,
            status: ExitStatus::from_raw(7 << 8),
            also_failed: vec![1, 5],
            lost: None,
        };
        assert!(later.message().unwrap().ends_with("also failed"));
        let killed = Outcome::RankFailed {
            rank: 2,
            pid: 43,
            host: None,
            status: ExitStatus::from_raw(libc::SIGKILL),
            also_failed: vec![],
            lost: None,
        };
        assert_eq!(killed.exit_code(), 137);
        assert_eq!(
            killed.message().unwrap(),
            "rank 2 (pid 43) was killed by signal 9 (SIGKILL)"
        );
        let hung = Outcome::RankFailed {
            rank: 2,
            pid: 43,
            host: None,
            status: ExitStatus::from_raw(libc::SIGKILL),
            also_failed: vec![],
            lost: Some(LostBy {
                by: 0,
                reason: "silent".into(),
                killed_after: Some(Duration::from_secs(2)),
            }),
        };
        assert_eq!(hung.exit_code(), 137);
        assert_eq!(
            hung.message().unwrap(),
            "rank 2 (pid 43) was killed by signal 9 (SIGKILL); rank 0 had reported it \
             lost (silent) and mclaunch killed it 2 s later"
        );
        assert_eq!(Outcome::Success.exit_code(), 0);
        assert!(Outcome::Success.message().is_none());
        let timed_out = Outcome::TimedOut {
            after: Duration::from_secs(1),
            running: vec![0, 1],
        };
        assert_eq!(timed_out.exit_code(), 124);
        assert!(timed_out
            .message()
            .unwrap()
            .contains("ranks 0, 1 were still running"));
        let int = Outcome::Interrupted {
            signal: libc::SIGINT,
            running: vec![],
        };
        assert_eq!(int.exit_code(), 130);
        let missing = Outcome::SpawnFailed {
            rank: 0,
            program: "nope".into(),
            error: io::Error::from(io::ErrorKind::NotFound),
        };
        assert_eq!(missing.exit_code(), 127);
    }
}

#[cfg(test)]
mod arena_tests {
    use super::remove_arenas;

    #[test]
    fn leftover_arenas_of_the_job_are_removed_and_no_others() {
        // Pids far above pid_max, so no real process owns these names.
        let ours = "/dev/shm/mcast-2000000001-0-abc";
        let other = "/dev/shm/mcast-2000000002-0-abc";
        if std::fs::write(ours, b"x").is_err() {
            return; // no /dev/shm on this machine: nothing to clean either
        }
        std::fs::write(other, b"x").unwrap();
        remove_arenas([2000000001].into_iter());
        assert!(!std::path::Path::new(ours).exists());
        assert!(std::path::Path::new(other).exists());
        std::fs::remove_file(other).unwrap();
    }
}

/// How long a job's certificates are valid when it has no `--timeout`.
const QUIC_CERT_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// Under `--transport quic` or `quic-all`: a certificate authority for this
/// job (its id is the one the rendezvous derives from `token`), every
/// rank's bundle, hex-encoded, for its environment (set by mclaunch or the
/// host's proxy, which gets it over the proxy channel; never on a command
/// line), and the rendezvous's own identity (kept in memory: the
/// rendezvous runs over TLS). The CA's key is dropped here: nothing is
/// issued later.
type QuicIdentities = (Vec<String>, Option<mcast::quic::RendezvousIdentity>);
fn quic_identities(spec: &JobSpec, token: &str) -> Result<QuicIdentities, LaunchError> {
    if !spec.quic() {
        return Ok((Vec::new(), None));
    }
    let fail = |e: mcast::quic::IdentityError| {
        LaunchError::setup("cannot make the job's QUIC identities", io::Error::other(e))
    };
    // The job's own deadline plus a margin (rendezvous, teardown).
    let lifetime = spec.timeout.map_or(QUIC_CERT_LIFETIME, |t| {
        t + spec.rendezvous_timeout + Duration::from_secs(3600)
    });
    let job = mcast::bootstrap::job_id_from_token(token);
    let ca = mcast::quic::JobCa::new(job, mcast::quic::Validity::starting_now(lifetime))
        .map_err(fail)?;
    let ranks = (0..spec.nranks)
        .map(|r| Ok(token::to_hex(&ca.issue(r).map_err(fail)?.to_bytes())))
        .collect::<Result<_, LaunchError>>()?;
    Ok((ranks, Some(ca.issue_rendezvous().map_err(fail)?)))
}

/// A remote host found no `program`: if it is a bare name that this
/// machine's `PATH` resolves, say where (the hosts are assumed to share
/// the same paths, as Open MPI assumes; they do not share this `PATH`).
fn not_found_hint(error: io::Error, program: &std::ffi::OsStr) -> io::Error {
    if error.kind() != io::ErrorKind::NotFound || program.as_bytes().contains(&b'/') {
        return error;
    }
    let Some(path) = std::env::var_os("PATH") else {
        return error;
    };
    let found = std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file() && p.is_absolute());
    match found {
        Some(p) => io::Error::new(
            error.kind(),
            format!(
                "{error} (here `{}` is {}: give that path, or put it on the hosts' PATH)",
                program.to_string_lossy(),
                p.display()
            ),
        ),
        None => error,
    }
}
