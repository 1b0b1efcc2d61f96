//! Tests of `quicmesh.rs`: the identity from the environment, and QUIC
//! meshes of ranks in one process on loopback (the address table says
//! each rank is a host of its own).

use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::*;
use crate::pmi2::hex;
use crate::quic::{JobCa, Validity};

const JOB: u32 = 0xbeef;
const LIMIT: Duration = Duration::from_secs(20);

fn new_ca(job: u32) -> JobCa {
    JobCa::new(job, Validity::starting_now(Duration::from_secs(3600))).unwrap()
}

fn job(rank: usize, size: usize) -> JobEnv {
    JobEnv {
        rank,
        size,
        rendezvous: String::new(),
        token: "tok".into(),
        slurm: None,
        bind_toward: None,
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every rank's side and the address table (no Unix socket: all remote).
fn sides(ca: &JobCa, size: usize) -> (Vec<QuicSide>, Vec<Reach>) {
    let mut sides = Vec::new();
    let mut addrs = Vec::new();
    for r in 0..size {
        let id = hex(&ca.issue(r as u32).unwrap().to_bytes());
        let (side, port) = prepare_with(Ok(id), "127.0.0.1", r).unwrap();
        sides.push(side);
        addrs.push(Reach {
            tcp: "127.0.0.1:9".into(),
            unix: None,
            shm: None,
            udp: Some(port),
        });
    }
    (sides, addrs)
}

#[test]
fn a_rank_without_a_valid_bundle_is_told_which_variable() {
    let ca = new_ca(JOB);
    let other = hex(&ca.issue(3).unwrap().to_bytes());
    let cases = [
        Err(std::env::VarError::NotPresent),
        Ok("zz".to_string()),
        Ok("abcd".to_string()),
        Ok(other),
    ];
    for value in cases {
        let err = prepare_with(value.clone(), "127.0.0.1", 2)
            .err()
            .unwrap_or_else(|| panic!("{value:?} accepted"))
            .to_string();
        assert!(err.contains(ENV_QUIC_IDENTITY), "{err}");
    }
    let (side, _) =
        prepare_with(Ok(hex(&ca.issue(2).unwrap().to_bytes())), "127.0.0.1", 2).unwrap();
    assert!(check_job(&side, JOB).is_ok());
    let err = check_job(&side, JOB + 1).unwrap_err().to_string();
    assert!(err.contains(ENV_QUIC_IDENTITY), "{err}");
}

/// Every rank's mesh, spawned all at once (as ranks start together), each
/// within the limit.
async fn meshes(
    sides: Vec<QuicSide>,
    addrs: &[Reach],
    opts: LinkOptions,
) -> Vec<(Vec<Option<QuicLink>>, Gate)> {
    let size = sides.len();
    let tasks: Vec<_> = sides
        .into_iter()
        .enumerate()
        .map(|(r, side)| {
            let addrs = addrs.to_vec();
            tokio::spawn(async move { mesh(&job(r, size), side, None, &addrs, opts).await })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.push(
            tokio::time::timeout(LIMIT, t)
                .await
                .unwrap()
                .unwrap()
                .unwrap(),
        );
    }
    all
}

async fn write(l: &mut QuicLink, b: &[u8]) {
    let Half::Quic(s) = &mut l.half else {
        panic!("a QUIC link writes into its stream")
    };
    s.write_all(b).await.unwrap();
}

async fn read(l: &mut QuicLink, n: usize) -> Vec<u8> {
    let mut b = vec![0; n];
    l.rd.read_exact(&mut b).await.unwrap();
    b
}

#[test]
fn three_ranks_meet_over_quic_and_bytes_keep_their_order() {
    let ca = new_ca(JOB);
    let (sides, addrs) = sides(&ca, 3);
    let opts = options(Duration::from_secs(5));
    rt().block_on(async {
        let mut all = meshes(sides, &addrs, opts).await;
        for (r, (links, _)) in all.iter().enumerate() {
            for (p, l) in links.iter().enumerate() {
                assert_eq!(l.is_some(), p != r, "rank {r}'s link to {p}");
            }
        }
        // 2 → 0, in order, in pieces; and 0 → 2.
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let (head, tail) = all.split_at_mut(2);
        let to0 = tail[0].0[0].as_mut().unwrap();
        let from2 = head[0].0[2].as_mut().unwrap();
        let send = async {
            for chunk in payload.chunks(7_000) {
                write(to0, chunk).await;
            }
        };
        let (_, got) = tokio::join!(send, read(from2, payload.len()));
        assert!(got == payload, "bytes changed or reordered");
        write(from2, b"back").await;
        assert_eq!(read(to0, 4).await, b"back");
    });
}

#[test]
fn strangers_and_impostors_are_refused_and_the_right_peer_still_joins() {
    let ca = new_ca(JOB);
    let (mut sides, addrs) = sides(&ca, 2);
    let opts = options(Duration::from_secs(5));
    let one = sides.pop().unwrap();
    let zero = sides.pop().unwrap();
    let target = addrs[0].udp_addr().unwrap();
    rt().block_on(async {
        let addrs0 = addrs.clone();
        let r0 = tokio::spawn(async move { mesh(&job(0, 2), zero, None, &addrs0, opts).await });
        // Another job's rank 1; this job's rank 0 (not expected at rank 0);
        // rank 1's certificate from another address than rank 1 published.
        let intruders = [
            new_ca(JOB + 1).issue(1).unwrap(),
            ca.issue(0).unwrap(),
            ca.issue(1).unwrap(),
        ];
        for id in intruders {
            let ep = quic::endpoint(&id, "127.0.0.1:0".parse().unwrap(), &opts).unwrap();
            if let Ok(c) = quic::connect(&ep, &id, target, 0, &opts).await {
                // Refused after the handshake: the connection is closed.
                let closed = tokio::time::timeout(LIMIT, c.closed()).await;
                assert!(closed.is_ok(), "an impostor's connection stayed open");
            }
        }
        let r1 = tokio::spawn(async move { mesh(&job(1, 2), one, None, &addrs, opts).await });
        let (l0, _) = tokio::time::timeout(LIMIT, r0)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let (l1, _) = tokio::time::timeout(LIMIT, r1)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(l0[1].is_some() && l1[0].is_some());
    });
}

#[test]
fn after_start_up_the_gatekeeper_refuses_every_handshake() {
    let ca = new_ca(JOB);
    let (sides, addrs) = sides(&ca, 2);
    let opts = options(Duration::from_secs(5));
    let target = addrs[0].udp_addr().unwrap();
    rt().block_on(async {
        let mut gates: Vec<Gate> = meshes(sides, &addrs, opts)
            .await
            .into_iter()
            .map(|(_, g)| g)
            .collect();
        let gate = gates.swap_remove(0);
        tokio::spawn(gatekeeper(gate));
        let now = std::time::SystemTime::now();
        let day = Duration::from_secs(86_400);
        let expired = Validity::new(now - 2 * day, now - day).unwrap();
        // Another job's CA and an expired certificate are refused at the
        // handshake; this job's own rank 1 (a good certificate) is closed
        // with "job running".
        let cases = [
            (new_ca(JOB + 1).issue(1).unwrap(), false),
            (ca.issue_with_validity(1, expired).unwrap(), false),
            (ca.issue(1).unwrap(), true),
        ];
        for (id, good) in cases {
            let ep = quic::endpoint(&id, "127.0.0.1:0".parse().unwrap(), &opts).unwrap();
            let Ok(c) = quic::connect(&ep, &id, target, 0, &opts).await else {
                assert!(!good, "a good certificate failed its handshake");
                continue;
            };
            let closed = tokio::time::timeout(LIMIT, c.closed()).await;
            let why = closed.expect("a connection to a running job stayed open");
            match why {
                quinn::ConnectionError::ApplicationClosed(a) => {
                    assert!(good, "{a:?}");
                    assert_eq!(&a.reason[..], b"job running");
                }
                other => assert!(!good, "{other}"),
            }
        }
    });
}
