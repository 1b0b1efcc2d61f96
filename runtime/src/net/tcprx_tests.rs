//! `TcpRx` read from the host's side (no runtime driving it): packets
//! whose bytes come in any fragments, straight-to-buffer payloads, and the
//! failures it keeps for the link's task.

use std::io::Write;

use bytes::BytesMut;

use super::super::intake::probe::Probe;
use super::*;
use crate::tree_kind::TreeKind;
use crate::wire::Member;

const JOB: u32 = 7;

/// A link from rank 1 to rank 0 of a 4-rank job: the peer's end, the
/// receive side (registered with `rt`, which nobody drives) and the probe.
fn link(rt: &tokio::runtime::Runtime) -> (std::net::TcpStream, TcpRx, Arc<Probe>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let peer = std::net::TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
    let (ours, _) = l.accept().expect("accept");
    ours.set_nonblocking(true).expect("nonblocking");
    let _guard = rt.enter();
    let ours = tokio::net::TcpStream::from_std(ours).expect("tokio stream");
    let (rd, _wr) = ours.into_split();
    let probe = Arc::new(Probe::new());
    let intake = Intake::new(probe.clone(), JOB, 4, 0);
    (peer, TcpRx::new(1, rd, intake, None, None), probe)
}

fn encoded(route: &Route, payload: &[u8]) -> Vec<u8> {
    let header = Header::new(Kind::Bcast, JOB, 4, 1, 1, payload.len() as u64);
    let mut b = BytesMut::new();
    crate::wire::encode_head(header, route, payload.len(), &mut b);
    b.extend_from_slice(payload);
    b.to_vec()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Poll until `n` packets came (bounded).
fn poll_for(rx: &TcpRx, probe: &Probe, n: usize) {
    let end = Instant::now() + Duration::from_secs(10);
    while lock(&probe.got).len() < n {
        assert!(
            Instant::now() < end,
            "only {} of {n} packets",
            lock(&probe.got).len()
        );
        rx.poll();
        std::thread::yield_now();
    }
}

/// Small packets, one with a list route, and a payload larger than the
/// buffer, in fragments of every size from 1 byte: the same packets, in
/// order, whatever the fragments.
#[test]
fn packets_come_whole_and_in_order_whatever_the_fragments() {
    let rt = rt();
    let (mut peer, rx, probe) = link(&rt);
    let list = Route::List {
        tree: TreeKind::Hosts { k: 0 },
        covers: (0..40).map(|rank| Member { rank, ordinal: 3 }).collect(),
    };
    let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let sent = [
        (Route::None, b"a".to_vec()),
        (list.clone(), b"routed".to_vec()),
        (Route::None, Vec::new()),
        (Route::None, big.clone()),
        (list, big[..READ_BUFFER + 3].to_vec()),
        (Route::None, b"last".to_vec()),
    ];
    let wire: Vec<u8> = sent.iter().flat_map(|(r, p)| encoded(r, p)).collect();
    let mut at = 0;
    for size in (1..).cycle() {
        if at == wire.len() {
            break;
        }
        let n = size.min(wire.len() - at);
        peer.write_all(&wire[at..at + n]).expect("write");
        at += n;
        rx.poll();
    }
    poll_for(&rx, &probe, sent.len());
    let got = lock(&probe.got);
    for (i, ((route, payload), (from, p))) in sent.iter().zip(got.iter()).enumerate() {
        assert_eq!(*from, 1, "packet {i}");
        assert_eq!(&p.route, route, "packet {i}");
        assert_eq!(&p.payload[..], &payload[..], "packet {i}");
    }
    assert!(rx.take_failure().is_none());
}

/// A header that is not one, and the peer's close, are kept for the task
/// (which reports them), and nothing more is read after.
#[test]
fn a_broken_header_or_a_close_is_kept_for_the_task() {
    let rt = rt();
    let (mut peer, rx, probe) = link(&rt);
    peer.write_all(&[0xab; HEADER_LEN]).expect("write");
    let end = Instant::now() + Duration::from_secs(10);
    while lock(&rx.st).failed.is_none() {
        assert!(Instant::now() < end, "the broken header went unnoticed");
        rx.poll();
    }
    assert!(matches!(rx.take_failure(), Some(Stop::Violation(_))));
    assert!(rx.take_failure().is_none(), "reported once");
    peer.write_all(&encoded(&Route::None, b"late"))
        .expect("write");
    assert!(!rx.poll(), "read after its failure");

    let (mut peer, rx, probe2) = link(&rt);
    peer.write_all(&encoded(&Route::None, b"x")).expect("write");
    drop(peer);
    let end = Instant::now() + Duration::from_secs(10);
    while lock(&rx.st).failed.is_none() {
        assert!(Instant::now() < end, "the close went unnoticed");
        rx.poll();
    }
    assert_eq!(lock(&probe2.got).len(), 1, "the packet before the close");
    match rx.take_failure() {
        Some(Stop::Read(ReadFail::Io(e))) => {
            assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof)
        }
        _ => panic!("not a close"),
    }
    assert!(lock(&probe.got).is_empty());
}
