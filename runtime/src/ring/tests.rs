use super::*;
use crate::wire::{Header, Kind, Packet, Route, ShmDesc};
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn packet(source: u32, seq: u64, len: usize) -> Packet {
    let payload: Vec<u8> = (0..len).map(|i| (i as u64 + seq) as u8).collect();
    let mut header = Header::new(Kind::P2p, 7, seq, source, source, len as u64);
    header.payload_len = len as u32;
    Packet {
        header,
        route: Route::None,
        payload: Bytes::from(payload),
    }
}

/// Drain ring `from`, collecting packets.
fn take(rx: &mut Rx, seg: &Segment, from: usize) -> Result<(Vec<Taken>, bool), String> {
    let mut got = Vec::new();
    let (_, ask) = rx.drain(seg, from, &mut |_| Ok(()), &mut |t| {
        got.push(t);
        Ok(())
    })?;
    Ok((got, ask))
}

/// A thread that sleeps on `seg`'s bell (having seen `seen`) for at most
/// `max`, and returns how long it slept.
fn sleep_in_thread(
    seg: &Arc<Segment>,
    seen: u32,
    max: Duration,
) -> std::thread::JoinHandle<Duration> {
    let seg = seg.clone();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        seg.sleep(seen, max);
        t0.elapsed()
    })
}

#[test]
fn packets_wrap_around_the_ring_in_order() {
    let seg = Segment::heap(2, MIN_RING_BYTES);
    let mut tx = Tx::new(1, &seg).unwrap();
    let mut rx = Rx::default();
    // Sizes that do not divide the ring: every position of the wrap is hit.
    let mut sent = 0u64;
    let mut got = 0u64;
    for round in 0..400u64 {
        let len = (round as usize * 37) % 700;
        assert_eq!(tx.send(&seg, &packet(1, round, len), None), Ok(Sent::All));
        sent += 1;
        if round % 3 == 2 {
            let (ps, _) = take(&mut rx, &seg, 1).unwrap();
            for (p, flags) in ps {
                assert_eq!(flags, 0);
                assert_eq!(p, packet(1, got, (got as usize * 37) % 700));
                got += 1;
            }
        }
    }
    let (ps, _) = take(&mut rx, &seg, 1).unwrap();
    got += ps.len() as u64;
    assert_eq!(got, sent);
    assert!(seg.tail(1).load(Ordering::Relaxed) > 20 * MIN_RING_BYTES as u64);
    assert_eq!(seg.unread(1), 0);
}

#[test]
fn a_full_ring_keeps_the_rest_and_the_reader_asks_for_more() {
    let seg = Segment::heap(2, MIN_RING_BYTES);
    let mut tx = Tx::new(0, &seg).unwrap();
    let mut rx = Rx::default();
    // Three packets of 1900 bytes: the third does not fit whole.
    let ps: Vec<Packet> = (0..3).map(|i| packet(0, i, 1900)).collect();
    assert_eq!(tx.send(&seg, &ps[0], None), Ok(Sent::All));
    assert_eq!(tx.send(&seg, &ps[1], None), Ok(Sent::All));
    assert_eq!(tx.send(&seg, &ps[2], None), Ok(Sent::Pending));
    assert!(tx.pending());
    assert_eq!(seg.unread(0), MIN_RING_BYTES as u64, "the ring is full");
    // The reader takes the two whole ones and the start of the third, and
    // is asked to ring the sender's bell.
    let (got, ask) = take(&mut rx, &seg, 0).unwrap();
    assert_eq!(got.len(), 2);
    assert!(ask);
    // More sends queue behind the pending bytes, in order.
    assert_eq!(tx.send(&seg, &packet(0, 3, 10), None), Ok(Sent::All));
    assert!(!tx.pending());
    let (got, ask) = take(&mut rx, &seg, 0).unwrap();
    assert!(!ask);
    let got: Vec<Packet> = got.into_iter().map(|(p, _)| p).collect();
    assert_eq!(got, vec![ps[2].clone(), packet(0, 3, 10)]);
}

#[test]
fn a_packet_larger_than_the_ring_streams_through() {
    let seg = Segment::heap(2, MIN_RING_BYTES);
    let mut tx = Tx::new(1, &seg).unwrap();
    let mut rx = Rx::default();
    let big = packet(1, 9, 100_000);
    assert_eq!(tx.send(&seg, &big, None), Ok(Sent::Pending));
    let mut got = Vec::new();
    for _ in 0..100 {
        let (ps, _) = take(&mut rx, &seg, 1).unwrap();
        got.extend(ps);
        if tx.flush(&seg).unwrap() == Sent::All && seg.unread(1) == 0 && !got.is_empty() {
            break;
        }
    }
    let (ps, _) = take(&mut rx, &seg, 1).unwrap();
    got.extend(ps);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, big);
}

#[test]
fn a_slow_reader_on_another_thread_gets_everything_in_order() {
    let seg = Arc::new(Segment::heap(3, MIN_RING_BYTES));
    let reader = {
        let seg = seg.clone();
        std::thread::spawn(move || {
            let mut rx = Rx::default();
            let mut next = 0u64;
            let deadline = Instant::now() + Duration::from_secs(60);
            while next < 2000 && Instant::now() < deadline {
                let seen = seg.bell_now();
                let (ps, _) = take(&mut rx, &seg, 2).expect("valid stream");
                for (p, _) in ps {
                    assert_eq!(p, packet(2, next, (next as usize * 13) % 900));
                    next += 1;
                }
                if next.is_multiple_of(7) {
                    std::thread::sleep(Duration::from_micros(200)); // slow on purpose
                }
                seg.sleep(seen, Duration::from_millis(5));
            }
            next
        })
    };
    let mut tx = Tx::new(2, &seg).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..2000u64 {
        let _ = tx
            .send(&seg, &packet(2, i, (i as usize * 13) % 900), None)
            .unwrap();
    }
    while tx.pending() && Instant::now() < deadline {
        let _ = tx.flush(&seg).unwrap();
        std::thread::yield_now();
    }
    assert_eq!(reader.join().unwrap(), 2000);
}

#[test]
fn impossible_indices_and_bytes_are_errors_not_reads() {
    let seg = Segment::heap(2, MIN_RING_BYTES);
    // A tail too far ahead.
    seg.tail(1)
        .store(MIN_RING_BYTES as u64 + 1, Ordering::Relaxed);
    assert!(take(&mut Rx::default(), &seg, 1).is_err());
    // A head the sender cannot have left behind.
    seg.tail(1).store(0, Ordering::Relaxed);
    seg.head(1).store(5, Ordering::Relaxed);
    assert!(Tx::new(1, &seg).is_err());
    // One that goes wrong later is caught when the sender next reads it:
    // when the room it counted from the head it saw runs short.
    seg.head(1).store(0, Ordering::Relaxed);
    let mut tx = Tx::new(1, &seg).unwrap();
    seg.head(1).store(1 << 40, Ordering::Relaxed);
    assert_eq!(tx.send(&seg, &packet(1, 0, 3), None), Ok(Sent::All));
    assert!(tx.send(&seg, &packet(1, 0, MIN_RING_BYTES), None).is_err());
    // Garbage where a header should be.
    let seg = Segment::heap(2, MIN_RING_BYTES);
    seg.put(0, 0, &[0xAB; 200]);
    seg.tail(0).store(200, Ordering::Relaxed);
    assert!(take(&mut Rx::default(), &seg, 0).is_err());
    // No ring for that rank.
    assert!(take(&mut Rx::default(), &seg, 2).is_err());
    assert!(Tx::new(2, &seg).is_err());
    // A header the check refuses.
    let seg = Segment::heap(2, MIN_RING_BYTES);
    let mut tx = Tx::new(0, &seg).unwrap();
    tx.send(&seg, &packet(0, 1, 5), None).unwrap();
    let r = Rx::default().drain(&seg, 0, &mut |_| Err("no".into()), &mut |_| Ok(()));
    assert_eq!(r, Err("no".into()));
}

#[test]
fn descriptors_travel_flagged() {
    let seg = Segment::heap(2, MIN_RING_BYTES);
    let mut tx = Tx::new(0, &seg).unwrap();
    let p = packet(0, 1, 50_000);
    let d = ShmDesc {
        owner: 0,
        len: 50_000,
        slot: 0,
        data: 64,
    };
    assert_eq!(tx.send(&seg, &p, Some(&d)), Ok(Sent::All));
    let (got, _) = take(&mut Rx::default(), &seg, 0).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, crate::wire::FLAG_SHM);
    assert_eq!(ShmDesc::decode(&got[0].0.payload).unwrap(), d);
}

#[test]
fn the_doorbell_wakes_a_sleeper_and_a_quiet_one_times_out() {
    let seg = Arc::new(Segment::heap(2, MIN_RING_BYTES));
    let seen = seg.bell_now();
    let t0 = Instant::now();
    seg.sleep(seen, Duration::from_millis(20));
    assert!(t0.elapsed() >= Duration::from_millis(15), "slept its time");
    let sleeper = sleep_in_thread(&seg, seen, Duration::from_secs(30));
    // Ring until the sleeper is gone (a ring before it sleeps also counts:
    // the bell has moved, so it does not sleep at all).
    let mut tx = Tx::new(1, &seg).unwrap();
    tx.send(&seg, &packet(1, 0, 1), None).unwrap();
    assert!(sleeper.join().unwrap() < Duration::from_secs(30));
}

#[test]
fn segments_in_files_open_checked() {
    let path = format!("/dev/shm/mcast-test-ring-{}", std::process::id());
    let own = Segment::create(&path, 3, 8192).expect("create");
    let peer = Segment::open(&path, 3).expect("open");
    assert!(Segment::open(&path, 4).is_err(), "wrong rank count");
    own.unlink();
    assert!(Segment::open(&path, 3).is_err(), "unlinked");
    let mut tx = Tx::new(2, &peer).unwrap();
    tx.send(&peer, &packet(2, 4, 100), None).unwrap();
    let (got, _) = take(&mut Rx::default(), &own, 2).unwrap();
    assert_eq!(got[0].0, packet(2, 4, 100));
    assert!(
        Segment::create(&path, 3, 5000).is_err(),
        "not a power of two"
    );
    assert_eq!(auto_ring_bytes(4), 256 << 10);
    assert_eq!(auto_ring_bytes(64), 8 << 10);
    assert_eq!(auto_ring_bytes(1000), MIN_RING_BYTES);
}

#[test]
fn an_owner_asleep_in_its_runtime_asks_to_be_poked() {
    let seg = Segment::heap(2, MIN_RING_BYTES);
    let mut tx = Tx::new(1, &seg).unwrap();
    // Awake: a send rings the bell and asks nothing more.
    tx.send(&seg, &packet(1, 0, 3), None).unwrap();
    assert!(!tx.take_poke());
    let seen = seg.bell_now();
    let _ = take(&mut Rx::default(), &seg, 1).unwrap();
    // Asleep in the runtime: the next send asks for a poke, once.
    assert!(seg.sleep_in_runtime(seen), "nothing new since `seen`");
    tx.send(&seg, &packet(1, 1, 3), None).unwrap();
    assert!(tx.take_poke());
    assert!(!tx.take_poke());
    seg.awake();
    // A bell that moved before the owner went to sleep keeps it awake.
    assert!(!seg.sleep_in_runtime(seen));
    seg.awake();
    assert_eq!(seg.ring_bell(), Bell::Rung);
}

#[test]
fn barrier_flags_are_apart_from_each_other_and_from_the_rings() {
    let seg = Segment::heap(3, MIN_RING_BYTES);
    let mut tx = Tx::new(2, &seg).unwrap();
    assert_eq!(tx.send(&seg, &packet(2, 5, 300), None), Ok(Sent::All));
    let tail = seg.tail(2).load(Ordering::Relaxed);
    // Every (sender, slot, flag) is its own word.
    let all = |f: &dyn Fn(usize, usize, Flag) -> u64| {
        for s in 0..3 {
            for slot in 0..FLAG_SLOTS {
                for which in [Flag::Arrive, Flag::Release] {
                    f(s, slot, which);
                }
            }
        }
    };
    let value = |s: usize, slot: usize, which: Flag| {
        ((s * FLAG_SLOTS + slot) * 2 + which as usize + 1) as u64
    };
    all(&|s, slot, which| {
        let v = value(s, slot, which);
        seg.flag(s, slot, which)
            .unwrap()
            .store(v, Ordering::Relaxed);
        v
    });
    all(&|s, slot, which| {
        let got = seg.flag(s, slot, which).unwrap().load(Ordering::Relaxed);
        assert_eq!(
            got,
            value(s, slot, which),
            "sender {s} slot {slot} {which:?}"
        );
        got
    });
    // The rings did not move, and their bytes are intact.
    assert_eq!(seg.tail(2).load(Ordering::Relaxed), tail);
    let mut rx = Rx::default();
    let (ps, _) = take(&mut rx, &seg, 2).unwrap();
    assert_eq!(ps, vec![(packet(2, 5, 300), 0)]);
    // Out of range is refused, not a read elsewhere.
    assert!(seg.flag(3, 0, Flag::Arrive).is_none());
    assert!(seg.flag(0, FLAG_SLOTS, Flag::Release).is_none());
}

/// The host thread and the background thread may both sleep on the bell;
/// when one of them wakes (its nap ran out), the next ringer must still
/// wake the other.
#[test]
fn a_ring_wakes_a_sleeper_after_another_sleeper_left() {
    let seg = Arc::new(Segment::heap(2, MIN_RING_BYTES));
    let seen = seg.bell_now();
    let long = sleep_in_thread(&seg, seen, Duration::from_secs(10));
    // Until the long sleeper has said it sleeps.
    let deadline = Instant::now() + Duration::from_secs(10);
    while seg.sleeping().load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the sleeper never slept");
        std::thread::yield_now();
    }
    // A second sleeper comes and goes (its nap runs out).
    seg.sleep(seen, Duration::from_millis(1));
    assert_eq!(seg.ring_bell(), Bell::Rung);
    let slept = long.join().unwrap();
    assert!(
        slept < Duration::from_secs(5),
        "the ring did not wake the first sleeper ({slept:?})"
    );
}

/// A packet sent from borrowed parts (`Tx::send_parts`: the root's inline
/// bcast) puts the same bytes in the ring as the packet sent whole, also
/// across the wrap and through the pending queue of a full ring.
#[test]
fn parts_and_whole_packets_write_the_same_bytes() {
    let whole = Segment::heap(2, MIN_RING_BYTES);
    let parts = Segment::heap(2, MIN_RING_BYTES);
    let (mut tw, mut tp) = (Tx::new(1, &whole).unwrap(), Tx::new(1, &parts).unwrap());
    let (mut rw, mut rp) = (Rx::default(), Rx::default());
    for round in 0..300u64 {
        let p = packet(1, round, (round as usize * 53) % 1500);
        let a = tw.send(&whole, &p, None).unwrap();
        let b = tp
            .send_parts(&parts, p.header, &p.route, &p.payload)
            .unwrap();
        assert_eq!(a, b, "round {round}");
        assert_eq!(
            whole.tail(1).load(Ordering::Relaxed),
            parts.tail(1).load(Ordering::Relaxed)
        );
        // Drain every fourth round only: the rings fill and the rest waits.
        if round % 4 == 3 {
            let (gw, _) = take(&mut rw, &whole, 1).unwrap();
            let (gp, _) = take(&mut rp, &parts, 1).unwrap();
            assert_eq!(gw, gp, "round {round}");
            assert_eq!(tw.flush(&whole).unwrap(), tp.flush(&parts).unwrap());
        }
    }
}

/// Every route size, short (read onto the stack) and long (a list of
/// dozens of members), comes out of the ring as it went in, at every
/// position of the wrap, and owns exactly its payload.
#[test]
fn routes_of_every_size_come_out_whole() {
    use crate::tree_kind::TreeKind;
    use crate::wire::Member;
    use mcast_algorithms::Shape;
    let seg = Segment::heap(2, MIN_RING_BYTES);
    let mut tx = Tx::new(1, &seg).unwrap();
    let mut rx = Rx::default();
    for round in 0..300u64 {
        let mut p = packet(1, round, (round as usize * 41) % 900);
        p.header.kind = Kind::Multicast;
        p.route = match round % 3 {
            0 => Route::None,
            1 => Route::Range {
                shape: Shape::Flat,
                size: 64,
                lo: 1,
                hi: 63,
            },
            _ => Route::List {
                tree: TreeKind::Chain(Shape::Flat),
                covers: (0..round as u32 % 48)
                    .map(|r| Member {
                        rank: r,
                        ordinal: r,
                    })
                    .collect(),
            },
        };
        // As decoding fills them in.
        p.header.route_kind = p.route.kind_byte();
        p.header.route_len = p.route.encoded_len() as u32;
        assert_eq!(tx.send(&seg, &p, None), Ok(Sent::All));
        let (got, _) = take(&mut rx, &seg, 1).unwrap();
        assert_eq!(got.len(), 1, "round {round}");
        let (q, flags) = &got[0];
        assert_eq!((q, *flags), (&p, 0), "round {round}");
        assert_eq!(q.payload.len(), p.payload.len());
    }
}
