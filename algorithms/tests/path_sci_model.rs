//! The SCI-torus paper's latency models [Oral 2003, §5] against our evaluation
//! of its Eqs 8-12: the table (4×4 testbed profile, 128 B, µs), the
//! Eq 8, 10-12 values at the Table 1 parameters [Oral 2003, §5, Table 1], relay
//! counts for r on 8×8 and 16×16 [Oral 2003, §5, Eq 10, derived], and the network term of Eq 4 [Oral 2003, §5, Eq 4, derived].

use mcast_algorithms::path::sci_model::{
    estimate, hop_counts, unicast_network_ns, MdForm, SciAlgorithm, SciModelError, SciParams,
    TimeUnit, UTorusForm,
};
use mcast_algorithms::topo::{Links, Topology};

fn lat(p: &SciParams, a: SciAlgorithm, g: usize) -> f64 {
    estimate(p, a, g).unwrap().latency_us
}

fn close(got: f64, want: f64) {
    assert!((got - want).abs() <= 0.06, "got {got:.3}, want {want}");
}

/// [Oral 2003, §5.1–5.5, Eqs 8–12, derived]: (G, SepAdd Eq 8, S-torus Eq 12, U-torus fraction,
/// U-torus ceiling, Md h = ⌈G/k⌉, Mu h = ⌈G/r⌉ + r − 2).
const TABLE: [(usize, f64, f64, f64, f64, f64, f64); 13] = [
    (4, 33.0, 542.0, 1270.0, 1270.0, 214.0, 414.0),
    (5, 44.0, 811.0, 2377.7, 3801.9, 424.0, 823.9),
    (6, 54.9, 1079.9, 2852.4, 3801.9, 424.0, 823.9),
    (7, 65.9, 1348.9, 3327.2, 3801.9, 424.0, 823.9),
    (8, 76.9, 1617.9, 1903.0, 1903.0, 424.0, 823.9),
    (9, 87.9, 1886.9, 3168.9, 5067.9, 634.0, 1028.9),
    (10, 98.9, 2155.9, 3801.9, 5067.9, 634.0, 1028.9),
    (11, 109.9, 2424.9, 4434.9, 5067.9, 634.0, 1028.9),
    (12, 120.9, 2693.9, 2535.9, 2535.9, 634.0, 1028.9),
    (13, 131.9, 2962.9, 3168.9, 5067.9, 843.9, 1233.9),
    (14, 142.8, 3231.8, 3801.9, 5067.9, 843.9, 1233.9),
    (15, 153.8, 3500.8, 4434.9, 5067.9, 843.9, 1233.9),
    (16, 164.8, 3769.8, 2535.9, 2535.9, 843.9, 1233.9),
];

#[test]
fn sci_model_eqs_8_to_12() {
    let p = SciParams::testbed();
    let ceil = SciParams {
        utorus_form: UTorusForm::Ceiling,
        ..p
    };
    for (g, sa, s, uf, uc, md, mu) in TABLE {
        close(lat(&p, SciAlgorithm::Separate, g), sa);
        close(lat(&p, SciAlgorithm::STorus, g), s);
        close(lat(&p, SciAlgorithm::UTorus, g), uf);
        close(lat(&ceil, SciAlgorithm::UTorus, g), uc);
        close(lat(&p, SciAlgorithm::MdTorus, g), md);
        close(lat(&p, SciAlgorithm::MuTorus, g), mu);
    }
    // RC7: single-partition Mu-torus at G = 4 is the chain, 414 µs.
    assert_eq!(estimate(&p, SciAlgorithm::MuTorus, 4).unwrap().relays, 2.0);
    // RC6 slope: 10.99 µs per destination.
    let slope = lat(&p, SciAlgorithm::Separate, 16) - lat(&p, SciAlgorithm::Separate, 15);
    assert!((slope - 10.988).abs() < 1e-9);
    // L_i at 128 B ([Oral 2003, §5, Eq 5, Table 1]): 209.99 (Md), 204.99 (Mu), 632.99 (U), 268.99 (S).
    for (a, li) in [
        (SciAlgorithm::MdTorus, 209.988),
        (SciAlgorithm::MuTorus, 204.988),
        (SciAlgorithm::UTorus, 632.988),
        (SciAlgorithm::STorus, 268.988),
    ] {
        assert!((p.l_i_us(a) - li).abs() < 1e-9);
    }
    // o(512 B) = 3203 ns (Fig 8's label, 3.15 ns/B above 128 B: 3203.6).
    let big = SciParams { bytes: 512.0, ..p };
    assert!((big.o_us() - 3.2036).abs() < 1e-9);
}

/// [Oral 2003, §5, Eq 10, derived]: relay counts of the Mu candidate for r on 8×8 (G = 64) and 16×16
/// (G = 256): r = k is optimal.
#[test]
fn mu_optimal_r_is_k() {
    for (k, g, rs) in [
        (8, 64, [(8, 14.0), (16, 18.0), (32, 32.0)]),
        (16, 256, [(8, 38.0), (16, 30.0), (32, 38.0)]),
    ] {
        for (r, h) in rs {
            let p = SciParams {
                k,
                mu_r: r,
                ..SciParams::testbed()
            };
            assert_eq!(estimate(&p, SciAlgorithm::MuTorus, g).unwrap().relays, h);
        }
    }
}

#[test]
fn md_candidate_b_and_ns_reading() {
    let p = SciParams {
        md_form: MdForm::RingsPlusChain,
        ..SciParams::testbed()
    };
    // h = ⌈16/4⌉ + 4 − 2 = 6.
    assert_eq!(estimate(&p, SciAlgorithm::MdTorus, 16).unwrap().relays, 6.0);
    let ns = SciParams {
        t_process_unit: TimeUnit::Ns,
        ..SciParams::testbed()
    };
    assert!((ns.t_process_us(SciAlgorithm::UTorus) - 0.629).abs() < 1e-12);
}

#[test]
fn model_errors() {
    let p = SciParams::testbed();
    assert_eq!(
        estimate(&p, SciAlgorithm::STorus, 1),
        Err(SciModelError::BadGroup { g: 1, nodes: 16 })
    );
    assert_eq!(
        estimate(&p, SciAlgorithm::STorus, 17),
        Err(SciModelError::BadGroup { g: 17, nodes: 16 })
    );
    let bad = SciParams { k: 1, ..p };
    assert!(matches!(
        estimate(&bad, SciAlgorithm::UTorus, 2),
        Err(SciModelError::BadTorus { .. })
    ));
    let nan = SciParams {
        l_p_ns: f64::NAN,
        ..p
    };
    assert!(matches!(
        estimate(&nan, SciAlgorithm::UTorus, 2),
        Err(SciModelError::BadParameter(_))
    ));
    let r0 = SciParams { mu_r: 0, ..p };
    assert!(estimate(&r0, SciAlgorithm::MuTorus, 4).is_err());
    // Any torus size: a 16×16×16 torus accepts G = 4096.
    let big = SciParams { k: 16, n: 3, ..p };
    assert!(estimate(&big, SciAlgorithm::MdTorus, 4096).is_ok());
}

/// [Oral 2003, §5, Eq 4, derived]: the UTR unicast (0,0) -> (2,1) on 4×4 has h_p = 3, h_f = 1,
/// h_s = 1 and a network term of 772 ns; (0,0) -> (3,3) is the 994 ns
/// maximum of [Oral 2003, §5.1–5.5, Eqs 8–12, derived].
#[test]
fn network_terms() {
    let t = Topology::torus(&[4, 4], Links::Unidirectional).unwrap();
    let p = SciParams::testbed();
    let r = t.route(0, t.node(&[2, 1]).unwrap()).unwrap();
    assert_eq!(hop_counts(&r), (3, 1, 1));
    assert_eq!(
        unicast_network_ns(&p, &t, 0, t.node(&[2, 1]).unwrap()).unwrap(),
        772.0
    );
    assert_eq!(unicast_network_ns(&p, &t, 0, 15).unwrap(), 994.0);
    assert_eq!(unicast_network_ns(&p, &t, 0, 1).unwrap(), 14.0);
}
