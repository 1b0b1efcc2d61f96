//! `--hostfile` / `--host` through proxies, with a stand-in launch agent:
//! `fake-agent HOST CMD` runs CMD on this machine in a new session (as
//! sshd would run it, apart from mclaunch's process groups) with
//! `FAKE_HOST=HOST`. The hosts are TEST-NET addresses (203.0.113.x), which
//! are not this machine, so every rank goes through a proxy; `--if
//! 127.0.0.0/8` keeps the rendezvous and the ranks on loopback. The real
//! thing (sshd and Slurm in network namespaces) is `tests/cluster.rs` at
//! the workspace root.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;

/// How long the processes of remote hosts may take to go once mclaunch or
/// a proxy is killed: the proxy's silence bound (5 s), the ranks' grace
/// (2 s), the SIGKILL wait (2 s), and slack for a loaded machine.
const REMOTE_GONE: Duration = Duration::from_secs(30);

/// Write an executable shell script `body` at `path`.
fn script(path: &Path, body: &str) {
    fs::write(path, body).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Write the fake agent and a hostfile of two 2-slot hosts into `dir`.
fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    let agent = dir.join("fake-agent");
    script(
        &agent,
        &format!(
            "#!/bin/sh\nFAKE_HOST=$1; FAKE_JOB='{}'; export FAKE_HOST FAKE_JOB; shift\n\
             exec setsid -w sh -c \"$1\"\n",
            dir.display()
        ),
    );
    let hostfile = dir.join("hostfile");
    fs::write(
        &hostfile,
        "# two hosts\n203.0.113.1 slots=2\n203.0.113.2:2   # Hydra style\n",
    )
    .unwrap();
    (agent, hostfile)
}

/// mclaunch over `hostfile`'s hosts through `agent`, on loopback.
fn job_via(hostfile: &Path, agent: &Path) -> std::process::Command {
    let mut cmd = mclaunch();
    cmd.arg("--hostfile")
        .arg(hostfile)
        .args(["--if", "127.0.0.0/8", "--launch-agent"])
        .arg(agent);
    cmd
}

fn hosts_job(dir: &Path) -> std::process::Command {
    let (agent, hostfile) = setup(dir);
    let mut cmd = job_via(&hostfile, &agent);
    cmd.arg("-x").arg(format!("D={}", dir.display()));
    cmd
}

#[test]
fn ranks_run_on_their_hosts_through_proxies() {
    let dir = scratch("hosts-run");
    let out = run(hosts_job(&dir).args([
        "--tag-output",
        "sh",
        "-c",
        "echo \"rank $MCAST_RANK of $MCAST_SIZE on $FAKE_HOST\"; echo err >&2",
    ]));
    assert!(out.status.success(), "{out:?}");
    for (r, h) in [(0, 1), (1, 1), (2, 2), (3, 2)] {
        let line = format!("[{r}] rank {r} of 4 on 203.0.113.{h}\n");
        assert!(out.stdout.contains(&line), "missing {line:?}: {out:?}");
        assert!(out.stderr.contains(&format!("[{r}] err\n")), "{out:?}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn map_by_node_deals_ranks_round_robin() {
    let dir = scratch("hosts-node");
    let out = run(hosts_job(&dir).args([
        "--map-by",
        "node",
        "-n",
        "3",
        "sh",
        "-c",
        "echo \"rank $MCAST_RANK on $FAKE_HOST\"",
    ]));
    assert!(out.status.success(), "{out:?}");
    for (r, h) in [(0, 1), (1, 2), (2, 1)] {
        let line = format!("rank {r} on 203.0.113.{h}\n");
        assert!(out.stdout.contains(&line), "missing {line:?}: {out:?}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn remote_ranks_meet_at_the_rendezvous() {
    let dir = scratch("hosts-rdv");
    let out = run(hosts_job(&dir).arg(rank_probe()));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout.matches(": table job=").count(), 4, "{out:?}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_remote_rank_is_named_with_its_host() {
    let dir = scratch("hosts-fail");
    let out = run(hosts_job(&dir).args([
        "sh",
        "-c",
        "if [ \"$MCAST_RANK\" = 3 ]; then exit 7; fi; exec sleep 30",
    ]));
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert!(
        out.stderr.contains("rank 3 (pid ")
            && out
                .stderr
                .contains(") on host 203.0.113.2 exited with status 7"),
        "{out:?}"
    );
    assert!(out.elapsed < PROMPT, "{out:?}");
    let _ = fs::remove_dir_all(&dir);
}

/// Shared-memory files a remote rank leaves in /dev/shm (a rank that dies
/// before its peers open its arena) are removed by its host's proxy, by
/// the rank's pid, as mclaunch removes its own host's.
#[test]
fn proxies_remove_what_their_ranks_left_in_dev_shm() {
    if !Path::new("/dev/shm").is_dir() {
        return;
    }
    let dir = scratch("hosts-shm");
    let out = run(hosts_job(&dir).args([
        "sh",
        "-c",
        "f=/dev/shm/mcast-$$-0-hoststest; : > \"$f\" && echo \"$f\" > \"$D/shm-$MCAST_RANK\"",
    ]));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for rank in 0..4 {
        let left = fs::read_to_string(dir.join(format!("shm-{rank}"))).unwrap();
        let left = left.trim();
        assert!(left.starts_with("/dev/shm/mcast-"), "{left}");
        assert!(!Path::new(left).exists(), "rank {rank} left {left}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_program_on_a_remote_host_is_reported() {
    let dir = scratch("hosts-missing");
    let out = run(hosts_job(&dir).arg("/no/such/program"));
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    assert!(out.stderr.contains("on host 203.0.113."), "{out:?}");
    // A host's ranks after the one that could not start never start: they
    // are not processes that outlived the teardown.
    assert!(!out.stderr.contains("survived"), "{out:?}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_bare_program_only_this_machine_finds_gets_its_path_in_the_error() {
    let dir = scratch("hosts-hint");
    let (_, hostfile) = setup(&dir);
    // The hosts' PATH (the agent's) lacks the directory this machine's has.
    let agent = dir.join("path-agent");
    script(
        &agent,
        "#!/bin/sh\nPATH=/usr/bin:/bin; export PATH; shift; exec setsid -w sh -c \"$1\"\n",
    );
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let prog = bin.join("mc-hint-prog");
    script(&prog, "#!/bin/sh\ntrue\n");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run(job_via(&hostfile, &agent)
        .env("PATH", path)
        .arg("mc-hint-prog"));
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("here `mc-hint-prog` is {}", prog.display())),
        "{out:?}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// The pid of the proxy serving `host` for the test whose scratch
/// directory is `dir` (its agent exported FAKE_HOST and FAKE_JOB; tests run
/// in parallel with the same host names).
fn proxy_of(dir: &Path, host: &str, limit: Duration) -> i32 {
    let job = format!("FAKE_JOB={}", dir.display());
    let end = Instant::now() + limit;
    loop {
        for e in fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let cmd = fs::read(e.path().join("cmdline")).unwrap_or_default();
            let env = fs::read(e.path().join("environ")).unwrap_or_default();
            let is_proxy = cmd.split(|&b| b == 0).any(|a| a == b"--proxy");
            let vars: Vec<&[u8]> = env.split(|&b| b == 0).collect();
            let on_host = vars.contains(&format!("FAKE_HOST={host}").as_bytes())
                && vars.contains(&job.as_bytes());
            if is_proxy && on_host && alive(pid) {
                return pid;
            }
        }
        assert!(Instant::now() < end, "no proxy for {host}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_token_never_reaches_a_command_line() {
    let dir = scratch("hosts-token");
    let job = start(hosts_job(&dir).args([
        "sh",
        "-c",
        &format!("echo \"$MCAST_TOKEN\" > \"$D/token\"; {RECORD_PID}; exec sleep 30"),
    ]));
    let pids = wait_for_pid_files(&dir, 4, LIMIT);
    let token = fs::read_to_string(dir.join("token")).unwrap();
    let token = token.trim();
    assert!(token.len() >= 16);
    for pid in [
        proxy_of(&dir, "203.0.113.1", LIMIT),
        proxy_of(&dir, "203.0.113.2", LIMIT),
    ] {
        let cmd = fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        assert!(
            !String::from_utf8_lossy(&cmd).contains(token),
            "the token is on the proxy's command line"
        );
    }
    job.signal(libc::SIGTERM);
    let out = job.finish(PROMPT);
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{out:?}");
    assert_all_gone(&pids, PROMPT);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_to_mclaunch_stops_the_remote_ranks() {
    let dir = scratch("hosts-sigkill");
    let job =
        start(hosts_job(&dir).args(["sh", "-c", &format!("sleep 300 & {RECORD_PIDS}; wait")]));
    let mut pids = wait_for_pid_files(&dir, 4, LIMIT);
    pids.push(proxy_of(&dir, "203.0.113.1", LIMIT));
    pids.push(proxy_of(&dir, "203.0.113.2", LIMIT));
    job.signal(libc::SIGKILL);
    // Through a proxy: it sees end of file (or, failing that, 5 s of
    // silence), then SIGTERM, up to 2 s of grace, SIGKILL: bounded by
    // REMOTE_GONE, not by a local teardown's PROMPT.
    assert_all_gone(&pids, REMOTE_GONE);
    let out = job.finish(PROMPT);
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{out:?}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_proxy_takes_its_ranks_and_is_named() {
    let dir = scratch("hosts-proxy-killed");
    let job =
        start(hosts_job(&dir).args(["sh", "-c", &format!("sleep 300 & {RECORD_PIDS}; wait")]));
    let pids = wait_for_pid_files(&dir, 4, LIMIT);
    let proxy = proxy_of(&dir, "203.0.113.2", LIMIT);
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(proxy, libc::SIGKILL) };
    // Bounded by REMOTE_GONE: mclaunch then tears down the other host
    // through its proxy (grace, finish, output drain), slow when this
    // file's tests load the machine together.
    let out = job.finish(REMOTE_GONE);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stderr.contains("lost host 203.0.113.2"), "{out:?}");
    assert!(out.stderr.contains("ranks 2, 3"), "{out:?}");
    assert_all_gone(&pids, REMOTE_GONE);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn an_unreachable_host_is_named_and_its_ranks_never_started() {
    let dir = scratch("hosts-unreachable");
    let (_, hostfile) = setup(&dir);
    // An agent that cannot reach the second host, as ssh says it.
    let agent = dir.join("half-agent");
    script(
        &agent,
        "#!/bin/sh\nif [ \"$1\" = 203.0.113.2 ]; then\n  \
         echo \"ssh: connect to host $1 port 22: No route to host\" >&2; exit 255\nfi\n\
         shift; exec setsid -w sh -c \"$1\"\n",
    );
    let out = run(job_via(&hostfile, &agent).args(["sleep", "30"]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("lost host 203.0.113.2")
            && out.stderr.contains("status 255")
            && out.stderr.contains("ranks 2, 3 never started there"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("running there"), "{out:?}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn bad_hosts_are_one_clear_line_and_exit_2() {
    let dir = scratch("hosts-bad");
    let (agent, _) = setup(&dir);
    let bad = dir.join("bad");
    fs::write(&bad, "h1 slots=2\nh2 slots=x\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--hostfile".into(), bad.display().to_string()],
            "line 2",
        ),
        (
            vec!["--hostfile".into(), dir.join("nope").display().to_string()],
            "cannot read hostfile",
        ),
        (
            vec!["--host".into(), "no-such-host.invalid".into()],
            "unknown host",
        ),
        (
            vec![
                "--host".into(),
                "203.0.113.1:2".into(),
                "-n".into(),
                "3".into(),
            ],
            "--oversubscribe",
        ),
    ];
    for (args, want) in cases {
        let out = run(mclaunch()
            .args(&args)
            .arg("--launch-agent")
            .arg(&agent)
            .arg("true"));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.contains(want), "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out:?}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn oversubscribe_places_the_extra_ranks() {
    let dir = scratch("hosts-over");
    let out = run(hosts_job(&dir).args([
        "-n",
        "6",
        "--oversubscribe",
        "sh",
        "-c",
        "echo \"rank $MCAST_RANK on $FAKE_HOST\"",
    ]));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout.matches("on 203.0.113.1").count(), 3, "{out:?}");
    assert_eq!(out.stdout.matches("on 203.0.113.2").count(), 3, "{out:?}");
    let _ = fs::remove_dir_all(&dir);
}
