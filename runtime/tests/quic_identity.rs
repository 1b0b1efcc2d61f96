//! The QUIC identity layer end to end: in-process quinn endpoints on
//! 127.0.0.1, a job CA, and every refusal case seen from the side that
//! refuses (typed error, and a `tracing` warning naming the peer's address).

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mcast::quic::{
    accept, connect, endpoint, peer_rank, rank_name, HandshakeError, JobCa, LinkOptions,
    RankIdentity, Refusal, Validity,
};

#[path = "common/quic.rs"]
mod quic_common;
use quic_common::raw_client;

/// Every test ends within this, whatever happens on the wire.
const LIMIT: Duration = Duration::from_secs(20);
const JOB: u32 = 0x00c0_ffee;

fn lo() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn ca(job: u32) -> JobCa {
    JobCa::new(job, Validity::starting_now(Duration::from_secs(3600))).unwrap()
}

const OPTS: LinkOptions = LinkOptions {
    idle_timeout: Duration::from_secs(10),
    keep_alive: Some(Duration::from_secs(2)),
};

/// A server endpoint as `a` on loopback, its address, and a client
/// endpoint as `b`.
fn endpoints(a: &RankIdentity, b: &RankIdentity) -> (quinn::Endpoint, SocketAddr, quinn::Endpoint) {
    let server = endpoint(a, lo(), &OPTS).unwrap();
    let addr = server.local_addr().unwrap();
    (server, addr, endpoint(b, lo(), &OPTS).unwrap())
}

/// A log sink: a `tracing` subscriber for this test's thread writing into
/// a buffer (the tests run on current-thread runtimes, so every task of a
/// test logs on its thread).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let sink = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || sink.clone())
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A server (as `server_id`) accepts one connection from a client dialling
/// with `client`; returns what `accept` says, the client's address, and
/// how the client's connection ended.
async fn refused_by_server(
    server_id: &RankIdentity,
    client: quinn::ClientConfig,
) -> (
    Result<mcast::quic::Accepted, HandshakeError>,
    SocketAddr,
    quinn::ConnectionError,
) {
    let server = endpoint(server_id, lo(), &OPTS).unwrap();
    let addr = server.local_addr().unwrap();
    let dialler = quinn::Endpoint::client(lo()).unwrap();
    let client_addr = dialler.local_addr().unwrap();
    let name = rank_name(server_id.job(), server_id.rank());
    let connecting = dialler.connect_with(client, addr, &name).unwrap();
    let ended = async {
        match connecting.await {
            // The client's half of the handshake can finish before the
            // server has judged the client: the refusal then closes it.
            Ok(c) => c.closed().await,
            Err(e) => e,
        }
    };
    let (accepted, ended) = tokio::join!(accept(&server, server_id, &OPTS), ended);
    (accepted, client_addr, ended)
}

/// The client saw the server end the handshake with TLS alert `alert`.
fn closed_with_alert(e: &quinn::ConnectionError, alert: u8) -> bool {
    match e {
        quinn::ConnectionError::ConnectionClosed(c) => {
            u64::from(c.error_code) == 0x100 | u64::from(alert)
        }
        _ => false,
    }
}

fn assert_logged(logs: &Logs, addr: SocketAddr, what: &str) {
    let text = logs.text();
    assert!(text.contains("WARN"), "no warning logged: {text:?}");
    assert!(text.contains(&addr.to_string()), "{addr} not in {text:?}");
    assert!(text.contains(what), "{what:?} not in {text:?}");
}

#[tokio::test]
async fn a_good_pair_connects_and_echoes() {
    tokio::time::timeout(LIMIT, async {
        let ca = ca(JOB);
        let (a, b) = (ca.issue(0).unwrap(), ca.issue(5).unwrap());
        let (server, addr, client) = endpoints(&a, &b);
        let serve = async {
            let acc = accept(&server, &a, &OPTS).await.unwrap();
            let (mut send, mut recv) = acc.connection.accept_bi().await.unwrap();
            let got = recv.read_to_end(1 << 16).await.unwrap();
            send.write_all(&got).await.unwrap();
            send.finish().unwrap();
            acc
        };
        let dial = async {
            let conn = connect(&client, &b, addr, 0, &OPTS).await.unwrap();
            let (mut send, mut recv) = conn.open_bi().await.unwrap();
            send.write_all(b"hello, rank 0").await.unwrap();
            send.finish().unwrap();
            let back = recv.read_to_end(1 << 16).await.unwrap();
            (conn, back)
        };
        let (acc, (conn, back)) = tokio::join!(serve, dial);
        assert_eq!(back, b"hello, rank 0");
        assert_eq!(acc.rank, 5, "the server learns the client's rank");
        assert_eq!(peer_rank(&acc.connection, JOB), Ok(5));
        assert_eq!(peer_rank(&conn, JOB), Ok(0));
        assert_eq!(
            acc.connection.remote_address(),
            client.local_addr().unwrap()
        );
        conn.close(0u32.into(), b"done");
    })
    .await
    .unwrap();
}

/// Path-MTU discovery climbs above Ethernet's 1452 bytes where the path
/// allows it (loopback), up to `MAX_UDP_PAYLOAD` and no further, and a
/// large transfer arrives whole at that size: ten datagrams of it fit one
/// GSO train (a train over the IP limit is refused by the kernel, and the
/// link stalls).
#[tokio::test]
async fn datagrams_grow_to_the_cap_where_the_path_allows() {
    use mcast::quic::MAX_UDP_PAYLOAD;
    tokio::time::timeout(LIMIT, async {
        let ca = ca(JOB);
        let (a, b) = (ca.issue(0).unwrap(), ca.issue(1).unwrap());
        let (server, addr, client) = endpoints(&a, &b);
        let data: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
        let serve = async {
            let acc = accept(&server, &a, &OPTS).await.unwrap();
            let mut recv = acc.connection.accept_uni().await.unwrap();
            let got = recv.read_to_end(8 << 20).await.unwrap();
            (acc, got)
        };
        let dial = async {
            let conn = connect(&client, &b, addr, 0, &OPTS).await.unwrap();
            // Discovery runs while data flows: send until the path's size
            // is found (a few round trips on loopback), then the rest.
            let mut send = conn.open_uni().await.unwrap();
            let (first, rest) = data.split_at(1 << 20);
            send.write_all(first).await.unwrap();
            while conn.stats().path.current_mtu < MAX_UDP_PAYLOAD {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            send.write_all(rest).await.unwrap();
            send.finish().unwrap();
            conn
        };
        let ((acc, got), conn) = tokio::join!(serve, dial);
        assert!(got == data, "the transfer arrived whole and in order");
        assert_eq!(conn.stats().path.current_mtu, MAX_UDP_PAYLOAD);
        drop(acc);
        conn.close(0u32.into(), b"done");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_client_without_certificate_is_refused() {
    let (logs, _guard) = Logs::capture();
    tokio::time::timeout(LIMIT, async {
        let ca = ca(JOB);
        let (a, b) = (ca.issue(0).unwrap(), ca.issue(1).unwrap());
        let (accepted, client_addr, ended) = refused_by_server(&a, raw_client(&b, 0, None)).await;
        let err = accepted.unwrap_err();
        assert_eq!(err.refusal(), Some(&Refusal::NoCertificate), "{err}");
        assert_eq!(err.addr(), Some(client_addr));
        assert!(closed_with_alert(&ended, 116), "{ended}");
        assert_logged(&logs, client_addr, "no certificate");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_client_of_another_jobs_ca_is_refused() {
    let (logs, _guard) = Logs::capture();
    tokio::time::timeout(LIMIT, async {
        let ca = ca(JOB);
        let (a, b) = (ca.issue(0).unwrap(), ca.issue(1).unwrap());
        // Another job's CA, and a CA that copies this job's id (and so its
        // name) with its own key: both unknown here.
        for other in [JOB + 1, JOB] {
            let stranger = self::ca(other).issue(1).unwrap();
            let cfg = raw_client(&b, 0, Some(&stranger));
            let (accepted, client_addr, ended) = refused_by_server(&a, cfg).await;
            let err = accepted.unwrap_err();
            assert_eq!(err.refusal(), Some(&Refusal::UnknownCa), "{err}");
            assert_eq!(err.addr(), Some(client_addr));
            assert!(closed_with_alert(&ended, 48), "unknown_ca, not {ended}");
            assert_logged(&logs, client_addr, "not issued by this job's CA");
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_server_of_the_wrong_rank_is_refused() {
    let (logs, _guard) = Logs::capture();
    tokio::time::timeout(LIMIT, async {
        let ca = ca(JOB);
        let (four, one) = (ca.issue(4).unwrap(), ca.issue(1).unwrap());
        let server = endpoint(&four, lo(), &OPTS).unwrap();
        let addr = server.local_addr().unwrap();
        let client = endpoint(&one, lo(), &OPTS).unwrap();
        let (accepted, dialled) = tokio::join!(
            accept(&server, &four, &OPTS),
            connect(&client, &one, addr, 3, &OPTS)
        );
        let err = dialled.unwrap_err();
        match err.refusal() {
            Some(Refusal::WrongRank { expected, found }) => {
                assert_eq!(*expected, Some(3));
                assert_eq!(found, &[rank_name(JOB, 4)]);
            }
            other => panic!("expected WrongRank, got {other:?} ({err})"),
        }
        assert_eq!(err.addr(), Some(addr));
        // The server hears the client's alert (bad_certificate).
        match accepted {
            Err(HandshakeError::RefusedByPeer { alert, .. }) => assert_eq!(alert, 42),
            other => panic!("the server should hear the refusal, got {other:?}"),
        }
        assert_logged(&logs, addr, "expected rank 3");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_expired_certificate_is_refused() {
    let (logs, _guard) = Logs::capture();
    tokio::time::timeout(LIMIT, async {
        let ca = ca(JOB);
        let now = SystemTime::now();
        let past = Validity::new(
            now - Duration::from_secs(7200),
            now - Duration::from_secs(3600),
        )
        .unwrap();
        let good = ca.issue(0).unwrap();
        let stale = ca.issue_with_validity(1, past).unwrap();

        // A client with an expired certificate: the server refuses it.
        let (accepted, client_addr, ended) =
            refused_by_server(&good, raw_client(&good, 0, Some(&stale))).await;
        let err = accepted.unwrap_err();
        assert_eq!(err.refusal(), Some(&Refusal::Expired), "{err}");
        assert_eq!(err.addr(), Some(client_addr));
        assert!(
            closed_with_alert(&ended, 45),
            "certificate_expired, not {ended}"
        );
        assert_logged(&logs, client_addr, "certificate expired");

        // A server with an expired certificate: the client refuses it.
        let server = endpoint(&stale, lo(), &OPTS).unwrap();
        let addr = server.local_addr().unwrap();
        let client = endpoint(&good, lo(), &OPTS).unwrap();
        let (_, dialled) = tokio::join!(
            accept(&server, &stale, &OPTS),
            connect(&client, &good, addr, 1, &OPTS)
        );
        let err = dialled.unwrap_err();
        assert_eq!(err.refusal(), Some(&Refusal::Expired), "{err}");
        assert_logged(&logs, addr, "certificate expired");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_rank_bundle_sent_as_bytes_still_connects() {
    tokio::time::timeout(LIMIT, async {
        let ca = ca(JOB);
        let a = RankIdentity::from_bytes(&ca.issue(2).unwrap().to_bytes()).unwrap();
        let b = RankIdentity::from_bytes(&ca.issue(9).unwrap().to_bytes()).unwrap();
        let (server, addr, client) = endpoints(&a, &b);
        let (acc, conn) = tokio::join!(
            accept(&server, &a, &OPTS),
            connect(&client, &b, addr, 2, &OPTS)
        );
        assert_eq!(acc.unwrap().rank, 9);
        conn.unwrap().close(0u32.into(), b"done");
    })
    .await
    .unwrap();
}

#[test]
fn bad_link_options_are_refused() {
    let id = ca(JOB).issue(0).unwrap();
    let slow = LinkOptions {
        idle_timeout: Duration::from_secs(1),
        keep_alive: Some(Duration::from_secs(1)),
    };
    assert!(mcast::quic::server_config(&id, &slow).is_err());
    assert!(mcast::quic::client_config(&id, 1, &slow).is_err());
    assert!(mcast::quic::server_config(&id, &LinkOptions::default()).is_ok());
}
