use super::*;

/// `n` ranks of one host in this process: each owns an arena (rank 0's of
/// `len` bytes) and maps every other one, as the mesh does.
pub(crate) fn one_host(n: usize, len: usize) -> Vec<Arc<Shm>> {
    let own: Vec<(Arc<Arena>, String)> = (0..n)
        .map(|r| {
            let (a, path) = Arena::create(r, if r == 0 { len } else { 4096 }).expect("create");
            (Arc::new(a), path)
        })
        .collect();
    let out = (0..n)
        .map(|me| {
            let arenas = (0..n)
                .map(|r| match r == me {
                    true => Some(own[r].0.clone()),
                    false => Some(Arc::new(Arena::open(&own[r].1).expect("open"))),
                })
                .collect();
            Arc::new(Shm::new(me, arenas))
        })
        .collect();
    for (a, _) in &own {
        a.unlink();
    }
    out
}

/// The count rank `holder` holds in rank 0's slot `slot`.
fn count(s: &Shm, slot: u64, holder: usize) -> u64 {
    let a = s.arena(0).expect("arena");
    let c = s.holder(holder).expect("on the host");
    s.counter(a, slot, c)
        .expect("counter")
        .load(Ordering::Acquire)
        & COUNT
}

#[test]
fn headers_have_room_for_every_holder() {
    assert_eq!(header_bytes(1), 64);
    assert_eq!(header_bytes(5), 64);
    assert_eq!(header_bytes(6), 128);
    assert_eq!(header_bytes(64), 576);
    let hosts = one_host(3, 1 << 20);
    let b = hosts[0].copy_in(&vec![3u8; 20_000]).expect("room");
    let d = hosts[0].describe(&b, 1).expect("described");
    assert_eq!(d.data, d.slot + 64);
    hosts[0].undo(&d, 1);
}

#[test]
fn descriptors_round_trip_and_slots_come_back() {
    let hosts = one_host(2, 1 << 20);
    let (owner, peer) = (&hosts[0], &hosts[1]);
    let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    for round in 0..50 {
        let b = owner.copy_in(&data).expect("room");
        let part = b.slice(20_000..60_000);
        let d = owner.describe(&part, 1).expect("in the arena");
        assert_eq!(d.len, 40_000);
        let got = peer.open_desc(&d).expect("valid");
        assert_eq!(&got[..], &data[20_000..60_000], "round {round}");
        // Forwarding the received bytes (back to the owner, a holder like
        // any other) describes the same slot.
        let d2 = peer.describe(&got, 0).expect("still in the arena");
        assert_eq!((d2.slot, d2.data), (d.slot, d.data));
        assert_eq!(count(owner, d.slot, 0), 1);
        peer.undo(&d2, 0);
        drop((b, part, got));
        assert_eq!(count(owner, d.slot, 1), 0);
    }
    // 50 rounds of 100 KB went through a 1 MiB arena: slots were reused.
}

#[test]
fn a_full_arena_falls_back_and_recovers() {
    let hosts = one_host(1, 256 * 1024);
    let s = &hosts[0];
    let data = vec![7u8; 100_000];
    let a = s.copy_in(&data).expect("first");
    let b = s.copy_in(&data).expect("second");
    assert!(s.copy_in(&data).is_none(), "third does not fit");
    drop(a);
    let c = s.copy_in(&data).expect("the oldest slot came back");
    drop((b, c));
    assert!(
        s.copy_in(&[1u8; 10]).is_none(),
        "small payloads stay inline"
    );
    assert!(s.describe(&Bytes::from(vec![0u8; 20_000]), 0).is_none());
}

/// The offset of `b`'s slot in rank 0's arena.
fn slot_of(s: &Shm, b: &Bytes) -> u64 {
    let a = s.arena(0).expect("arena");
    a.contains(b.as_ptr(), b.len()).expect("in the arena") - s.header
}

#[test]
fn a_held_slot_pins_only_its_own_bytes() {
    // A payload the program keeps (a multicast it has not taken) sits in
    // the oldest slot; the slots behind it come free in any order and are
    // used again, where reclaiming oldest first only stopped at it.
    let hosts = one_host(1, 1 << 20);
    let s = &hosts[0];
    let data = vec![4u8; 100_000];
    let kept = s.copy_in(&data).expect("first");
    for round in 0..100 {
        let b = s
            .copy_in(&data)
            .unwrap_or_else(|| panic!("round {round}: no room"));
        assert_ne!(slot_of(s, &b), slot_of(s, &kept), "round {round}");
        assert!(b[..] == data[..]);
    }
    assert!(kept[..] == data[..], "the kept payload is intact");
    // Free slots out of allocation order: the second and the fourth of
    // five held ones; a payload that fits in one of them goes there.
    let held: Vec<Bytes> = (0..5).map(|_| s.copy_in(&data).expect("room")).collect();
    let at: Vec<u64> = held.iter().map(|b| slot_of(s, b)).collect();
    while s.copy_in(&data).is_some_and(|b| {
        std::mem::forget(b);
        true
    }) {}
    let mut held = held;
    let fourth = held.remove(3);
    let second = held.remove(1);
    drop((second, fourth));
    let mut again: Vec<u64> = (0..2)
        .map(|_| slot_of(s, &s.copy_in(&data).expect("a freed slot")))
        .collect();
    again.sort_unstable();
    assert_eq!(again, vec![at[1], at[3]]);
}

#[test]
fn slots_follow_each_other_and_start_again_when_none_is_live() {
    // Next-fit: with each payload dropped once the next is out, slots go
    // up through the arena and wrap to the start, as a ring's would; with
    // none live, the next starts at the arena's first bytes (in cache).
    let hosts = one_host(1, 1 << 20);
    let s = &hosts[0];
    let data = vec![6u8; 100_000];
    let mut last = s.copy_in(&data).expect("room");
    let mut at = vec![slot_of(s, &last)];
    for _ in 0..20 {
        let b = s.copy_in(&data).expect("room");
        at.push(slot_of(s, &b));
        last = b;
    }
    let wraps = at.windows(2).filter(|w| w[1] < w[0]).count();
    assert_eq!(wraps, 2, "{at:?}");
    assert_eq!(at[0], 0);
    drop(last);
    for _ in 0..3 {
        assert_eq!(slot_of(s, &s.copy_in(&data).expect("room")), 0);
    }
}

#[test]
fn fit_takes_the_gap_after_the_newest_slot_then_the_first() {
    let mut r = Slots::default();
    // Live: [0, 64), [192, 320), [512, 576); arena of 1024.
    for (o, t) in [(0, 64), (192, 128), (512, 64)] {
        r.live.insert(o, t);
    }
    r.head = 320;
    assert_eq!(r.fit(1024, 128), Some(320), "after the newest");
    assert_eq!(r.fit(1024, 256), Some(576), "the next gap that fits");
    r.head = 576;
    assert_eq!(r.fit(1024, 448), Some(576), "up to the end");
    assert_eq!(r.fit(1024, 512), None, "nowhere");
    r.head = 1024;
    assert_eq!(
        r.fit(1024, 128),
        Some(64),
        "wrapped: the first gap that fits"
    );
    assert_eq!(r.fit(1024, 192), Some(320));
    assert_eq!(r.fit(1024, 64), Some(64));
    assert_eq!(Slots::default().fit(1024, 1024), Some(0));
    assert_eq!(Slots::default().fit(1024, 1088), None);
}

#[test]
fn bad_descriptors_are_refused() {
    let hosts = one_host(3, 1 << 20);
    let b = hosts[0].copy_in(&vec![1u8; 50_000]).expect("room");
    let d = hosts[0].describe(&b, 1).expect("described");
    let bad = [
        ShmDesc { owner: 5, ..d },
        ShmDesc {
            slot: d.slot + 1,
            ..d
        },
        ShmDesc { slot: 1 << 40, ..d },
        ShmDesc { slot: !63, ..d },
        ShmDesc { len: 60_000, ..d },
        ShmDesc {
            data: d.data - 8,
            ..d
        },
        ShmDesc {
            data: u64::MAX - 4,
            ..d
        },
    ];
    for x in bad {
        assert!(hosts[1].open_desc(&x).is_err(), "{x:?}");
    }
    // Sent to rank 1: rank 2 holds no reference to open.
    assert!(hosts[2].open_desc(&d).is_err(), "not rank 2's");
    // A rank that counts the host's ranks differently refuses the slot.
    let confused = Arc::new(Shm::new(
        1,
        vec![hosts[1].arenas[0].clone(), hosts[1].arenas[1].clone()],
    ));
    assert!(confused.open_desc(&d).is_err(), "holder count differs");
    hosts[0].undo(&d, 1);
    assert!(hosts[1].open_desc(&d).is_err(), "rank 1's count is 0");
    assert!(hosts[0].describe(&b, 9).is_none(), "not on the host");
    let free = hosts[0].describe(&b, 2).expect("described");
    hosts[0].undo(&free, 2);
    drop(b);
    assert!(hosts[2].open_desc(&free).is_err(), "freed slot");
}

#[test]
fn counts_never_wrap() {
    let hosts = one_host(2, 1 << 20);
    let b = hosts[0].copy_in(&vec![2u8; 50_000]).expect("room");
    let d = hosts[0].describe(&b, 1).expect("described");
    let a = hosts[0].arena(0).expect("ours");
    let one = hosts[0].holder(1).expect("on the host");
    let c = hosts[0].counter(a, d.slot, one).expect("rank 1's");
    let gen = c.load(Ordering::Acquire) & !COUNT;
    // A peer wrote a full count: one more is refused, not wrapped to 0.
    c.store(gen | COUNT, Ordering::Release);
    assert!(hosts[0].describe(&b, 1).is_none());
    assert_eq!(c.load(Ordering::Acquire), gen | COUNT);
    // A peer wrote 0 under a live reference: its drop stays at 0.
    c.store(gen | 1, Ordering::Release);
    let got = hosts[1].open_desc(&d).expect("valid");
    c.store(gen, Ordering::Release);
    drop(got);
    assert_eq!(c.load(Ordering::Acquire), gen);
    hosts[0].undo(&d, 1);
    assert_eq!(c.load(Ordering::Acquire), gen);
}

#[test]
fn a_lost_holders_slots_come_back() {
    let hosts = one_host(3, 1 << 20);
    let (owner, dead) = (&hosts[0], &hosts[2]);
    let data = vec![5u8; 100_000];
    // Fill the arena with slots rank 2 holds: half in flight to it, half
    // opened by it (and never dropped: it died).
    let mut held = Vec::new();
    let mut n = 0;
    while let Some(b) = owner.copy_in(&data) {
        let d = owner.describe(&b, 2).expect("described");
        if n % 2 == 1 {
            held.push(dead.open_desc(&d).expect("valid"));
        }
        n += 1;
    }
    assert!(n >= 9, "{n} slots");
    assert!(owner.copy_in(&data).is_none(), "full of rank 2's slots");
    owner.holder_lost(2);
    let again: Vec<Bytes> = (0..n).filter_map(|_| owner.copy_in(&data)).collect();
    assert_eq!(again.len(), n, "every slot came back");
    assert!(owner.copy_in(&data).is_none(), "full again");
    // Nothing more is lent to the lost rank.
    assert!(owner.describe(&again[0], 2).is_none());
    let d = owner.describe(&again[0], 1).expect("to a live rank");
    owner.undo(&d, 1);
    // The dead rank never drops what it held.
    std::mem::forget(held);
}

#[test]
fn a_late_holders_drops_touch_nothing() {
    // Rank 2 was expelled while it held slots, then resumed and dropped
    // them after their space was reused (by slots of another size).
    let hosts = one_host(3, 1 << 20);
    let (owner, late) = (&hosts[0], &hosts[2]);
    let mut held = Vec::new();
    while let Some(b) = owner.copy_in(&[9u8; 70_000]) {
        let d = owner.describe(&b, 2).expect("described");
        held.push(late.open_desc(&d).expect("valid"));
    }
    owner.holder_lost(2);
    let pattern: Vec<u8> = (0..150_000u32).map(|i| (i * 7 + 1) as u8).collect();
    let mut fresh = Vec::new();
    while let Some(b) = owner.copy_in(&pattern) {
        let d = owner.describe(&b, 1).expect("described");
        fresh.push((b, d));
    }
    let before: Vec<u64> = fresh.iter().map(|(_, d)| count(owner, d.slot, 1)).collect();
    drop(held);
    for (b, _) in &fresh {
        assert_eq!(&b[..], &pattern[..], "payload untouched");
    }
    let after: Vec<u64> = fresh.iter().map(|(_, d)| count(owner, d.slot, 1)).collect();
    assert_eq!(before, after);
}

#[test]
fn a_live_holder_outlives_another_ranks_loss() {
    let hosts = one_host(3, 1 << 20);
    let owner = &hosts[0];
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let b = owner.copy_in(&data).expect("room");
    let d1 = owner.describe(&b, 1).expect("described");
    let kept = hosts[1].open_desc(&d1).expect("valid");
    let _to_2 = owner.describe(&b, 2).expect("described");
    drop(b);
    owner.holder_lost(2);
    owner.holder_lost(2); // once more, as a second reader notices
    owner.holder_lost(7); // not on this host
    let mut filled = Vec::new();
    while let Some(x) = owner.copy_in(&[0xab; 100_000]) {
        filled.push(x);
    }
    assert!(!filled.is_empty());
    assert_eq!(&kept[..], &data[..], "rank 1's slot was never reused");
    assert_eq!(count(owner, d1.slot, 1), 1);
    drop(kept);
    assert!(owner.copy_in(&data).is_some(), "now it comes back");
}

#[test]
fn a_filled_slot_is_described_like_a_copied_one() {
    let hosts = one_host(2, 1 << 20);
    assert!(hosts[0].slot(SHM_MIN_PAYLOAD - 1).is_none());
    let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7) as u8).collect();
    let mut slot = hosts[0].slot(data.len()).expect("room");
    slot.buf().copy_from_slice(&data);
    let b = slot.into_bytes();
    assert_eq!(&b[..], &data[..]);
    let d = hosts[0].describe(&b, 1).expect("in the arena");
    let got = hosts[1].open_desc(&d).expect("opens");
    assert_eq!(&got[..], &data[..]);
    drop((b, got));
    // Every slot comes back: the arena fills again and again.
    for _ in 0..100 {
        let mut s = hosts[0].slot(200_000).expect("reclaimed");
        s.buf()[0] = 1;
    }
}

#[test]
fn a_filling_slot_is_copied_a_range_at_a_time_and_whole_once_dropped() {
    let hosts = one_host(2, 1 << 20);
    let (owner, peer) = (&hosts[0], &hosts[1]);
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let (b, mut fill) = owner.filling(&data).expect("room");
    assert_eq!(b.len(), data.len());
    fill.to(30_000);
    assert_eq!(&b[..30_000], &data[..30_000]);
    // A range is read through a descriptor once it is filled.
    let part = b.slice(10_000..30_000);
    let d = owner.describe(&part, 1).expect("in the arena");
    let got = peer.open_desc(&d).expect("valid");
    assert_eq!(&got[..], &data[10_000..30_000]);
    drop((part, got));
    fill.to(5_000); // behind what is filled: nothing to do
    fill.to(70_000);
    assert_eq!(&b[..70_000], &data[..70_000]);
    fill.to(usize::MAX); // clamped to the message
    assert_eq!(&b[..], &data[..]);
    // Dropped early, it copies the rest.
    let other: Vec<u8> = data.iter().map(|x| x ^ 0x5a).collect();
    let (c, mut fill) = owner.filling(&other).expect("room");
    fill.to(1);
    drop(fill);
    assert_eq!(&c[..], &other[..]);
}
