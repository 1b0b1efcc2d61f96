//! Property tests for the path-based module: on random tori and destination
//! sets every planner delivers exactly once, every worm segment is minimal,
//! a worm crosses at most one boundary and revisits no node, every hop is a
//! UTPR channel, λ increases along every worm and every consecutive pair of
//! hops is an arc of the (acyclic) CDG, same-phase worms share no link,
//! M_u-torus(r) takes ⌈log_r m⌉ phases and M_d-torus at most n; the Fig 5.10
//! forwarder delivers exactly what the route says; the header codecs round
//! trip and never panic.

use std::collections::HashSet;

use mcast_algorithms::irregular::SplitMix64;
use mcast_algorithms::oracle::check_responsibility;
use mcast_algorithms::path::header::{
    decode_compound, decode_simple, decode_simple_exact, encode_compound, encode_simple,
};
use mcast_algorithms::path::{
    plan, plan_with, run_worm, Cdg, CompoundEntry, PathAlgorithm, PathHeaderError, PathPlan,
    PathWorm, Utpr, VcSets,
};
use mcast_algorithms::topo::{Links, Topology, Vc};
use proptest::prelude::*;

fn torus_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        (2usize..=12).prop_map(|k| vec![k]),
        (2usize..=8).prop_map(|k| vec![k, k]),
        (2usize..=5).prop_map(|k| vec![k, k, k]),
        (2usize..=3).prop_map(|k| vec![k, k, k, k]),
    ]
}

fn algo_strategy() -> impl Strategy<Value = PathAlgorithm> {
    prop_oneof![
        Just(PathAlgorithm::STorus),
        Just(PathAlgorithm::MdTorus),
        (2usize..=9).prop_map(|r| PathAlgorithm::MuTorus { r }),
    ]
}

/// A random source and destination set (possibly empty) from a seed.
fn draw(nodes: usize, seed: u64, frac: f64) -> (usize, Vec<usize>) {
    let mut rng = SplitMix64::new(seed);
    let mut all: Vec<usize> = (0..nodes).collect();
    rng.shuffle(&mut all);
    let m = ((nodes - 1) as f64 * frac).round() as usize;
    (all[0], all[1..=m].to_vec())
}

fn ceil_log(m: usize, r: usize) -> usize {
    let mut p = 0;
    let mut reach = 1usize;
    while reach < m {
        reach = reach.saturating_mul(r);
        p += 1;
    }
    p
}

/// Every oracle of the module on one plan.
fn check_plan(t: &Topology, p: &PathPlan, src: usize, dests: &[usize], cdg: Option<&Cdg>) {
    let u = Utpr::new(t).unwrap();
    check_responsibility(&p.to_plan().unwrap(), src, dests).unwrap();
    let mut links_by_phase: HashSet<(usize, usize, usize)> = HashSet::new();
    for s in &p.sends {
        let r = &s.route;
        assert_eq!(r.source, s.sender);
        assert!(
            r.boundaries <= 1,
            "worm crosses {} boundaries",
            r.boundaries
        );
        let heads: Vec<usize> = s.parts.iter().map(|p| p[0]).collect();
        assert_eq!(r.delivers, heads);
        // Minimal segments.
        let mut at = s.sender;
        let mut prev = 0;
        for (&d, &h) in r.delivers.iter().zip(&r.reached_at) {
            assert_eq!(h - prev, u.distance(at, d).unwrap(), "segment not minimal");
            at = d;
            prev = h;
        }
        assert_eq!(prev, r.len());
        // No node revisited (so no physical link twice).
        let nodes = r.nodes(&u);
        let distinct: HashSet<usize> = nodes.iter().copied().collect();
        assert_eq!(distinct.len(), nodes.len(), "a worm revisits a node");
        // UTPR channels, p before h, strictly increasing λ, CDG arcs.
        let mut seen_h = false;
        for (i, c) in r.hops.iter().enumerate() {
            assert!(u.channel_exists(c));
            if c.vc == Vc::H {
                seen_h = true;
            } else {
                assert!(!seen_h, "p after h");
            }
            if i > 0 {
                let b = &r.hops[i - 1];
                assert!(u.lambda(b) < u.lambda(c), "λ not increasing");
                if let Some(g) = cdg {
                    assert!(g.has_arc(b, c), "hop pair is not a CDG arc");
                }
            }
            // Same-phase worms share no physical link.
            assert!(
                links_by_phase.insert((s.phase, c.node, c.dim)),
                "two worms of phase {} share a link",
                s.phase
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn planners_satisfy_the_oracles(
        radices in torus_strategy(),
        algo in algo_strategy(),
        seed in any::<u64>(),
        frac in 0.0f64..=1.0,
    ) {
        let t = Topology::torus(&radices, Links::Unidirectional).unwrap();
        let (src, dests) = draw(t.nodes(), seed, frac);
        let p = plan(&t, algo, src, &dests).unwrap();
        check_plan(&t, &p, src, &dests, None);
        let m = dests.len() + 1;
        match algo {
            PathAlgorithm::STorus => prop_assert_eq!(p.phases, usize::from(m > 1)),
            PathAlgorithm::MdTorus => prop_assert!(p.phases <= t.dims()),
            PathAlgorithm::MuTorus { r } => prop_assert_eq!(p.phases, ceil_log(m, r)),
        }
    }

    /// Theorem 6.1: any linear partitioning, even inconsistent between
    /// holders, is contention-free; and the CDG covers every worm.
    #[test]
    fn random_partitionings_and_cdg(
        k in 2usize..=5,
        n in 1usize..=3,
        seed in any::<u64>(),
        frac in 0.0f64..=1.0,
    ) {
        let t = Topology::torus(&vec![k; n], Links::Unidirectional).unwrap();
        let u = Utpr::new(&t).unwrap();
        let cdg = Cdg::build(&u, VcSets::Two);
        let (src, dests) = draw(t.nodes(), seed, frac);
        let mut rng = SplitMix64::new(seed ^ 0x5eed);
        let p = plan_with(&t, src, &dests, |_, phi| {
            // Random cut points: at least one, anywhere.
            let len = phi.len();
            let mut cuts: Vec<usize> = (1..len).filter(|_| rng.below(3) == 0).collect();
            if cuts.is_empty() {
                cuts.push(1 + rng.below(len - 1));
            }
            let mut sizes = Vec::new();
            let mut prev = 0;
            for c in cuts.into_iter().chain(std::iter::once(len)) {
                sizes.push(c - prev);
                prev = c;
            }
            sizes
        })
        .unwrap();
        check_plan(&t, &p, src, &dests, Some(&cdg));
    }

    /// Fig 5.10: a worm run flit by flit through the forwarders takes the
    /// route R_UTPR gives and every destination absorbs exactly the body.
    #[test]
    fn forwarder_matches_route(
        radices in torus_strategy(),
        seed in any::<u64>(),
        frac in 0.0f64..=1.0,
        body in proptest::collection::vec(any::<u64>(), 0..6),
    ) {
        let t = Topology::torus(&radices, Links::Unidirectional).unwrap();
        let u = Utpr::new(&t).unwrap();
        let (src, dests) = draw(t.nodes(), seed, frac);
        prop_assume!(!dests.is_empty());
        let w = PathWorm::prepare(&u, src, &dests).unwrap();
        let r = w.route(&u).unwrap();
        let mut header: Vec<u64> = w.dests.iter().map(|&d| d as u64).collect();
        header.push(*header.last().unwrap());
        let (hops, absorbed) = run_worm(u, src, &header, &body).unwrap();
        prop_assert_eq!(&hops, &r.hops);
        let order: Vec<usize> = absorbed.iter().map(|(n, _)| *n).collect();
        prop_assert_eq!(&order, &r.delivers);
        for (_, got) in absorbed {
            prop_assert_eq!(&got, &body);
        }
    }

    #[test]
    fn simple_header_round_trip(
        dests in proptest::collection::hash_set(0usize..5000, 1..40),
        tail in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        let dests: Vec<usize> = dests.into_iter().collect();
        let mut bytes = encode_simple(&dests).unwrap();
        let len = bytes.len();
        prop_assert_eq!(decode_simple_exact(&bytes, 5000).unwrap(), dests.clone());
        bytes.extend_from_slice(&tail);
        let (got, used) = decode_simple(&bytes, 5000).unwrap();
        prop_assert_eq!(got, dests);
        prop_assert_eq!(used, len);
    }

    #[test]
    fn compound_header_round_trip(
        nodes in proptest::collection::hash_set(0usize..100_000, 1..60),
        cuts in proptest::collection::vec(any::<bool>(), 60),
    ) {
        // Split the distinct nodes into entries: a cut starts a new entry.
        let nodes: Vec<usize> = nodes.into_iter().collect();
        let mut entries: Vec<CompoundEntry> = Vec::new();
        for (i, &v) in nodes.iter().enumerate() {
            match entries.last_mut() {
                Some(e) if !cuts[i] => e.rest.push(v),
                _ => entries.push(CompoundEntry { dest: v, rest: Vec::new() }),
            }
        }
        let bytes = encode_compound(&entries).unwrap();
        let (got, used) = decode_compound(&bytes, 100_000).unwrap();
        prop_assert_eq!(got, entries);
        prop_assert_eq!(used, bytes.len());
    }

    /// Arbitrary bytes: the decoders return Ok or a typed error, never panic.
    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), nodes in 1usize..1000) {
        let _ = decode_simple(&bytes, nodes);
        let _ = decode_simple_exact(&bytes, nodes);
        let _ = decode_compound(&bytes, nodes);
    }
}

#[test]
fn header_errors() {
    assert_eq!(encode_simple(&[]), Err(PathHeaderError::NoDestinations));
    assert_eq!(encode_compound(&[]), Err(PathHeaderError::NoDestinations));
    // Fig 5.9: [3, 7, 7].
    let h = encode_simple(&[3, 7]).unwrap();
    assert_eq!(h, [3, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0]);
    assert_eq!(
        decode_simple(&h[..8], 10),
        Err(PathHeaderError::Truncated { need: 12, have: 8 })
    );
    assert_eq!(
        decode_simple(&h[..10], 10),
        Err(PathHeaderError::Truncated { need: 12, have: 10 })
    );
    assert_eq!(
        decode_simple(&h, 5),
        Err(PathHeaderError::BadAddress { addr: 7, nodes: 5 })
    );
    let rep = encode_simple(&[3, 7, 3]).unwrap();
    assert_eq!(decode_simple(&rep, 10), Err(PathHeaderError::Repeated(3)));
    let mut trailing = h.clone();
    trailing.push(0);
    assert_eq!(
        decode_simple_exact(&trailing, 10),
        Err(PathHeaderError::Trailing(1))
    );
    // A compound count claiming 4 billion addresses fails before allocating.
    let mut c = Vec::new();
    c.extend_from_slice(&1u32.to_le_bytes());
    c.extend_from_slice(&u32::MAX.to_le_bytes());
    c.extend_from_slice(&[0; 8]);
    assert_eq!(
        decode_compound(&c, 10),
        Err(PathHeaderError::BadCount {
            count: u32::MAX,
            at: 4,
            left: 8
        })
    );
    assert!(matches!(
        encode_simple(&[usize::MAX]),
        Err(PathHeaderError::TooLarge(_))
    ));
}

/// Forwarder dispositions and its error on a bad header flit.
#[test]
fn forwarder_basics() {
    use mcast_algorithms::path::{disposition, Disposition, ForwardError, Forwarder};
    assert_eq!(disposition(5, 7, None), Some(Disposition::ForwardOnly));
    assert_eq!(disposition(5, 5, None), None);
    assert_eq!(disposition(5, 5, Some(5)), Some(Disposition::AbsorbOnly));
    assert_eq!(
        disposition(5, 5, Some(9)),
        Some(Disposition::AbsorbAndForward)
    );
    let t = Topology::torus(&[4, 4], Links::Unidirectional).unwrap();
    let u = Utpr::new(&t).unwrap();
    let mut f = Forwarder::new(u, 0, Vc::P).unwrap();
    assert_eq!(f.on_flit(99), Err(ForwardError::BadAddress(99)));
    assert!(Forwarder::new(u, 16, Vc::P).is_err());
    assert!(Forwarder::new(u, 0, Vc::L).is_err());
    // At (0,1) = node 1, a worm [1, 2, 2, body...]: absorb and forward.
    let mut f = Forwarder::new(u, 1, Vc::P).unwrap();
    assert_eq!(f.on_flit(1).unwrap().forward, None);
    assert_eq!(f.disposition(), None);
    assert_eq!(f.on_flit(2).unwrap().forward, Some(2));
    assert_eq!(f.disposition(), Some(Disposition::AbsorbAndForward));
    assert_eq!(f.out_channel().map(|c| (c.node, c.dim)), Some((1, 0)));
    assert_eq!(f.on_flit(2).unwrap().forward, Some(2));
    let o = f.on_flit(42).unwrap();
    assert_eq!((o.forward, o.local), (Some(42), Some(42)));
}

/// S-torus broadcast visits N − 1 links (claim 10), from every source.
#[test]
fn s_torus_broadcast_is_n_minus_1() {
    for r in [
        vec![9],
        vec![4, 4],
        vec![6, 6],
        vec![3, 3, 3],
        vec![4, 4, 4],
    ] {
        let t = Topology::torus(&r, Links::Unidirectional).unwrap();
        for src in 0..t.nodes() {
            let dests: Vec<usize> = (0..t.nodes()).filter(|&v| v != src).collect();
            let p = plan(&t, PathAlgorithm::STorus, src, &dests).unwrap();
            assert_eq!(p.link_visits(), t.nodes() - 1, "{r:?} from {src}");
        }
    }
    let t = Topology::torus(&[64, 64], Links::Unidirectional).unwrap();
    let dests: Vec<usize> = (1..4096).collect();
    assert_eq!(
        plan(&t, PathAlgorithm::STorus, 0, &dests)
            .unwrap()
            .link_visits(),
        4095
    );
}

/// Claim 11: the unicast baseline takes 9 phases at m = 512; M_u(8) 3 and
/// M_u(64) 2; M_u(8) 4 at m = 1024; M_d at most n.
#[test]
fn phase_counts() {
    let t = Topology::torus(&[64, 64], Links::Unidirectional).unwrap();
    let (src, d511) = draw(4096, 7, 511.0 / 4095.0);
    assert_eq!(d511.len(), 511);
    let ph = |a, d: &[usize]| plan(&t, a, src, d).unwrap().phases;
    assert_eq!(ph(PathAlgorithm::MuTorus { r: 2 }, &d511), 9);
    assert_eq!(ph(PathAlgorithm::MuTorus { r: 8 }, &d511), 3);
    assert_eq!(ph(PathAlgorithm::MuTorus { r: 64 }, &d511), 2);
    assert!(ph(PathAlgorithm::MdTorus, &d511) <= 2);
    let (src2, d1023) = draw(4096, 8, 1023.0 / 4095.0);
    assert_eq!(
        plan(&t, PathAlgorithm::MuTorus { r: 8 }, src2, &d1023)
            .unwrap()
            .phases,
        4
    );
}
