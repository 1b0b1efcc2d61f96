//! The rendezvous over TLS, end to end on the loopback: a job completes
//! with TLS ranks; plaintext, another CA, no certificate, an expired
//! certificate and a hello for another rank than its certificate's are
//! refused (and logged with the peer's address) while the job keeps
//! waiting; a TLS rank facing a plaintext rendezvous fails clearly.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime};

use super::tls;
use super::{Notice, Notify, Server};
use crate::bootstrap::{
    job_id_from_token, read_frame, write_frame, Hello, RendezvousReply, PROTOCOL_VERSION,
};
use crate::error::Error;
use crate::quic::{JobCa, RankIdentity, Validity};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
/// Bound on everything a test waits for.
const WAIT: Duration = Duration::from_secs(20);

fn ca_for(token: &str) -> JobCa {
    let lifetime = Validity::starting_now(Duration::from_secs(3600));
    JobCa::new(job_id_from_token(token), lifetime).unwrap()
}

fn hello(rank: u32, size: u32) -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        token: TOKEN.into(),
        rank,
        size,
        data_addr: format!("127.0.0.1:{}", 1000 + rank),
        pid: 100 + rank,
    }
}

/// A TLS server for `size` ranks of `ca`'s job, and its notices.
fn serve(ca: &JobCa, size: u32) -> (Server, mpsc::Receiver<Notice>) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let notify: Notify = Arc::new(move |n| {
        let _ = tx.lock().unwrap().send(n);
    });
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let id = ca.issue_rendezvous().unwrap();
    let server = Server::start_tls(listener, size, TOKEN.into(), WAIT, notify, &id).unwrap();
    (server, rx)
}

fn stream(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.set_write_timeout(Some(WAIT)).unwrap();
    s
}

/// A rank's exchange over TLS, on its own thread.
fn dial(
    addr: SocketAddr,
    id: RankIdentity,
    h: Hello,
) -> thread::JoinHandle<Result<RendezvousReply, Error>> {
    thread::spawn(move || tls::exchange(stream(addr), addr, &id, &h, WAIT))
}

/// The next note (skipping nothing else: a note is what a refusal gives).
fn next_note(rx: &mpsc::Receiver<Notice>) -> String {
    match rx.recv_timeout(WAIT).unwrap() {
        Notice::Note(m) => m,
        other => panic!("expected a note, got {other:?}"),
    }
}

/// Ranks `ranks` of `ca` join; every one gets the whole table and the
/// server says complete.
fn complete(addr: SocketAddr, ca: &JobCa, ranks: &[u32], size: u32, rx: &mpsc::Receiver<Notice>) {
    let joins: Vec<_> = ranks
        .iter()
        .map(|&r| dial(addr, ca.issue(r).unwrap(), hello(r, size)))
        .collect();
    for j in joins {
        match j.join().unwrap().unwrap() {
            RendezvousReply::Table { job, addrs } => {
                assert_eq!(job, job_id_from_token(TOKEN));
                assert_eq!(addrs.len(), size as usize);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(rx.recv_timeout(WAIT).unwrap(), Notice::Complete);
}

#[test]
fn tls_ranks_complete_a_table() {
    let ca = ca_for(TOKEN);
    let (server, rx) = serve(&ca, 4);
    complete(server.addr(), &ca, &[3, 0, 2, 1], 4, &rx);
}

#[test]
fn a_plaintext_rank_is_refused_and_the_job_goes_on() {
    let ca = ca_for(TOKEN);
    let (server, rx) = serve(&ca, 2);
    let addr = server.addr();
    let mut plain = stream(addr);
    let local = plain.local_addr().unwrap();
    write_frame(&mut plain, &hello(0, 2)).unwrap();
    let back = read_frame::<_, RendezvousReply>(&mut plain);
    assert!(
        !matches!(back, Ok(RendezvousReply::Table { .. })),
        "{back:?}"
    );
    let note = next_note(&rx);
    assert!(note.contains(&local.to_string()), "{note}");
    assert!(note.contains("does not speak TLS"), "{note}");
    complete(addr, &ca, &[0, 1], 2, &rx);
}

/// A raw TLS client that trusts `ca` and presents `cert` (or nothing).
fn raw_client(
    addr: SocketAddr,
    ca: &JobCa,
    cert: Option<&RankIdentity>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.cert_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match cert {
        None => builder.with_no_client_auth(),
        Some(id) => builder
            .with_client_auth_cert(id.chain().to_vec(), id.key())
            .unwrap(),
    };
    config.alpn_protocols = vec![crate::quic::rdv::RENDEZVOUS_ALPN.to_vec()];
    let name = crate::quic::rdv::server_name(ca.job()).unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    rustls::StreamOwned::new(conn, stream(addr))
}

#[test]
fn another_jobs_ca_is_refused() {
    let ca = ca_for(TOKEN);
    let (server, rx) = serve(&ca, 2);
    let addr = server.addr();
    // A rank certificate of another CA that even claims the same job id,
    // from a client that trusts this rendezvous.
    let stranger = ca_for(TOKEN).issue(0).unwrap();
    let mut s = raw_client(addr, &ca, Some(&stranger));
    let _ = write_frame(&mut s, &hello(0, 2));
    assert!(read_frame::<_, RendezvousReply>(&mut s).is_err());
    let note = next_note(&rx);
    assert!(note.contains("not issued by this job's CA"), "{note}");
    assert!(note.contains("127.0.0.1"), "{note}");
    // A rank of that other CA refuses this rendezvous in turn.
    let r = dial(addr, stranger, hello(0, 2)).join().unwrap();
    let text = r.unwrap_err().to_string();
    assert!(text.contains("does not trust"), "{text}");
    let note = next_note(&rx);
    assert!(
        note.contains("refused the rendezvous's certificate"),
        "{note}"
    );
    complete(addr, &ca, &[0, 1], 2, &rx);
}

#[test]
fn a_rank_without_a_certificate_is_refused() {
    let ca = ca_for(TOKEN);
    let (server, rx) = serve(&ca, 1);
    let addr = server.addr();
    // A client that trusts the rendezvous but presents nothing.
    let mut s = raw_client(addr, &ca, None);
    let _ = write_frame(&mut s, &hello(0, 1));
    let _ = s.flush();
    assert!(read_frame::<_, RendezvousReply>(&mut s).is_err());
    let note = next_note(&rx);
    assert!(note.contains("no certificate presented"), "{note}");
    complete(addr, &ca, &[0], 1, &rx);
}

#[test]
fn an_expired_certificate_is_refused() {
    let ca = ca_for(TOKEN);
    let (server, rx) = serve(&ca, 1);
    let addr = server.addr();
    let t = SystemTime::now();
    let past = Validity::new(t - Duration::from_secs(7200), t - Duration::from_secs(3600));
    let stale = ca.issue_with_validity(0, past.unwrap()).unwrap();
    let r = dial(addr, stale, hello(0, 1)).join().unwrap();
    assert!(r.is_err(), "{r:?}");
    let note = next_note(&rx);
    assert!(note.contains("certificate expired"), "{note}");
    complete(addr, &ca, &[0], 1, &rx);
}

#[test]
fn a_hello_for_another_rank_than_the_certificate_is_refused() {
    let ca = ca_for(TOKEN);
    let (server, rx) = serve(&ca, 2);
    let addr = server.addr();
    let r = dial(addr, ca.issue(1).unwrap(), hello(0, 2))
        .join()
        .unwrap();
    match r {
        Ok(RendezvousReply::Failed { reason }) => {
            assert!(reason.contains("certificate names rank 1"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let note = next_note(&rx);
    assert!(
        note.contains("certificate names rank 1, its hello claims rank 0"),
        "{note}"
    );
    assert!(note.contains("127.0.0.1"), "{note}");
    // Rank 0 was not taken: both real ranks still join.
    complete(addr, &ca, &[0, 1], 2, &rx);
}

#[test]
fn a_silent_stray_costs_nothing() {
    let ca = ca_for(TOKEN);
    let (server, rx) = serve(&ca, 1);
    drop(stream(server.addr()));
    complete(server.addr(), &ca, &[0], 1, &rx);
}

#[test]
fn a_tls_rank_facing_a_plaintext_rendezvous_fails_clearly() {
    let ca = ca_for(TOKEN);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let notify: Notify = Arc::new(|_| {});
    let server = Server::start(listener, 1, TOKEN.into(), WAIT, notify).unwrap();
    let addr = server.addr();
    let s = TcpStream::connect(addr).unwrap();
    let quick = Duration::from_millis(500);
    s.set_read_timeout(Some(quick)).unwrap();
    let e = tls::exchange(s, addr, &ca.issue(0).unwrap(), &hello(0, 1), quick).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("mclaunch"), "{text}");
}

#[test]
fn a_server_identity_of_another_job_is_refused() {
    let other = ca_for("another token");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let notify: Notify = Arc::new(|_| {});
    let id = other.issue_rendezvous().unwrap();
    let r = Server::start_tls(listener, 1, TOKEN.into(), WAIT, notify, &id);
    assert!(r.is_err());
}
