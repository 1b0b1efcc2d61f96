//! Reassembly, per-source order, lost peers and mismatches.

use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::tree_kind::TreeKind;
use crate::wire::Header;
use crate::wire::Route;
use mcast_algorithms::Shape;

fn mpkt(seq: u64, msg_len: u64, offset: u64, pkt_idx: u32, pkt_count: u32, data: &[u8]) -> Packet {
    let mut header = Header::new(Kind::Multicast, 1, seq, 0, 0, msg_len);
    header.offset = offset;
    header.pkt_idx = pkt_idx;
    header.pkt_count = pkt_count;
    header.payload_len = data.len() as u32;
    Packet {
        header,
        route: Route::List {
            tree: TreeKind::Chain(Shape::Flat),
            covers: vec![crate::wire::Member {
                rank: 1,
                ordinal: seq as u32,
            }],
        },
        payload: Bytes::copy_from_slice(data),
    }
}

#[test]
fn multicast_reassembles_out_of_order() {
    let ib = Inbox::new(1, 1 << 20);
    ib.deliver([mpkt(0, 6, 3, 1, 2, b"def"), mpkt(0, 6, 0, 0, 2, b"abc")]);
    let (src, data, _) = ib.take_multicast(0, None, Duration::from_secs(1)).unwrap();
    assert_eq!((src, &data[..]), (0, &b"abcdef"[..]));
}

#[test]
fn a_huge_length_is_refused_without_allocating() {
    let ib = Inbox::new(1, 1 << 20);
    // Claims 2^60 bytes in two packets; only 3 bytes ever arrive.
    ib.deliver([
        mpkt(0, 1 << 60, 0, 0, 2, b"abc"),
        mpkt(0, 1 << 60, 3, 1, 2, b"d"),
    ]);
    let err = ib
        .take_multicast(0, None, Duration::from_secs(1))
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("MCAST_MAX_MESSAGE_BYTES")),
        "{err}"
    );
    // The next multicast from the same source still comes through.
    ib.deliver([mpkt(1, 2, 0, 0, 1, b"ok")]);
    assert_eq!(
        &ib.take_multicast(0, None, Duration::from_secs(1))
            .unwrap()
            .1[..],
        b"ok"
    );
}

#[test]
fn one_source_can_be_waited_for_while_others_wait() {
    let ib = Inbox::new(1, 1 << 20);
    let from = |src: u32, data: &[u8]| {
        let mut p = mpkt(0, data.len() as u64, 0, 0, 1, data);
        p.header.root = src;
        p.header.source = src;
        p
    };
    ib.deliver([from(2, b"two"), from(3, b"three")]);
    let (src, d, _) = ib
        .take_multicast(0, Some(3), Duration::from_secs(1))
        .unwrap();
    assert_eq!((src, &d[..]), (3, &b"three"[..]));
    assert!(matches!(
        ib.take_multicast(0, Some(3), Duration::from_millis(10)),
        Err(Error::Timeout { .. })
    ));
    assert_eq!(
        &ib.take_multicast(0, None, Duration::from_secs(1))
            .unwrap()
            .1[..],
        b"two"
    );
}

#[test]
fn gaps_are_refused() {
    let ib = Inbox::new(1, 1 << 20);
    ib.deliver([mpkt(0, 6, 0, 0, 2, b"abc"), mpkt(0, 6, 0, 1, 2, b"abc")]);
    assert!(matches!(
        ib.take_multicast(0, None, Duration::from_secs(1)),
        Err(Error::Protocol(_))
    ));
}

#[test]
fn lost_peers_are_reported_once_to_recv_multicast() {
    let ib = Inbox::new(1, 1 << 20);
    ib.deliver([mpkt(0, 2, 0, 0, 1, b"hi")]);
    ib.lost(3, "gone".into());
    // What completed comes first, then the loss, then a timeout.
    assert_eq!(
        &ib.take_multicast(0, None, Duration::from_millis(10))
            .unwrap()
            .1[..],
        b"hi"
    );
    assert!(matches!(
        ib.take_multicast(0, None, Duration::from_millis(10)),
        Err(Error::PeerLost { rank: 3, .. })
    ));
    assert!(matches!(
        ib.take_multicast(0, None, Duration::from_millis(10)),
        Err(Error::Timeout { .. })
    ));
    assert!(ib.check_dests(&[2, 4]).is_ok());
    // Waiting on the lost source itself always names it.
    assert!(matches!(
        ib.take_multicast(0, Some(3), Duration::from_millis(10)),
        Err(Error::PeerLost { rank: 3, .. })
    ));
    // A loss another call reported is not reported again.
    ib.lost(5, "gone too".into());
    assert!(matches!(
        ib.check_dests(&[5]),
        Err(Error::PeerLost { rank: 5, .. })
    ));
    assert!(matches!(
        ib.take_multicast(0, None, Duration::from_millis(10)),
        Err(Error::Timeout { .. })
    ));
    assert!(matches!(
        ib.check_dests(&[3]),
        Err(Error::PeerLost { rank: 3, .. })
    ));
    assert!(matches!(
        ib.begin(0, Fingerprint::barrier()),
        Err((Error::PeerLost { rank: 3, .. }, None))
    ));
}

#[test]
fn probes_find_mismatches_before_and_after_the_call() {
    let a = Fingerprint::bcast(0, 8, TreeKind::Chain(Shape::Flat));
    let b = Fingerprint::bcast(1, 8, TreeKind::Chain(Shape::Flat));
    // Probe first, call later.
    let ib = Inbox::new(2, 1 << 20);
    assert!(ib.control(1, Control::Probe { seq: 0, fp: b }).is_empty());
    let (err, notice) = ib.begin(0, a).unwrap_err();
    assert!(matches!(err, Error::Mismatch { .. }), "{err}");
    assert!(matches!(notice, Some(Control::Mismatch { seq: 0, .. })));
    // Call first, probe later; then every collective is poisoned.
    let ib = Inbox::new(2, 1 << 20);
    ib.begin(0, a).unwrap();
    assert!(ib.control(1, Control::Probe { seq: 0, fp: a }).is_empty());
    let notices = ib.control(1, Control::Probe { seq: 0, fp: b });
    assert_eq!(notices.len(), 1);
    assert!(ib.begin(1, Fingerprint::barrier()).is_err());
}

#[test]
fn notices_poison_collectives() {
    let ib = Inbox::new(0, 1 << 20);
    ib.begin(0, Fingerprint::barrier()).unwrap();
    ib.control(
        2,
        Control::Mismatch {
            seq: 0,
            op: "barrier #0".into(),
            detail: "x".into(),
        },
    );
    let mut none = None;
    let what = || ("barrier #0".to_string(), String::new());
    assert!(matches!(
        ib.take_coll(0, 1, 0, Duration::from_secs(5), &what, &mut none),
        Err(Error::Mismatch { .. })
    ));
}

/// Packet `idx` of `count` of a point-to-point message of `kind` from
/// `src`: `seq`, header root `index`, `body` the whole message.
#[allow(clippy::too_many_arguments)]
fn ppkt(
    kind: Kind,
    src: u32,
    seq: u64,
    index: u32,
    body: &[u8],
    at: usize,
    end: usize,
    idx: u32,
    count: u32,
) -> Packet {
    let mut header = Header::new(kind, 1, seq, src, index, body.len() as u64);
    header.offset = at as u64;
    header.pkt_idx = idx;
    header.pkt_count = count;
    header.payload_len = (end - at) as u32;
    Packet {
        header,
        route: Route::None,
        payload: Bytes::copy_from_slice(&body[at..end]),
    }
}

fn tagged(tag: u32, data: &[u8]) -> Vec<u8> {
    [&tag.to_le_bytes()[..], data].concat()
}

#[test]
fn messages_reassemble_and_keep_their_sources_order() {
    let ib = Inbox::new(0, 1 << 20);
    let (a, b, c) = (tagged(5, b"first"), tagged(9, b"second"), tagged(5, b"x"));
    // Message 1 of rank 2 completes before message 0, out of packet order.
    ib.deliver([
        ppkt(Kind::Msg, 2, 1, 2, &b, 4, b.len(), 1, 2),
        ppkt(Kind::Msg, 2, 1, 2, &b, 0, 4, 0, 2),
        ppkt(Kind::Msg, 3, 0, 3, &c, 0, c.len(), 0, 1),
    ]);
    let t = Duration::from_millis(50);
    // Rank 2's message 1 waits for its message 0: only rank 3's is ready.
    let (src, tag, data) = ib.take_msg(0, None, None, t).unwrap();
    assert_eq!((src, tag, &data[..]), (3, 5, &b"x"[..]));
    assert!(matches!(
        ib.take_msg(0, Some(2), None, t),
        Err(Error::Timeout { .. })
    ));
    ib.deliver([ppkt(Kind::Msg, 2, 0, 2, &a, 0, a.len(), 0, 1)]);
    // By tag: the second message first, then the first.
    let (_, tag, data) = ib.take_msg(0, Some(2), Some(9), t).unwrap();
    assert_eq!((tag, &data[..]), (9, &b"second"[..]));
    let (_, tag, data) = ib.take_msg(0, None, Some(5), t).unwrap();
    assert_eq!((tag, &data[..]), (5, &b"first"[..]));
    // A lost source with nothing left is reported.
    ib.lost(2, "killed".into());
    assert!(matches!(
        ib.take_msg(0, Some(2), None, t),
        Err(Error::PeerLost { rank: 2, .. })
    ));
}

/// One-packet messages in order go straight to the host (no reassembly or
/// reorder table); one that overtakes another still waits for it, and a
/// refused or tagless one still fails on its own.
#[test]
fn one_packet_messages_keep_their_order_and_checks() {
    let ib = Inbox::new(0, 64);
    let m: Vec<Vec<u8>> = (0..4u8).map(|i| tagged(7, &[i])).collect();
    let one = |seq: u64, body: &[u8]| ppkt(Kind::Msg, 2, seq, 2, body, 0, body.len(), 0, 1);
    ib.deliver([one(0, &m[0]), one(1, &m[1]), one(3, &m[3])]);
    let t = Duration::from_millis(50);
    for want in 0..2u8 {
        let (src, tag, data) = ib.take_msg(0, None, None, t).unwrap();
        assert_eq!((src, tag, &data[..]), (2, 7, &[want][..]));
    }
    // Message 3 came before 2: it waits.
    assert!(matches!(
        ib.take_msg(0, None, None, t),
        Err(Error::Timeout { .. })
    ));
    ib.deliver([one(2, &m[2])]);
    for want in 2..4u8 {
        let (_, _, data) = ib.take_msg(0, None, None, t).unwrap();
        assert_eq!(&data[..], &[want][..]);
    }
    // Too long for this inbox (64 bytes), and too short to hold a tag.
    let long = tagged(7, &[0; 100]);
    ib.deliver([one(4, &long), one(5, &[1, 2])]);
    assert!(matches!(
        ib.take_msg(0, None, None, t),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        ib.take_msg(0, None, None, t),
        Err(Error::Protocol(_))
    ));
}

#[test]
fn a_collective_message_carries_its_call() {
    use crate::control::OpKind;
    let mine = Fingerprint::data(OpKind::Allreduce, 0, 8, 1, 10);
    let theirs = Fingerprint::data(OpKind::Allreduce, 0, 8, 4, 10);
    let body = |fp: Fingerprint| [&fp.to_bytes()[..], &[7u8; 8][..]].concat();
    let ib = Inbox::new(0, 1 << 20);
    ib.begin(0, mine).unwrap();
    let ok = body(mine);
    assert!(ib
        .deliver([ppkt(Kind::P2p, 1, 0, 0, &ok, 0, 24, 0, 1)])
        .is_empty());
    let what = || ("allreduce #0".to_string(), String::new());
    let t = Duration::from_millis(50);
    assert_eq!(
        &ib.take_coll(0, 1, 0, t, &what, &mut None).unwrap()[..],
        &[7u8; 8]
    );
    // The next collective: a peer's message arrives before this rank
    // enters it, with a different operator; entering finds the mismatch.
    let bad = body(theirs);
    assert!(ib
        .deliver([ppkt(Kind::P2p, 2, 1, 0, &bad, 0, 24, 0, 1)])
        .is_empty());
    let (err, notice) = ib.begin(1, mine).unwrap_err();
    assert!(notice.is_some(), "the finder tells every rank");
    assert!(err.to_string().contains("reduces with Max"), "{err}");
}

/// Two peers' messages arrive before this rank enters the collective: the
/// first agrees with this rank's call, the second does not. Entering finds
/// the second (an early fix kept only the first call seen, and the second
/// peer's data was then taken unchecked: a length error instead of the
/// mismatch, in `tests/coll.rs::mismatches_fail_every_rank`).
#[test]
fn entering_checks_every_call_that_came_early() {
    use crate::control::OpKind;
    let mine = Fingerprint::data(OpKind::Allreduce, 0, 8, 1, 10);
    let other = Fingerprint::data(OpKind::Allreduce, 0, 8, 1, 12);
    let body = |fp: Fingerprint| [&fp.to_bytes()[..], &[7u8; 8][..]].concat();
    let ib = Inbox::new(0, 1 << 20);
    let (ok, bad) = (body(mine), body(other));
    assert!(ib
        .deliver([
            ppkt(Kind::P2p, 1, 0, 0, &ok, 0, 24, 0, 1),
            ppkt(Kind::P2p, 2, 0, 0, &bad, 0, 24, 0, 1),
            ppkt(Kind::P2p, 1, 0, 1, &ok, 0, 24, 0, 1),
        ])
        .is_empty());
    let (err, notice) = ib.begin(0, mine).unwrap_err();
    assert!(notice.is_some(), "the finder tells every rank");
    assert!(err.to_string().contains("rank 2"), "{err}");
}

#[test]
fn a_mismatch_poisons_its_communicator_only_even_before_this_rank_joins() {
    use crate::wire::comm_base;
    let notice = |comm: u32| Control::Mismatch {
        seq: comm_base(comm),
        op: format!("allreduce #0 on communicator {comm}"),
        detail: "x".into(),
    };
    let ib = Inbox::new(2, 1 << 20);
    // Rank 4 found one on communicator 1 while this rank was in split;
    // rank 3, not a member of this rank's communicator 2, sends one for it.
    ib.control(4, notice(1));
    ib.control(3, notice(2));
    ib.add_group(1, vec![4, 2, 0].into());
    ib.add_group(2, vec![2, 5].into());
    let err = ib
        .begin(comm_base(1) | 1, Fingerprint::barrier())
        .unwrap_err()
        .0;
    assert!(matches!(err, Error::Mismatch { .. }), "{err}");
    // The world and communicator 2 go on.
    ib.begin(0, Fingerprint::barrier()).unwrap();
    ib.begin(comm_base(2), Fingerprint::barrier()).unwrap();
    assert_eq!(ib.mismatch_notices().len(), 1);
}

#[test]
fn a_departure_fails_only_what_it_did_not_complete_in_each_communicator() {
    let ib = Inbox::new(2, 1 << 20);
    ib.add_group(3, vec![1, 2].into());
    ib.add_group(4, vec![1, 2].into());
    // Rank 1 completed the world's 0..5 and communicator 3's first two
    // collectives, none of communicator 4's, and left.
    let next = [5, comm_base(3) | 2];
    ib.departed(1, &next, 0, "left".into());
    let blocked = |seq: u64| ib.begin(seq, Fingerprint::barrier()).is_err();
    assert!(!blocked(4), "the world's fifth it completed");
    assert!(blocked(5));
    // A completed collective of a sub-communicator (numbered far above the
    // world's) still completes here: its result may be on the way.
    assert!(!blocked(comm_base(3) | 1));
    assert!(blocked(comm_base(3) | 2));
    assert!(blocked(comm_base(4)));
    // A peer that names it as its cause later, at earlier collectives: the
    // earliest of each holds, and a communicator that peer does not list
    // is failed from its start.
    ib.departed(1, &[3], 0, "cause".into());
    assert!(blocked(4));
    assert!(!blocked(2));
    assert!(blocked(comm_base(3) | 1));
}

#[test]
fn calls_keep_each_communicators_recent_history() {
    use super::state::{Calls, CALL_HISTORY};
    use crate::control::{Fingerprint, OpKind};
    let fp = |len: u64| Fingerprint {
        op: OpKind::Bcast,
        root: 0,
        len,
        tree: (0, 0),
    };
    let sub = crate::wire::comm_base(3);
    let mut c = Calls::default();
    assert_eq!(c.last(0), None);
    let n = CALL_HISTORY as u64 + 10;
    for s in 0..n {
        c.insert(s, fp(s));
        if s % 100 == 0 {
            c.insert(sub + s / 100, fp(7));
        }
    }
    // The world keeps its newest call and the CALL_HISTORY numbers before
    // it; the quiet sub-communicator keeps all of its few.
    let h = CALL_HISTORY as u64;
    assert_eq!(c.last(0), Some(n - 1));
    assert_eq!(c.get(n - 1).map(|f| f.len), Some(n - 1));
    assert_eq!(c.get(n - 1 - h).map(|f| f.len), Some(n - 1 - h));
    assert!(!c.contains(n - 2 - h));
    assert!(!c.contains(n));
    assert!(c.contains(sub));
    assert_eq!(c.last(3), Some(sub + (n - 1) / 100));
    assert_eq!(c.last(4), None);
    // A number again replaces its fingerprint; an older one not yet seen
    // goes in its place.
    c.insert(n - 1, fp(1));
    assert_eq!(c.get(n - 1).map(|f| f.len), Some(1));
    c.insert(sub + 1_000, fp(8));
    c.insert(sub + 500, fp(9));
    assert_eq!(c.get(sub + 500).map(|f| f.len), Some(9));
    assert_eq!(c.get(sub + 1_000).map(|f| f.len), Some(8));
    assert_eq!(c.last(3), Some(sub + 1_000));
    assert!(!c.contains(sub + 501));
}
