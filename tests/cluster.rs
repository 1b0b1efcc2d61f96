//! mclaunch across hosts, for real: the namespace test cluster
//! (`bench/cluster/`, three hosts h1..h3, each with its own sshd) and
//! mclaunch reaching them over ssh. One test runs the scenarios in turn,
//! since they share the one cluster; it brings the cluster up (as root) if
//! none is running, and down again at the end.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::cluster::{marked_on, netns_pids, Cluster};
use common::{bin, check_timeline, mclaunch, run_bounded, text};

const HOSTS: [&str; 3] = ["h1", "h2", "h3"];
const LIMIT: Duration = Duration::from_secs(120);

/// `mclaunch --hostfile` over the cluster, running `prog args`.
fn job(c: &Cluster, prog: &str, args: &[&str]) -> Command {
    job_with(c, &[], prog, args)
}

/// [`job`] with more mclaunch options (`opts`) before the program.
fn job_with(c: &Cluster, opts: &[&str], prog: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(mclaunch());
    cmd.arg("--hostfile")
        .arg(c.hostfile())
        .arg("--launch-agent")
        .arg(c.agent())
        .arg("--tag-output")
        .args(opts)
        .arg(bin(prog))
        .args(args);
    cmd
}

fn unique_mark(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("MCAST_CLUSTER_TEST={name}-{}-{nanos}", std::process::id())
}

/// The processes of the job marked `mark`, on every host.
fn marked(mark: &str) -> Vec<(String, i32)> {
    HOSTS
        .iter()
        .flat_map(|h| marked_on(h, mark).into_iter().map(|p| (h.to_string(), p)))
        .collect()
}

/// mclaunch's proxies still running on any host.
fn proxies() -> Vec<(String, i32)> {
    let mut found = Vec::new();
    for h in HOSTS {
        for p in netns_pids(h) {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
            if args.contains(&&b"--proxy"[..]) && args[0].ends_with(b"mclaunch") {
                found.push((h.to_string(), p));
            }
        }
    }
    found
}

/// Within 30 s, no rank of the job marked `mark` and no proxy remains on
/// any host (`context` goes into the failure message).
fn assert_nothing_left(mark: &str, context: &str) {
    assert!(
        eventually(Duration::from_secs(30), || marked(mark).is_empty()
            && proxies().is_empty()),
        "left behind: ranks {:?}, proxies {:?}\n{context}",
        marked(mark),
        proxies()
    );
}

/// Poll until `f` holds, for at most `limit`; false if it never did.
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// A running job whose stderr is collected by a thread.
struct Running {
    child: Child,
    stderr: mpsc::Receiver<String>,
}

fn start(mut cmd: Command) -> Running {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, stderr) = mpsc::channel();
    std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            all += &line;
            all.push('\n');
        }
        let _ = tx.send(all);
    });
    Running { child, stderr }
}

impl Running {
    /// Wait (bounded) for mclaunch to end; its status and stderr.
    fn finish(mut self, limit: Duration) -> (std::process::ExitStatus, String) {
        let end = Instant::now() + limit;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                let err = self
                    .stderr
                    .recv_timeout(Duration::from_secs(10))
                    .unwrap_or_default();
                return (s, err);
            }
            if Instant::now() >= end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("mclaunch did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A long stream of checked broadcasts (nobody dies) marked with `mark`,
/// started and waited for until all 6 ranks run.
fn long_stream(c: &Cluster, mark: &str) -> Running {
    long_stream_with(c, mark, &[])
}

/// [`long_stream`] with more mclaunch options.
fn long_stream_with(c: &Cluster, mark: &str, opts: &[&str]) -> Running {
    let opts: Vec<&str> = ["-x", mark].iter().chain(opts).copied().collect();
    let front = job_with(
        c,
        &opts,
        "mcast-faults",
        &[
            "kill",
            "--victim",
            "0",
            "--at",
            "4000000000",
            "--max-iters",
            "4000000000",
        ],
    );
    let running = start(front);
    assert!(
        eventually(Duration::from_secs(60), || marked(mark).len() == 6),
        "the 6 ranks did not start: {:?}",
        marked(mark)
    );
    running
}

fn hostfile_runs_selftest_on_every_host(c: &Cluster) {
    // The rank of its own host through a shared-memory ring, the four
    // others over TCP.
    selftest_with_links(c, &[], "ring,tcp");
}

/// The selftest over the cluster with mclaunch options `opts`: every rank
/// ok on its host, its links (the selftest's summary) exactly `links`.
fn selftest_with_links(c: &Cluster, opts: &[&str], links: &str) {
    let out = run_bounded(job_with(c, opts, "mcast-selftest", &[]), LIMIT);
    let (so, se) = text(&out);
    assert!(out.status.success(), "{so}\n{se}");
    for r in 0..6 {
        let host = HOSTS[r / 2];
        let line = format!("[{r}] selftest: rank {r} of 6 ok on host {host} (");
        let found = so.lines().find(|l| l.starts_with(&line));
        assert!(
            found.is_some_and(|l| l.ends_with(&format!("; links {links})"))),
            "missing {line:?} with links {links}:\n{so}\n{se}"
        );
    }
}

/// A leader hands what it reads from another host to its host-mate as a
/// descriptor into its arena, not as bytes through their ring: with rank
/// 0 the only bcast root and every other message below the 16 KiB
/// shared-memory threshold, the other hosts' leaders (ranks 2 and 4) send
/// descriptors only for payloads they landed from the network. The
/// 4,194,311 bytes go in the large packets of a job across hosts (1 MiB,
/// the last ragged), and every rank checks every byte.
fn leaders_forward_other_hosts_data_as_descriptors(c: &Cluster) {
    let args = [
        "--roots",
        "1",
        "--sizes",
        "1,1048576,4194311",
        "--multicast-rounds",
        "0",
    ];
    let out = run_bounded(job_with(c, &[], "mcast-selftest", &args), LIMIT);
    let (so, se) = text(&out);
    assert!(out.status.success(), "{so}\n{se}");
    for r in [2, 4] {
        let line = so
            .lines()
            .find(|l| l.starts_with(&format!("[{r}] selftest: rank {r} of 6 ok")))
            .unwrap_or_else(|| panic!("no summary of rank {r}:\n{so}\n{se}"));
        let sent: u64 = line
            .split("; ")
            .find_map(|f| f.strip_suffix(" shm descriptors sent"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no descriptor count in {line:?}"));
        assert!(sent > 0, "rank {r} forwarded no descriptor: {line}");
    }
}

/// Every collective (barrier included: the two-level one across hosts)
/// with the ranks mapped by node, so each host holds two ranks far apart
/// in rank order (0 and 3, 1 and 4, 2 and 5), on the world and on the
/// even/odd sub-communicators (one rank per host each); then over
/// `--host h1:4,h2:2`, where each sub-communicator has two ranks on h1 and
/// one on h2 (a leader with a host-mate inside a sub-communicator); then a
/// rank killed before a barrier.
fn collectives_across_hosts(c: &Cluster) {
    let check = |what: &str, out: std::process::Output| {
        let (so, se) = text(&out);
        assert!(out.status.success(), "{what}\n{so}\n{se}");
        for r in 0..6 {
            let line = format!("rank {r} of 6 ok");
            assert!(
                so.lines().any(|l| l.ends_with(&line)),
                "{what}: no {line:?}\n{so}\n{se}"
            );
        }
    };
    for args in [&["--big", "0"][..], &["--big", "0", "--split"]] {
        let job = job_with(c, &["--map-by", "node"], "mcast-colltest", args);
        check(&format!("--map-by node {args:?}"), run_bounded(job, LIMIT));
    }
    let mut job = Command::new(mclaunch());
    job.args(["--host", "h1:4,h2:2", "--launch-agent"])
        .arg(c.agent())
        .arg("--tag-output")
        .arg(bin("mcast-colltest"))
        .args(["--big", "0", "--split"]);
    check("--host h1:4,h2:2 --split", run_bounded(job, LIMIT));
    // A rank that dies before the barrier: its host's leader waits on its
    // barrier flag (rank 3, on h2) or the other leaders on its host's
    // leader's message (rank 2); either way every survivor names it.
    for dead in ["3", "2"] {
        let args = ["--big", "0", "--crash-rank", dead, "--crash-in", "barrier"];
        let out = run_bounded(
            job_with(c, &["--on-failure", "continue"], "mcast-colltest", &args),
            LIMIT,
        );
        let (so, se) = text(&out);
        assert_eq!(out.status.code(), Some(3), "rank {dead} dead\n{so}\n{se}");
        for r in (0..6).filter(|r| r.to_string() != dead) {
            let line = format!("rank {r} of 6 ok: barrier lost rank {dead}");
            assert!(so.contains(&line), "no {line:?}\n{so}\n{se}");
        }
    }
}

/// The two-level barrier holds across hosts: in `mcbench --timeline`
/// rows (the namespaces share this machine's clock), no rank leaves a
/// barrier before every rank entered it, iteration by iteration, from 1
/// byte to 64 KiB; mapped by slot (leaders 0, 2 and 4) and by node
/// (leaders 0, 1 and 2).
fn barrier_holds_across_hosts(c: &Cluster) {
    for map in ["slot", "node"] {
        let dir = std::env::temp_dir().join(format!(
            "mcast-cluster-timeline-{}-{map}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let d = dir.to_string_lossy().into_owned();
        let args = ["-m", "1:65536", "-i", "100", "-x", "2", "--timeline", &d];
        let out = run_bounded(job_with(c, &["--map-by", map], "mcbench", &args), LIMIT);
        // 17 sizes of 100 iterations.
        let checked = check_timeline(&dir, 6, 17 * 100);
        let _ = std::fs::remove_dir_all(&dir);
        let (so, se) = text(&out);
        assert!(out.status.success(), "--map-by {map}\n{so}\n{se}");
        checked.unwrap_or_else(|e| panic!("--map-by {map}: {e}"));
    }
}

/// `--bind-to core` on remote hosts: each host's proxy binds its ranks, a
/// CPU each in turn (the two ranks of a host on different CPUs).
fn bind_to_core_on_every_host(c: &Cluster) {
    let mut job = Command::new(mclaunch());
    job.arg("--hostfile")
        .arg(c.hostfile())
        .arg("--launch-agent")
        .arg(c.agent())
        .args(["--bind-to", "core", "sh", "-c"])
        .arg("echo BIND $MCAST_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)");
    let out = run_bounded(job, LIMIT);
    let (so, se) = text(&out);
    assert!(out.status.success(), "{so}\n{se}");
    let mut cpu = [None; 6];
    for l in so.lines().filter_map(|l| l.strip_prefix("BIND ")) {
        let (r, list) = l.split_once(' ').expect("rank and list");
        let r: usize = r.parse().expect("rank");
        cpu[r] = Some(
            list.parse::<usize>()
                .unwrap_or_else(|_| panic!("not one CPU: {l}")),
        );
    }
    assert!(cpu.iter().all(Option::is_some), "{so}\n{se}");
    if std::thread::available_parallelism().map_or(1, |c| c.get()) >= 2 {
        for h in 0..3 {
            assert_ne!(cpu[2 * h], cpu[2 * h + 1], "host {h}: {so}");
        }
    }
}

/// `--transport quic`: every rank reaches the other hosts' ranks over QUIC
/// (its link table says so) and its own host's rank through the ring.
fn quic_links_between_hosts(c: &Cluster) {
    selftest_with_links(c, &["--transport", "quic"], "quic,ring");
}

/// `ss` in host `h`'s namespace, its lines without header.
fn ss(h: usize, args: &[&str]) -> String {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &format!("mc-h{h}"), "ss", "-H"])
        .args(args);
    let out = run_bounded(cmd, Duration::from_secs(20));
    assert!(out.status.success(), "ss {args:?} in mc-h{h}");
    text(&out).0
}

/// UDP datagrams host `h`'s namespace has received (`/proc/net/snmp`).
fn udp_in(h: usize) -> u64 {
    let mut cmd = Command::new("ip");
    cmd.args([
        "netns",
        "exec",
        &format!("mc-h{h}"),
        "cat",
        "/proc/net/snmp",
    ]);
    let out = run_bounded(cmd, Duration::from_secs(20));
    let snmp = text(&out).0;
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "InDatagrams")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// While a QUIC job runs, once its data flows (every host has received
/// thousands of UDP datagrams more than before it): no TCP connection
/// joins two hosts of the cluster (`MCAST_CLUSTER_NET`.1..3; ssh comes
/// from mclaunch's side, .254), and the ranks hold UDP sockets.
fn no_tcp_between_hosts(before: &[u64]) {
    let flowing = eventually(Duration::from_secs(60), || {
        (1..=3).all(|h| udp_in(h) > before[h - 1] + 2000)
    });
    assert!(flowing, "no UDP traffic on every host: {before:?}");
    let net = cluster_net();
    for h in 1..=3 {
        let tcp = ss(h, &["-tn", "state", "established"]);
        for line in tcp.lines() {
            let peer = line.split_whitespace().nth(3).unwrap_or("");
            let between = (1..=3)
                .filter(|&o| o != h)
                .any(|o| peer.starts_with(&format!("{net}.{o}:")));
            assert!(!between, "a TCP connection between hosts on h{h}: {line}");
        }
        let udp = ss(h, &["-uanp"]);
        let ranks = udp
            .lines()
            .filter(|l| l.contains("\"mcast-faults\""))
            .count();
        assert_eq!(ranks, 2, "h{h}'s ranks' UDP sockets:\n{udp}");
    }
}

fn a_killed_remote_rank_is_named(c: &Cluster) {
    let out = run_bounded(
        job(c, "mcast-faults", &["kill", "--victim", "3", "--at", "20"]),
        LIMIT,
    );
    let (so, se) = text(&out);
    assert_eq!(out.status.code(), Some(137), "{so}\n{se}");
    assert!(
        se.contains("mclaunch: rank 3 (pid ")
            && se.contains(") on host h2 was killed by signal 9 (SIGKILL)"),
        "{so}\n{se}"
    );
}

fn signals_leave_nothing_on_any_host(c: &Cluster) {
    for (signal, name) in [(libc::SIGINT, "sigint"), (libc::SIGKILL, "sigkill")] {
        let mark = unique_mark(name);
        let job = long_stream(c, &mark);
        // SAFETY: kill has no memory-safety preconditions; the child is ours.
        unsafe { libc::kill(job.child.id() as i32, signal) };
        let (status, err) = job.finish(LIMIT);
        assert!(!status.success(), "{name}: {err}");
        assert_nothing_left(&mark, &format!("{name}: {err}"));
    }
}

fn a_cut_link_is_detected_and_the_host_named(c: &Cluster) {
    cut_link(c, "cut", &[]);
}

/// The same over QUIC links, which must carry the heartbeats (and first
/// prove to be the only links between hosts).
fn a_cut_quic_link_is_detected(c: &Cluster) {
    cut_link(c, "cutquic", &["--transport", "quic"]);
}

fn cut_link(c: &Cluster, name: &str, opts: &[&str]) {
    let mark = unique_mark(name);
    let before: Vec<u64> = (1..=3).map(udp_in).collect();
    let job = long_stream_with(c, &mark, opts);
    if opts.contains(&"quic") {
        no_tcp_between_hosts(&before);
    }
    let link = |state: &str| {
        let ok = Command::new("ip")
            .args(["-n", "mc-h3", "link", "set", "eth0", state])
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip link set {state}");
    };
    let cut = Instant::now();
    link("down");
    let (status, err) = job.finish(Duration::from_secs(60));
    let took = cut.elapsed();
    link("up");
    assert!(!status.success(), "{err}");
    // The survivors lost ranks 4 and 5 (h3's), and mclaunch names the host
    // (and the ranks: one by one, or together as the host's when its proxy
    // went silent before a survivor's report came).
    let named = ["rank 4", "rank 5", "ranks 4, 5"];
    assert!(
        err.contains("lost") && named.iter().any(|n| err.contains(n)),
        "{err}"
    );
    assert!(err.contains("h3"), "{err}");
    assert!(took < Duration::from_secs(40), "took {took:?}: {err}");
    assert_nothing_left(&mark, &err);
}

/// The wire between hosts is encrypted under QUIC: tcpdump in h2's
/// namespace records the job of `examples/bcast`, whose payload is the
/// known text `hello, ranks`. With the default transport (TCP between hosts)
/// the text is on the wire, so the check can fail; with `--transport quic`
/// it is not.
fn the_wire_between_hosts_is_encrypted_under_quic(c: &Cluster) {
    const PATTERN: &[u8] = b"hello, ranks";
    let example = bin("mcbench").with_file_name("examples").join("bcast");
    assert!(
        example.exists(),
        "{} is missing: cargo test builds the examples",
        example.display()
    );
    for (transport, on_the_wire) in [("auto", true), ("quic", false)] {
        let pcap = std::env::temp_dir().join(format!(
            "mcast-wire-{}-{transport}.pcap",
            std::process::id()
        ));
        let mut dump = Command::new("ip")
            .args([
                "netns",
                "exec",
                "mc-h2",
                "tcpdump",
                // Hand every packet to the writer at once (no 1 s block
                // timeout): the capture ends right after the job.
                "--immediate-mode",
                // A ring of 128 MiB for frames of 64 KiB: with the default
                // (2 MiB for 256 KiB frames, 8 frames) the kernel dropped
                // packets while the job started, and the text with them.
                "-B",
                "131072",
                "-i",
                "any",
                "-U",
                "-s",
                "65535",
                "-w",
            ])
            .arg(&pcap)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump (bench/cluster/deps.sh installs it)");
        // Wait until tcpdump listens (it says so on stderr).
        let err = dump.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let listening = loop {
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(l) if l.contains("listening on") => break true,
                Ok(_) => continue,
                Err(_) => break false,
            }
        };
        if !listening {
            let _ = dump.kill();
            let _ = dump.wait();
            panic!("tcpdump did not start listening in mc-h2");
        }
        let mut cmd = Command::new(mclaunch());
        cmd.arg("--hostfile")
            .arg(c.hostfile())
            .arg("--launch-agent")
            .arg(c.agent())
            .args(["--transport", transport])
            .arg(&example);
        let out = run_bounded(cmd, LIMIT);
        // Everything the job sent reached h2 before a sentinel sent after
        // it, and tcpdump writes packets in order (`-U`): once the sentinel
        // is in the file, so is the job. Then SIGINT closes the file.
        let synced = sentinel_seen(&format!("{}.2", cluster_net()), &pcap);
        unsafe { libc::kill(dump.id() as i32, libc::SIGINT) };
        let end = Instant::now() + Duration::from_secs(20);
        while dump.try_wait().unwrap().is_none() {
            if Instant::now() >= end {
                let _ = dump.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = dump.wait();
        let (so, se) = text(&out);
        assert!(out.status.success(), "{transport}: {so}\n{se}");
        assert_eq!(
            so.matches("bcast \"hello, ranks\"").count(),
            6,
            "{transport}: every rank has the text:\n{so}"
        );
        // tcpdump's last words, to the end of its stderr (bounded).
        let mut said = Vec::new();
        while let Ok(l) = rx.recv_timeout(Duration::from_secs(5)) {
            said.push(l);
        }
        assert!(
            said.iter().any(|l| l == "0 packets dropped by kernel"),
            "{transport}: the capture lost packets, so it proves nothing: {said:?}"
        );
        assert!(
            synced,
            "{transport}: tcpdump never wrote the sentinel; it said {said:?}"
        );
        let bytes = std::fs::read(&pcap).unwrap_or_default();
        let _ = std::fs::remove_file(&pcap);
        assert!(
            bytes.len() > 1000,
            "{transport}: tcpdump captured {} bytes; it said {said:?}",
            bytes.len()
        );
        let seen = bytes.windows(PATTERN.len()).any(|w| w == PATTERN);
        assert_eq!(
            seen,
            on_the_wire,
            "{transport}: the text was {}on the wire between hosts",
            if seen { "" } else { "not " }
        );
    }
}

/// The cluster's /24 (three octets), as `up.sh` reads it.
fn cluster_net() -> String {
    std::env::var("MCAST_CLUSTER_NET").unwrap_or_else(|_| "10.77.0".into())
}

/// Send a marked UDP datagram from this (the root) namespace to `addr`
/// until the capture file `pcap` holds it (bounded: 20 s). Returns whether
/// it did.
fn sentinel_seen(addr: &str, pcap: &std::path::Path) -> bool {
    let mark = format!("mcast-sentinel-{}", std::process::id());
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        let _ = sock.send_to(mark.as_bytes(), (addr, 9));
        let bytes = std::fs::read(pcap).unwrap_or_default();
        if bytes.windows(mark.len()).any(|w| w == mark.as_bytes()) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn mclaunch_across_namespace_hosts() {
    let c = Cluster::ensure();
    hostfile_runs_selftest_on_every_host(&c);
    leaders_forward_other_hosts_data_as_descriptors(&c);
    collectives_across_hosts(&c);
    barrier_holds_across_hosts(&c);
    bind_to_core_on_every_host(&c);
    a_killed_remote_rank_is_named(&c);
    signals_leave_nothing_on_any_host(&c);
    a_cut_link_is_detected_and_the_host_named(&c);
    quic_links_between_hosts(&c);
    a_cut_quic_link_is_detected(&c);
    the_wire_between_hosts_is_encrypted_under_quic(&c);
}
