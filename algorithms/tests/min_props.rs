//! Property tests for the MIN multicast [Park 1996, §2.2, Fig 2; §3.1, Theorem 1; §3.2, Theorem 2, derived].

use mcast_algorithms::min::{
    bit_reverse, check_two_pass, two_pass, Arbitration, Min, RegionHeader, Start, Wiring,
};
use proptest::prelude::*;

fn wiring() -> impl Strategy<Value = Wiring> {
    prop_oneof![Just(Wiring::Banyan), Just(Wiring::Omega)]
}

/// (n, min, max) with min ≤ max < 2^n.
fn region(max_n: u32) -> impl Strategy<Value = (u32, u32, u32)> {
    (1..=max_n).prop_flat_map(|n| {
        let top = (1u64 << n) as u32;
        (Just(n), 0..top, 0..top).prop_map(|(n, a, b)| (n, a.min(b), a.max(b)))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// encode/decode and to_bits/from_bits round-trip.
    #[test]
    fn header_round_trip((n, lo, hi) in region(31)) {
        let h = RegionHeader::new(n, lo, hi).unwrap();
        let bytes = h.encode();
        prop_assert_eq!(bytes.len(), RegionHeader::encoded_len(n));
        prop_assert_eq!(RegionHeader::decode(n, &bytes).unwrap(), h);
        prop_assert_eq!(RegionHeader::from_bits(n, h.to_bits()).unwrap(), h);
    }

    /// Decoding arbitrary bytes never panics; whatever decodes re-encodes to
    /// the same bytes.
    #[test]
    fn header_decode_total(n in 0u32..40, bytes in proptest::collection::vec(any::<u8>(), 0..10)) {
        if let Ok(h) = RegionHeader::decode(n, &bytes) {
            prop_assert_eq!(h.encode(), bytes);
            prop_assert!(h.min() <= h.max());
        }
    }

    /// Region(min, max) reaches exactly min..=max with f − 1 replications,
    /// B_i − B_{i+1} of them at stage i, from any source, either wiring.
    #[test]
    fn region_routing((n, lo, hi) in region(7), src in any::<u32>(), w in wiring()) {
        let net = Min::new(n, w).unwrap();
        let src = src % (1u32 << n);
        let t = net.trace(src, RegionHeader::new(n, lo, hi).unwrap()).unwrap();
        prop_assert_eq!(t.delivered, (lo..=hi).collect::<Vec<_>>());
        let blocks = |j: u32| u64::from(hi >> j) - u64::from(lo >> j) + 1;
        for i in 0..n {
            prop_assert_eq!(u64::from(t.replications[i as usize]), blocks(i) - blocks(i + 1));
        }
        prop_assert_eq!(t.replications.iter().sum::<u32>(), hi - lo);
        // Every copy enters stage i on input port s_i.
        for hop in &t.hops {
            prop_assert_eq!(hop.in_port, (src >> hop.stage) & 1);
        }
    }

    /// The two-pass multicast: exactly 2 passes, every destination exactly
    /// once, no collision among one multicast's copies (Theorem 1).
    #[test]
    fn two_pass_oracle(
        n in 1u32..=7,
        w in wiring(),
        picks in proptest::collection::vec(any::<u32>(), 1..40),
        src in any::<u32>(),
        seed in any::<u64>(),
    ) {
        let net = Min::new(n, w).unwrap();
        let nodes = 1u32 << n;
        let src = src % nodes;
        let mut dests: Vec<u64> = picks.iter().map(|p| u64::from(p % nodes)).filter(|&d| d != u64::from(src)).collect();
        dests.sort_unstable();
        dests.dedup();
        prop_assume!(!dests.is_empty());
        let plan = two_pass(&net, u64::from(src), &dests, Start::Seeded(seed)).unwrap();
        prop_assert_eq!(plan.passes(), 2);
        prop_assert!(u64::from(plan.start) + dests.len() as u64 <= u64::from(nodes));
        check_two_pass(&net, &plan).unwrap();
        // Link visits: pass 1 is the region tree, pass 2 is f unicasts.
        let f = dests.len();
        prop_assert_eq!(plan.link_visits(), plan.sends[0].trace.link_visits() + f * (n as usize + 1));
    }

    /// Several region packets in one lock-step pass under upper-first: two
    /// packets only ever contend at stage ctz(s ⊕ t), the winner has the
    /// smaller bit-reversed source, and the wait-for graph is acyclic.
    #[test]
    fn upper_first_is_deadlock_free(
        n in 2u32..=6,
        w in wiring(),
        pkts in proptest::collection::vec((any::<u32>(), any::<u32>(), any::<u32>()), 2..12),
    ) {
        let net = Min::new(n, w).unwrap();
        let nodes = 1u32 << n;
        let mut seen = std::collections::HashSet::new();
        let packets: Vec<(u32, RegionHeader)> = pkts
            .iter()
            .filter(|(s, _, _)| seen.insert(s % nodes))
            .map(|&(s, a, b)| {
                let (a, b) = (a % nodes, b % nodes);
                (s % nodes, RegionHeader::new(n, a.min(b), a.max(b)).unwrap())
            })
            .collect();
        let wave = net.wave(&packets, Arbitration::UpperFirst).unwrap();
        prop_assert_eq!(wave.self_collisions, 0);
        for c in &wave.blocked {
            let (s, t) = (packets[c.winner].0, packets[c.loser].0);
            prop_assert_eq!(c.stage, (s ^ t).trailing_zeros());
            prop_assert!(bit_reverse(s, n) < bit_reverse(t, n));
        }
        prop_assert!(!wave.has_wait_cycle());
    }
}
