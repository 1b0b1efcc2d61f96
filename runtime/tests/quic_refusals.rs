//! Whole system: a running QUIC job refuses strangers at the handshake.
//!
//! This test is its own launcher, as mclaunch would be: it makes the job's
//! CA, serves the TLS rendezvous ([`Server::start_tls`]) and starts two rank
//! processes (this test binary again, running [`rank_process`]) with
//! `MCAST_TRANSPORT=quic-all`, each with its bundle in
//! `MCAST_QUIC_IDENTITY`. Holding the CA lets it forge what mclaunch never
//! hands out: an expired certificate of this job and one for a rank the job
//! does not have. While the ranks wait, it dials rank 0's QUIC endpoint as
//! four strangers (no certificate, another job's CA, expired, rank 7 of a
//! 2-rank job). Each is refused, rank 0 logs each refusal with the
//! stranger's address and why, and the job then ends normally: a
//! broadcast still goes through.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mcast::quic::{rank_name, JobCa, RankIdentity, Validity};
use mcast::rendezvous::Server;

#[path = "common/quic.rs"]
mod quic_common;
use quic_common::raw_client;

/// Set in a rank process's environment: run [`rank_process`].
const RANK_MODE: &str = "MCAST_TEST_QUIC_REFUSALS_RANK";
/// Every wait of this test ends within this.
const LIMIT: Duration = Duration::from_secs(60);

/// A rank of the job (only when started by the test below; a no-op in a
/// normal test run): join, say "holding", wait until the test closes our
/// stdin, then broadcast and leave.
#[test]
fn rank_process() {
    if std::env::var_os(RANK_MODE).is_none() {
        return;
    }
    let comm = mcast::init().expect("init");
    comm.barrier().expect("barrier");
    println!("holding rank {}", comm.rank());
    std::io::stdout().flush().unwrap();
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    comm.barrier().expect("barrier");
    let mut buf = if comm.rank() == 0 {
        b"still here".to_vec()
    } else {
        vec![0; 10]
    };
    comm.bcast(0, &mut buf).expect("bcast");
    assert_eq!(buf, b"still here");
    let rank = comm.rank();
    comm.finalize().expect("finalize");
    println!("rank {rank} done");
}

/// The rank processes; killed if the test ends early.
struct Ranks(Vec<Child>);

impl Drop for Ranks {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Lines of a child's stream, sent on as they come (tagged by rank).
fn forward(r: usize, out: impl Read + Send + 'static, tx: mpsc::Sender<(usize, String)>) {
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send((r, line));
        }
    });
}

/// Receive lines until `want` holds for one of them (bounded); every line
/// goes into `log`.
fn wait_for(
    rx: &mpsc::Receiver<(usize, String)>,
    log: &mut Vec<(usize, String)>,
    mut want: impl FnMut(usize, &str) -> bool,
) -> bool {
    let end = Instant::now() + LIMIT;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok((r, l)) => {
                let hit = want(r, &l);
                log.push((r, l));
                if hit {
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
    false
}

/// Rank 0's QUIC endpoint, from its debug line `quic: endpoint addr=Ok(A)`.
fn endpoint_of(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("quic: endpoint")?..];
    let a = &rest[rest.find("addr=Ok(")? + "addr=Ok(".len()..];
    a[..a.find(')')?].parse().ok()
}

/// Dial `target` (rank 0) presenting `present` (or no certificate), trusting
/// the job's CA; returns the stranger's address and whether its
/// connection ended (refused) within the limit.
async fn stranger(
    target: SocketAddr,
    trust: &RankIdentity,
    present: Option<&RankIdentity>,
) -> (SocketAddr, bool) {
    let ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let me = ep.local_addr().unwrap();
    let name = rank_name(trust.job(), 0);
    let connecting = ep
        .connect_with(raw_client(trust, 0, present), target, &name)
        .unwrap();
    // In QUIC the client's half of the handshake may finish before the
    // server has judged the client's certificate: a refusal then closes
    // the connection.
    let ended = match tokio::time::timeout(LIMIT, connecting).await {
        Ok(Err(_)) => true,
        Ok(Ok(c)) => tokio::time::timeout(LIMIT, c.closed()).await.is_ok(),
        Err(_) => false,
    };
    ep.close(0u32.into(), b"");
    (me, ended)
}

#[test]
fn a_running_job_refuses_strangers_at_the_handshake() {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let token = format!("{nanos:032x}{:08x}", std::process::id());
    let job = mcast::bootstrap::job_id_from_token(&token);
    let ca = JobCa::new(job, Validity::starting_now(Duration::from_secs(3600))).unwrap();
    let server = Server::start_tls(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        2,
        token.clone(),
        LIMIT,
        Arc::new(|_| {}),
        &ca.issue_rendezvous().unwrap(),
    )
    .unwrap();

    let (tx, rx) = mpsc::channel();
    let mut ranks = Ranks(Vec::new());
    for r in 0..2u32 {
        let bundle = mcast::pmi2::hex(&ca.issue(r).unwrap().to_bytes());
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["rank_process", "--exact", "--nocapture", "--test-threads=1"])
            .env(RANK_MODE, "1")
            .env("MCAST_RANK", r.to_string())
            .env("MCAST_SIZE", "2")
            .env("MCAST_RENDEZVOUS", server.addr().to_string())
            .env("MCAST_TOKEN", &token)
            .env("MCAST_TRANSPORT", "quic-all")
            .env("MCAST_QUIC_IDENTITY", bundle)
            .env("MCAST_TIMEOUT_SECS", "60")
            .env("RUST_LOG", "warn,mcast::net::quicmesh=debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        forward(r as usize, child.stdout.take().unwrap(), tx.clone());
        forward(r as usize, child.stderr.take().unwrap(), tx.clone());
        ranks.0.push(child);
    }
    drop(tx);

    // Both ranks hold, and rank 0 said where its endpoint is.
    let mut log = Vec::new();
    let (mut target, mut holding) = (None, 0);
    let ready = wait_for(&rx, &mut log, |r, l| {
        if r == 0 && target.is_none() {
            target = endpoint_of(l);
        }
        holding += l.contains("holding rank") as usize;
        holding == 2 && target.is_some()
    });
    assert!(ready, "the ranks did not start holding:\n{log:#?}");
    let target = target.unwrap();

    let now = SystemTime::now();
    let day = Duration::from_secs(86_400);
    let expired = ca
        .issue_with_validity(1, Validity::new(now - 2 * day, now - day).unwrap())
        .unwrap();
    let other = JobCa::new(job ^ 1, Validity::starting_now(Duration::from_secs(3600)))
        .unwrap()
        .issue(1)
        .unwrap();
    let rank7 = ca.issue(7).unwrap();
    let trust = ca.issue(1).unwrap();
    let cases: [(Option<&RankIdentity>, &str); 4] = [
        (None, "no certificate presented"),
        (Some(&other), "certificate not issued by this job's CA"),
        (Some(&expired), "certificate expired"),
        (
            Some(&rank7),
            "rank 7's certificate, but the job has 2 ranks",
        ),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut tried = Vec::new();
    for (present, why) in cases {
        let (from, ended) = rt.block_on(stranger(target, &trust, present));
        assert!(ended, "{why}: the stranger's connection stayed open");
        tried.push((from, why));
    }

    // Let the job finish: close the ranks' stdin, wait for both.
    for c in &mut ranks.0 {
        drop(c.stdin.take());
    }
    let end = Instant::now() + LIMIT;
    for (r, c) in ranks.0.iter_mut().enumerate() {
        let status = loop {
            if let Some(s) = c.try_wait().unwrap() {
                break Some(s);
            }
            if Instant::now() >= end {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        log.extend(rx.try_iter());
        assert!(
            status.is_some_and(|s| s.success()),
            "rank {r} ended {status:?}:\n{log:#?}"
        );
    }
    // The readers end with the processes; take every last line.
    log.extend(rx.iter());
    for r in 0..2 {
        let done = format!("rank {r} done");
        assert!(log.iter().any(|(_, l)| *l == done), "{done}:\n{log:#?}");
    }
    // Rank 0 logged every stranger, by address, with why.
    for (from, why) in tried {
        let from = from.to_string();
        let seen = log
            .iter()
            .any(|(r, l)| *r == 0 && l.contains(&from) && l.contains(why));
        assert!(seen, "rank 0 did not log {from} ({why}):\n{log:#?}");
    }
}
