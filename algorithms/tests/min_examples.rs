//! Every worked example of [Park 1996] (MIN multicast), and the vectors computed from it, as a test.

use mcast_algorithms::min::{
    bit_reverse, check_two_pass, copy_rates, decide, model, throughput, two_pass, Arbitration,
    CopyCase, Min, MinError, MinHeaderError, RegionHeader, SeDecision, Start, Wiring,
};

/// (source or relay, destination, (in-link, out-link) per stage).
type PathVector = (u32, u32, [(&'static str, &'static str); 4]);

fn net(n: u32) -> Min {
    Min::new(n, Wiring::Banyan).unwrap()
}

fn b(s: &str) -> u32 {
    u32::from_str_radix(s, 2).unwrap()
}

/// [Park 1996, §2.1, Definition 1]: the wiring vectors at N = 16 and N = 8.
#[test]
fn wiring_vectors() {
    let m = net(4);
    let ic4: Vec<u32> = (0..16).map(|a| m.inject_link(a)).collect();
    assert_eq!(ic4, [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]);
    let ic = |i: u32| (0..16).map(|a| m.next_link(i, a)).collect::<Vec<_>>();
    assert_eq!(
        ic(3),
        [0, 8, 2, 10, 4, 12, 6, 14, 1, 9, 3, 11, 5, 13, 7, 15]
    );
    assert_eq!(
        ic(2),
        [0, 4, 2, 6, 1, 5, 3, 7, 8, 12, 10, 14, 9, 13, 11, 15]
    );
    assert_eq!(
        ic(1),
        [0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15]
    );
    let m8 = net(3);
    let ic3: Vec<u32> = (0..8).map(|a| m8.inject_link(a)).collect();
    assert_eq!(ic3, [0, 2, 4, 6, 1, 3, 5, 7]);
    assert_eq!(
        (0..8).map(|a| m8.next_link(2, a)).collect::<Vec<_>>(),
        [0, 4, 2, 6, 1, 5, 3, 7]
    );
    assert_eq!(
        (0..8).map(|a| m8.next_link(1, a)).collect::<Vec<_>>(),
        [0, 2, 1, 3, 4, 6, 5, 7]
    );
}

/// [Park 1996, §2.1, derived]: unicast path vectors at N = 16, (in-link → out-link) per stage.
#[test]
fn unicast_path_vectors() {
    let m = net(4);
    let cases: [PathVector; 4] = [
        (
            0,
            15,
            [
                ("0000", "0001"),
                ("1000", "1001"),
                ("1100", "1101"),
                ("1110", "1111"),
            ],
        ),
        (
            15,
            0,
            [
                ("1111", "1110"),
                ("0111", "0110"),
                ("0011", "0010"),
                ("0001", "0000"),
            ],
        ),
        (
            5,
            10,
            [
                ("1010", "1011"),
                ("1011", "1010"),
                ("1010", "1011"),
                ("1011", "1010"),
            ],
        ),
        (
            9,
            6,
            [
                ("0011", "0010"),
                ("0010", "0011"),
                ("0110", "0111"),
                ("0111", "0110"),
            ],
        ),
    ];
    for (s, d, hops) in cases {
        let t = m.trace(s, RegionHeader::unicast(4, d).unwrap()).unwrap();
        assert_eq!(t.delivered, [d]);
        for (hop, (i, o)) in t.hops.iter().zip(hops) {
            assert_eq!(hop.in_link, b(i), "{s}->{d} stage {}", hop.stage);
            assert_eq!(hop.out_links, [b(o)], "{s}->{d} stage {}", hop.stage);
            // The input port depends only on the source: s_i.
            assert_eq!(hop.in_port, (s >> hop.stage) & 1);
        }
    }
}

/// [Park 1996, §2.2, Fig 2]: region [0100, 1000] from source 5.
#[test]
fn fig2_region_routing() {
    let m = net(4);
    let h = RegionHeader::new(4, b("0100"), b("1000")).unwrap();
    // The header split at stage 3.
    assert_eq!(
        decide(h, 3).unwrap(),
        SeDecision::Replicate(
            RegionHeader::new(4, b("0100"), b("0111")).unwrap(),
            RegionHeader::new(4, b("1000"), b("1000")).unwrap()
        )
    );
    let t = m.trace(5, h).unwrap();
    assert_eq!(t.delivered, [4, 5, 6, 7, 8]);
    // Replications per stage (3, 2, 1, 0) = (1, 0, 1, 2).
    assert_eq!(t.replications, [2, 1, 0, 1]);
    let got: Vec<(u32, u32, u32, Vec<u32>)> = t
        .hops
        .iter()
        .map(|h| (h.stage, h.in_link, h.se, h.out_links.clone()))
        .collect();
    let want = vec![
        (3, b("1010"), b("101"), vec![b("1010"), b("1011")]),
        (2, b("0011"), b("001"), vec![b("0011")]),
        (2, b("1011"), b("101"), vec![b("1010")]),
        (1, b("0110"), b("011"), vec![b("0110"), b("0111")]),
        (1, b("1010"), b("101"), vec![b("1010")]),
        (0, b("0101"), b("010"), vec![b("0100"), b("0101")]),
        (0, b("0111"), b("011"), vec![b("0110"), b("0111")]),
        (0, b("1001"), b("100"), vec![b("1000")]),
    ];
    assert_eq!(got, want);
    // inP = s_i: 0, 1, 0, 1 for stages 3, 2, 1, 0.
    for hop in &t.hops {
        assert_eq!(hop.in_port, (5 >> hop.stage) & 1);
    }
}

/// [Park 1996, §3.1, Fig 3]: 5 → {0, 3, 6, 11, 13} with s = 4.
#[test]
fn fig3_two_pass() {
    let m = net(4);
    let plan = two_pass(&m, 5, &[13, 0, 6, 3, 11], Start::Fixed(4)).unwrap();
    check_two_pass(&m, &plan).unwrap();
    assert_eq!(plan.passes(), 2);
    assert_eq!(plan.relays(), [4, 5, 6, 7, 8]);
    assert_eq!(plan.sends[0].trace.delivered, [4, 5, 6, 7, 8]);
    assert_eq!(plan.sends[0].trace.replications.iter().sum::<u32>(), 4);
    let want: [PathVector; 5] = [
        (
            4,
            0,
            [
                ("1000", "1000"),
                ("0001", "0000"),
                ("0000", "0000"),
                ("0000", "0000"),
            ],
        ),
        (
            5,
            3,
            [
                ("1010", "1010"),
                ("0011", "0010"),
                ("0010", "0011"),
                ("0011", "0011"),
            ],
        ),
        (
            6,
            6,
            [
                ("1100", "1100"),
                ("0101", "0101"),
                ("0101", "0101"),
                ("0110", "0110"),
            ],
        ),
        (
            7,
            11,
            [
                ("1110", "1111"),
                ("1111", "1110"),
                ("1011", "1011"),
                ("1011", "1011"),
            ],
        ),
        (
            8,
            13,
            [
                ("0001", "0001"),
                ("1000", "1001"),
                ("1100", "1100"),
                ("1100", "1101"),
            ],
        ),
    ];
    for (send, (relay, dst, hops)) in plan.sends[1..].iter().zip(want) {
        assert_eq!(
            (send.pass, send.from, send.delivers.clone()),
            (2, relay, vec![dst])
        );
        for (hop, (i, o)) in send.trace.hops.iter().zip(hops) {
            assert_eq!((hop.in_link, hop.out_links.clone()), (b(i), vec![b(o)]));
        }
    }
    // Out-links pairwise distinct at every stage (Theorem 1).
    for stage in 0..4 {
        let mut outs: Vec<u32> = plan.sends[1..]
            .iter()
            .flat_map(|s| s.trace.hops.iter().filter(|h| h.stage == stage))
            .flat_map(|h| h.out_links.clone())
            .collect();
        outs.sort_unstable();
        outs.dedup();
        assert_eq!(outs.len(), 5);
    }
    // Link visits: pass 1 = injection + B_3 + B_2 + B_1 + B_0 = 1+2+2+3+5 SE
    // outputs; pass 2 = 5 unicasts × (injection + 4 stages).
    assert_eq!(plan.sends[0].trace.link_visits(), 1 + 2 + 2 + 3 + 5);
    assert_eq!(plan.link_visits(), 13 + 25);
}

/// [Park 1996, §3.2, Fig 4]: the deadlock pair.
#[test]
fn fig4_deadlock_pair() {
    let m = net(4);
    let p1 = (1, RegionHeader::new(4, b("0101"), b("1000")).unwrap());
    let p15 = (15, RegionHeader::new(4, b("0111"), b("1100")).unwrap());
    let w = m.wave(&[p1, p15], Arbitration::UpperFirst).unwrap();
    assert_eq!(w.delivered[0], [5, 6, 7, 8]);
    assert_eq!(w.delivered[1], [12]);
    // They meet only at stage 1 = ctz(1 ^ 15), in SEs 011 and 101; P1 wins both.
    let mut at: Vec<(u32, u32)> = w.blocked.iter().map(|c| (c.stage, c.se)).collect();
    at.sort_unstable();
    assert_eq!(at, [(1, b("011")), (1, b("101"))]);
    assert_eq!(w.wait_for(), [(1, 0)]);
    assert!(!w.has_wait_cycle());
    assert!(bit_reverse(1, 4) < bit_reverse(15, 4));
    // A random winner per SE gives the crossed situation (a cycle) for some
    // seeds and never under upper-first.
    let cycles = (0..200)
        .filter(|&seed| {
            m.wave(&[p1, p15], Arbitration::Random(seed))
                .unwrap()
                .has_wait_cycle()
        })
        .count();
    assert!(cycles > 40 && cycles < 160, "{cycles} cycles in 200");
}

#[test]
fn header_codec_and_errors() {
    let h = RegionHeader::new(7, 5, 100).unwrap();
    assert_eq!(h.encode().len(), 2); // 14 bits
    assert_eq!(RegionHeader::decode(7, &h.encode()).unwrap(), h);
    assert_eq!(h.to_bits(), 5 | (100 << 7));
    assert_eq!(
        RegionHeader::decode(7, &[0, 0, 0]),
        Err(MinHeaderError::Length {
            n: 7,
            need: 2,
            got: 3
        })
    );
    assert_eq!(
        RegionHeader::decode(7, &[0, 0x40]),
        Err(MinHeaderError::Padding(14))
    );
    assert_eq!(
        RegionHeader::decode(4, &[0x03]),
        Err(MinHeaderError::Empty { min: 3, max: 0 })
    );
    assert_eq!(RegionHeader::decode(0, &[]), Err(MinHeaderError::Stages(0)));
    assert!(RegionHeader::new(4, 0, 16).is_err());
    // A header that cannot be at a stage is an error, not a panic.
    let bad = RegionHeader::new(4, b("0001"), b("1000")).unwrap();
    assert!(matches!(
        decide(bad, 1),
        Err(MinHeaderError::Invariant { .. })
    ));
    assert!(matches!(decide(bad, 4), Err(MinHeaderError::Stage { .. })));
}

#[test]
fn two_pass_errors() {
    let m = net(4);
    assert_eq!(
        two_pass(&m, 5, &[], Start::Fixed(0)),
        Err(MinError::NoDestinations)
    );
    assert_eq!(
        two_pass(&m, 5, &[5, 6], Start::Fixed(0)),
        Err(MinError::SourceIsDestination(5))
    );
    assert_eq!(
        two_pass(&m, 5, &[6, 6], Start::Fixed(0)),
        Err(MinError::DuplicateDestination(6))
    );
    assert!(matches!(
        two_pass(&m, 5, &[16], Start::Fixed(0)),
        Err(MinError::NodeOutOfRange { .. })
    ));
    assert!(matches!(
        two_pass(&m, 5, &[1, 2], Start::Fixed(15)),
        Err(MinError::BadStart { .. })
    ));
    assert!(matches!(
        two_pass(&m, 5, &[1, 2], Start::Fixed(u64::MAX)),
        Err(MinError::BadStart { .. })
    ));
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// Patel: f = 1, n = 7, full load gives η = 0.3271, with our stage
/// sequence.
#[test]
fn model_reduces_to_patel() {
    let t = throughput(7, 1, 0.5, 1.0, CopyCase::RandomStart).unwrap();
    assert!(close(t.eta, 0.3271, 5e-5), "{}", t.eta);
    let seq: Vec<f64> = t.stages.iter().map(|s| s.rho_out).collect();
    for (got, want) in seq
        .iter()
        .zip([0.75, 0.6094, 0.5165, 0.4498, 0.3992, 0.3594, 0.3271])
    {
        assert!(close(*got, want, 5e-5), "{got} vs {want}");
    }
    // Trace 3: n = 3, f = 1, ρ = 1.
    let t = throughput(3, 1, 0.3, 1.0, CopyCase::RandomStart).unwrap();
    assert!(close(t.eta, 0.516541, 1e-6));
}

/// [Park 1996, §4.2, Fig 5, derived] exact copy rates (c_{n−1} … c_0).
#[test]
fn copy_rates_exact() {
    let rev = |n: u32, f: u64| {
        let mut c = copy_rates(n, f, CopyCase::RandomStart).unwrap();
        c.reverse();
        c
    };
    let check = |got: Vec<f64>, want: &[f64]| {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, *w, 1e-12), "{got:?} vs {want:?}");
        }
    };
    check(rev(3, 3), &[1.0 / 3.0, 0.5, 0.5]);
    check(rev(4, 4), &[3.0 / 13.0, 3.0 / 8.0, 5.0 / 11.0, 5.0 / 8.0]);
    check(rev(4, 5), &[1.0 / 3.0, 0.5, 0.5, 2.0 / 3.0]);
    check(
        rev(7, 4),
        &[
            3.0 / 125.0,
            3.0 / 64.0,
            6.0 / 67.0,
            12.0 / 73.0,
            24.0 / 85.0,
            47.0 / 109.0,
            47.0 / 78.0,
        ],
    );
    let eb = model::expected_blocks(4, 4).unwrap();
    let want = [4.0, 32.0 / 13.0, 22.0 / 13.0, 16.0 / 13.0, 1.0];
    for (g, w) in eb.iter().zip(want) {
        assert!(close(*g, w, 1e-12));
    }
    // Reconstructed Fig. 5, f = 8: c6 = 0.0579 … c0 = 0.7794.
    let c = rev(7, 8);
    assert!(close(c[0], 0.0579, 5e-5) && close(c[6], 0.7794, 5e-5));
    // The product of (1 + c_i) is f.
    for f in [2u64, 3, 5, 16, 64, 128] {
        let p: f64 = copy_rates(7, f, CopyCase::RandomStart)
            .unwrap()
            .iter()
            .map(|c| 1.0 + c)
            .product();
        assert!(close(p, f as f64, 1e-9), "f = {f}: {p}");
    }
    // Case B: c = 1 on the first ⌊log2 f⌋ stages.
    assert_eq!(
        copy_rates(4, 4, CopyCase::Early).unwrap(),
        [0.0, 0.0, 1.0, 1.0]
    );
    assert_eq!(
        copy_rates(4, 6, CopyCase::Early).unwrap(),
        [0.0, 0.5, 1.0, 1.0]
    );
}

/// [Park 1996, §4.1, Eqs 1–2, derived] traces 1, 2 and 4.
#[test]
fn model_traces() {
    let t = throughput(4, 4, 0.5, 1.0, CopyCase::RandomStart).unwrap();
    assert!(close(t.rho, 0.4, 1e-12));
    let rows: Vec<(f64, f64, f64)> = t
        .stages
        .iter()
        .map(|s| (s.rho_out, s.u_out, s.m_out))
        .collect();
    let want = [
        (0.388225, 0.177692, 0.542295),
        (0.400403, 0.156939, 0.608047),
        (0.429739, 0.136887, 0.681464),
        (0.496321, 0.115917, 0.766447),
    ];
    for (g, w) in rows.iter().zip(want) {
        assert!(
            close(g.0, w.0, 1e-6) && close(g.1, w.1, 1e-6) && close(g.2, w.2, 1e-6),
            "{g:?} vs {w:?}"
        );
    }
    assert!(close(t.eta, 0.211018, 1e-6), "{}", t.eta);
    let t = throughput(4, 4, 0.5, 1.0, CopyCase::Early).unwrap();
    assert!(close(t.eta, 0.188377, 1e-6), "{}", t.eta);
    let t = throughput(7, 4, 0.5, 1.0, CopyCase::RandomStart).unwrap();
    assert!(close(t.rho_out, 0.424750, 1e-6) && close(t.u_out, 0.097068, 1e-6));
    assert!(close(t.eta, 0.178988, 1e-6));
}

/// Our reconstruction of Fig. 6 (n = 7, L = 1.0) and Fig. 7 (η vs n)
/// values for several (m, f).
#[test]
fn model_reconstructed_m_f_values() {
    let fig6 = [
        (2, 0.1, 0.3098),
        (2, 0.5, 0.2530),
        (2, 0.9, 0.2120),
        (4, 0.1, 0.2839),
        (4, 0.5, 0.1790),
        (4, 0.9, 0.1287),
        (8, 0.1, 0.2449),
        (8, 0.5, 0.1140),
        (8, 0.9, 0.0733),
        (16, 0.1, 0.1915),
        (16, 0.5, 0.0663),
        (32, 0.5, 0.0361),
    ];
    for (f, m, eta) in fig6 {
        let t = throughput(7, f, m, 1.0, CopyCase::RandomStart).unwrap();
        assert!(close(t.eta, eta, 5e-5), "f={f} m={m}: {} vs {eta}", t.eta);
    }
    // Fig. 6 at other loads, f = 4, m = 0.5.
    for (load, eta) in [(0.1, 0.0359), (0.4, 0.1089), (0.6, 0.1397)] {
        let t = throughput(7, 4, 0.5, load, CopyCase::RandomStart).unwrap();
        assert!(close(t.eta, eta, 5e-5), "L={load}: {}", t.eta);
    }
    // Fig. 7 rows (case A / case B).
    let fig7 = [
        (3, 0.5, 4, 0.2270, 0.2167),
        (10, 0.5, 4, 0.1569, 0.1077),
        (7, 0.5, 8, 0.1140, 0.0821),
        (10, 0.5, 8, 0.1047, 0.0636),
        (3, 0.5, 8, 0.1384, 0.1384),
        (5, 0.9, 8, 0.0769, 0.0644),
    ];
    for (n, m, f, a, bb) in fig7 {
        let ta = throughput(n, f, m, 1.0, CopyCase::RandomStart).unwrap();
        let tb = throughput(n, f, m, 1.0, CopyCase::Early).unwrap();
        assert!(close(ta.eta, a, 5e-5), "A n={n} m={m} f={f}: {}", ta.eta);
        assert!(close(tb.eta, bb, 5e-5), "B n={n} m={m} f={f}: {}", tb.eta);
        assert!(ta.eta >= tb.eta - 1e-12);
    }
}

#[test]
fn model_errors() {
    assert!(throughput(0, 1, 0.5, 1.0, CopyCase::RandomStart).is_err());
    assert!(throughput(3, 9, 0.5, 1.0, CopyCase::RandomStart).is_err());
    assert!(throughput(3, 0, 0.5, 1.0, CopyCase::RandomStart).is_err());
    assert!(throughput(3, 2, 1.5, 1.0, CopyCase::RandomStart).is_err());
    assert!(throughput(3, 2, 0.5, f64::NAN, CopyCase::RandomStart).is_err());
    assert!(throughput(3, 2, 0.5, 2.0, CopyCase::RandomStart).is_err());
}
