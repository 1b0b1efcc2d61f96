//! Property tests on random generated irregular networks (8..64 switches,
//! 4..32 ports) with random destination sets, and codec properties.

use mcast_algorithms::irregular::{
    BitStringHeader, HeaderError, IdForm, IrregularSpec, MultiDropHeader, NodeSet, PortMask,
    RouteHeader, Scheme, SplitMix64, SsrHeader, SwitchNetwork, UnicastHeader, WormKind,
    WormTraceOptions,
};
use mcast_algorithms::{check_delivery, check_responsibility, Shape};
use proptest::prelude::*;

/// A random network whose parameters always leave enough link ports
/// (nodes ≤ s·min(k/2, k−3), connectivity ≥ 0.8) to be connected quickly.
fn arb_fabric() -> impl Strategy<Value = SwitchNetwork> {
    (
        8usize..=64,
        4usize..=32,
        any::<u64>(),
        0usize..3,
        any::<bool>(),
        any::<u64>(),
    )
        .prop_filter_map("generation failed", |(s, k, seed, c, rooted, rseed)| {
            let per = (k / 2).min(k - 3).max(1);
            let mut r = SplitMix64::new(seed ^ 0x5eed);
            let nodes = s / 2 + r.below(s * per - s / 2 + 1);
            let spec = IrregularSpec {
                switches: s,
                ports: k,
                nodes,
                connectivity: [0.8, 0.9, 1.0][c],
                seed,
                root: rooted.then(|| (rseed as usize) % s),
            };
            SwitchNetwork::from_spec(&spec).ok()
        })
}

/// A random source and destination set (size uniform in 1..n−1, members
/// uniform), drawn from `seed`.
fn draw(f: &SwitchNetwork, seed: u64) -> Option<(usize, Vec<usize>)> {
    let n = f.topology().node_count();
    if n < 2 {
        return None;
    }
    let mut r = SplitMix64::new(seed);
    let src = r.below(n);
    let others: Vec<usize> = (0..n).filter(|&x| x != src).collect();
    let k = 1 + r.below(n - 1);
    Some((src, r.sample(&others, k)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn worm_plans_deliver_exactly_once_on_legal_routes(f in arb_fabric(), seed in any::<u64>()) {
        let Some((src, dests)) = draw(&f, seed) else { return Ok(()) };
        let mut worms = Vec::new();
        for scheme in Scheme::ALL {
            let plan = f.plan(scheme, src, &dests).unwrap();
            let p = plan.to_plan().unwrap();
            check_delivery(&p, src, &dests).unwrap();
            check_responsibility(&p, src, &dests).unwrap();
            for r in plan.routes() {
                f.check_route(r).unwrap();
            }
            for s in &plan.sends {
                // Any choice among minimal next hops (and up ports) gives the
                // same deliveries on legal routes (Theorems 4 and 5).
                for pick in 1..3 {
                    let t = f.trace_with(s.sender, &s.header, WormTraceOptions { pick, rewrite: true }).unwrap();
                    let mut a = t.delivered.clone();
                    a.sort();
                    let mut b = s.delivers.clone();
                    b.sort();
                    prop_assert_eq!(a, b);
                    for br in &t.branches {
                        f.check_route(br).unwrap();
                    }
                }
                if s.worm == WormKind::Tree {
                    // The up phase ends where total reachability covers the header.
                    let turn = *s.route.last().unwrap();
                    let RouteHeader::BitString(h) = &s.header else { unreachable!() };
                    prop_assert!(h.dests().is_subset(f.reachability().total(turn).unwrap()));
                    // And no switch before it covers it.
                    for &sw in &s.route[..s.route.len() - 1] {
                        prop_assert!(!h.dests().is_subset(f.reachability().total(sw).unwrap()));
                    }
                }
            }
            worms.push((scheme, plan.worm_count(), plan.phases));
        }
        let count = |s: Scheme| worms.iter().find(|w| w.0 == s).unwrap().1;
        prop_assert!(count(Scheme::PathGreedy) <= count(Scheme::SsrGreedy));
        prop_assert!(count(Scheme::PathLessGreedy) <= count(Scheme::SsrLessGreedy));
        prop_assert_eq!(count(Scheme::TreeWorm), 1);
        // Greedy never takes more phases than Less-Greedy.
        let phases = |s: Scheme| worms.iter().find(|w| w.0 == s).unwrap().2;
        prop_assert!(phases(Scheme::SsrGreedy) <= phases(Scheme::SsrLessGreedy));
        prop_assert!(phases(Scheme::PathGreedy) <= phases(Scheme::PathLessGreedy));
        // Node-id headers behave like switch-id headers.
        let nf = f.plan_with(Scheme::PathLessGreedy, src, &dests,
            mcast_algorithms::irregular::PlanOptions { form: IdForm::Node }).unwrap();
        check_delivery(&nf.to_plan().unwrap(), src, &dests).unwrap();
        // NI-based trees on the paper's ordering.
        for shape in [Shape::KBinomial { k: 2 }, Shape::KBinomial { k: 3 }] {
            let p = f.chain_plan(src, &dests, shape).unwrap();
            check_responsibility(&p, src, &dests).unwrap();
        }
    }

    #[test]
    fn reachability_strings_are_exclusive(f in arb_fabric()) {
        let t = f.topology();
        let r = f.reachability();
        let root_total = r.total(f.updown().root()).unwrap();
        prop_assert_eq!(root_total.count(), t.node_count());
        for s in 0..t.switch_count() {
            let mut union = NodeSet::new(t.node_count());
            for (_, x) in r.down_ports(s) {
                prop_assert!(x.and(&union).is_empty());
                union.union_with(x);
            }
            prop_assert_eq!(&union, r.total(s).unwrap());
        }
    }
}

fn arb_mask(p: usize) -> impl Strategy<Value = PortMask> {
    proptest::collection::vec(any::<bool>(), p).prop_map(move |bits| {
        PortMask::from_ports(p, bits.iter().enumerate().filter(|b| *b.1).map(|b| b.0)).unwrap()
    })
}

fn arb_form() -> impl Strategy<Value = IdForm> {
    prop_oneof![Just(IdForm::Node), Just(IdForm::Switch)]
}

fn arb_header() -> impl Strategy<Value = RouteHeader> {
    prop_oneof![
        any::<u32>().prop_map(|dest| RouteHeader::Unicast(UnicastHeader { dest })),
        (
            arb_form(),
            any::<bool>(),
            any::<u32>(),
            (0usize..40).prop_flat_map(arb_mask)
        )
            .prop_map(|(form, multidest, id, ports)| RouteHeader::Ssr(SsrHeader {
                form,
                multidest,
                id,
                ports
            })),
        (
            arb_form(),
            (0usize..20)
                .prop_flat_map(|p| proptest::collection::vec((any::<u32>(), arb_mask(p)), 1..6))
        )
            .prop_map(|(form, pairs)| RouteHeader::MultiDrop(
                MultiDropHeader::new(form, pairs).unwrap()
            )),
        (
            any::<bool>(),
            (0usize..200).prop_flat_map(|n| (Just(n), proptest::collection::vec(any::<bool>(), n)))
        )
            .prop_map(|(up, (n, bits))| {
                let set =
                    NodeSet::from_nodes(n, bits.iter().enumerate().filter(|b| *b.1).map(|b| b.0));
                RouteHeader::BitString(BitStringHeader::new(up, set).unwrap())
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn codec_round_trip(h in arb_header()) {
        let bytes = h.encode();
        prop_assert_eq!(RouteHeader::decode(&bytes), Ok(h.clone()));
        // Every strict prefix is rejected, as is any trailing byte.
        for cut in 0..bytes.len() {
            prop_assert!(RouteHeader::decode(&bytes[..cut]).is_err());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        prop_assert_eq!(RouteHeader::decode(&longer), Err(HeaderError::Trailing(1)));
    }

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
        let _ = RouteHeader::decode(&bytes);
        let _ = UnicastHeader::decode(&bytes);
        let _ = SsrHeader::decode(&bytes);
        let _ = MultiDropHeader::decode(&bytes);
        let _ = BitStringHeader::decode(&bytes);
    }

    #[test]
    fn decoders_never_panic_on_mutations(h in arb_header(), i in any::<usize>(), v in any::<u8>()) {
        let mut bytes = h.encode();
        let n = bytes.len();
        bytes[i % n] = v;
        if let Ok(d) = RouteHeader::decode(&bytes) {
            prop_assert_eq!(d.encode(), bytes);
        }
    }

    #[test]
    fn switch_decisions_never_panic(seed in any::<u64>(), bytes in proptest::collection::vec(any::<u8>(), 0..64), sw in 0usize..12, port in 0usize..10, pick in 0usize..4) {
        let f = mcast_algorithms::irregular::examples::paper_network(seed % 2 == 0).unwrap();
        if let Ok(h) = RouteHeader::decode(&bytes) {
            let _ = f.decide(sw, port, &h, pick);
            let _ = f.trace(seed as usize % 24, &h);
        }
    }
}
