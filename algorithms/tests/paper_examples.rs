//! Every worked example of the irregular-networks paper's NI-based multicast
//! section, as cited: [Sivaram 1998, §4.1–4.3.4], with computed vectors for
//! §4.3.2–4.3.3. The vectors were checked against the paper text
//! ([Sivaram 1998, §4.2–4.3]); where the paper states a
//! number (Fig 7: 6 vs 5 steps; Fig 8: 9 = 3 + (3−1)·3 steps) the test says so.

use std::collections::BTreeMap;

use mcast_algorithms::plan::PlanSend;
use mcast_algorithms::{
    ceil_log2, check_delivery, check_responsibility, l1, n_nodes, optimal_k, simulate, split,
    ChainTree, Forwarding, Plan, Shape,
};

fn kb(n: usize, k: usize) -> ChainTree {
    ChainTree::new(Shape::KBinomial { k }, n).unwrap()
}

fn fpfs(n: usize, k: usize, m: usize) -> usize {
    simulate(&kb(n, k), m, Forwarding::Fpfs).completion()
}

fn fcfs(n: usize, k: usize, m: usize) -> usize {
    simulate(&kb(n, k), m, Forwarding::Fcfs).completion()
}

/// The non-leaf positions of a tree with their children, in the order Fig 10's construction lists them.
fn listing(t: &ChainTree) -> BTreeMap<usize, Vec<usize>> {
    (0..t.n())
        .filter(|&p| !t.children(p).is_empty())
        .map(|p| (p, t.children(p).to_vec()))
        .collect()
}

fn map(entries: &[(usize, &[usize])]) -> BTreeMap<usize, Vec<usize>> {
    entries.iter().map(|&(p, c)| (p, c.to_vec())).collect()
}

// ---------------------------------------------------------------- [Sivaram 1998, §4.3.4, Fig 10]

/// The construction of [Sivaram 1998, §4.3.4, Fig 10], transcribed literally (recursive, signed
/// arithmetic), as the reference `split`/`ChainTree` must match exactly.
fn reference_build(lo: usize, hi: usize, k: usize, children: &mut [Vec<usize>]) {
    let sz = hi - lo + 1;
    if sz <= 1 {
        return;
    }
    let mut s = 0;
    while n_nodes(s, k) < sz as u64 {
        s += 1;
    }
    let mut right = hi as i64 + 1;
    for i in 1..=s.min(k) {
        if right - 1 <= lo as i64 {
            break;
        }
        let start = (lo as i64 + 1).max(right - n_nodes(s - i, k) as i64) as usize;
        children[lo].push(start);
        reference_build(start, right as usize - 1, k, children);
        right = start as i64;
    }
}

#[test]
fn tree_equals_reference_build() {
    for n in 1..=300 {
        for k in 1..=10 {
            let mut want = vec![Vec::new(); n];
            reference_build(0, n - 1, k, &mut want);
            let t = kb(n, k);
            for (p, w) in want.iter().enumerate() {
                assert_eq!(t.children(p), w.as_slice(), "n={n} k={k} pos={p}");
            }
        }
    }
}

#[test]
fn split_on_inner_ranges_equals_build() {
    // An NI evaluates split on its own (lo, hi); lo need not be 0.
    for lo in [0usize, 1, 7, 100] {
        for len in 1..=70 {
            let hi = lo + len - 1;
            for k in 1..=7 {
                let mut want = vec![Vec::new(); hi + 1];
                reference_build(lo, hi, k, &mut want);
                let got: Vec<usize> = split(Shape::KBinomial { k }, lo, hi)
                    .unwrap()
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect();
                assert_eq!(got, want[lo], "lo={lo} hi={hi} k={k}");
            }
        }
    }
}

#[test]
fn s4_6_caveat_n16_k3_root_has_one_child() {
    // N(4,3) = 15 < 16 = N(s,3) needs s = 5, and N(4,3) = 15 covers all 15
    // destinations, so the root has a single child with 3 children.
    assert_eq!(n_nodes(4, 3), 15);
    assert_eq!(l1(16, 3), 5);
    let t = kb(16, 3);
    assert_eq!(t.children(0), &[1]);
    assert_eq!(t.children(1).len(), 3);
    // Lemma 2's precondition fails: packets reach position 1 every step but it
    // needs 3 steps per packet, so even FPFS queues packets there
    // (the bound "FPFS holds 1", derived from [Sivaram 1998, §4.2, Fig 6], is for trees whose root has the most children).
    let s = simulate(&t, 8, Forwarding::Fpfs);
    assert_eq!(s.peak_held_at(1), 6);
    // Theorem 3's value with k stays an upper bound (and is met here).
    for m in 1..=11 {
        assert!(fpfs(16, 3, m) <= l1(16, 3) + (m - 1) * 3);
    }
}

#[test]
fn s4_6_properties_n_le_69() {
    // [Sivaram 1998, §4.3.4, Fig 10]: for n ≤ 69, k ≤ ⌈log2 n⌉, m ≤ 11: single-packet completion
    // is L1(n,k); m-packet completion ≤ L1 + (m−1)·k.
    for n in 2..=69 {
        for k in 1..=ceil_log2(n) {
            let t = kb(n, k);
            assert_eq!(
                simulate(&t, 1, Forwarding::Fpfs).completion(),
                l1(n, k),
                "n={n} k={k}"
            );
            for m in 1..=11 {
                let c = simulate(&t, m, Forwarding::Fpfs).completion();
                assert!(c <= l1(n, k) + (m - 1) * k, "n={n} k={k} m={m}: {c}");
            }
        }
    }
}

#[test]
fn s4_6_plan_over_chain_passes_oracles() {
    let chain: Vec<usize> = (0..16).map(|i| 1000 - 37 * i).collect();
    for k in 1..=4 {
        let p = Plan::from_chain(&chain, Shape::KBinomial { k }).unwrap();
        check_delivery(&p, chain[0], &chain[1..]).unwrap();
        check_responsibility(&p, chain[0], &chain[1..]).unwrap();
    }
    // n = 16, k = 3: the source's only send delegates all 15 destinations.
    let p = Plan::from_chain(&chain, Shape::KBinomial { k: 3 }).unwrap();
    assert_eq!(
        p.sends(chain[0]),
        &[PlanSend {
            to: chain[1],
            covers: chain[1..].to_vec()
        }]
    );
}

// ---------------------------------------------------------------- [Sivaram 1998, §4.1]

#[test]
fn s4_1_three_destinations_single_packet() {
    // n = 4 (3 destinations): the smart-NI binomial tree takes ⌈log2 4⌉ = 2 steps.
    assert_eq!(ceil_log2(4), 2);
    assert_eq!(fpfs(4, ceil_log2(4), 1), 2);
}

// ---------------------------------------------------------------- [Sivaram 1998, §4.2, Fig 6]

#[test]
fn s4_2_peak_held_fpfs_1_fcfs_m() {
    // [Sivaram 1998, §4.2, Fig 6, derived]: n = 16, m = 8, binomial and 2-binomial trees.
    for k in [4, 2] {
        let t = kb(16, k);
        assert_eq!(simulate(&t, 8, Forwarding::Fpfs).peak_held(), 1, "k={k}");
        assert_eq!(simulate(&t, 8, Forwarding::Fcfs).peak_held(), 8, "k={k}");
    }
}

#[test]
fn s4_2_hold_times_tc_and_tp() {
    // FCFS with zero gap between arriving packets: in the n = 16, k = 3 tree
    // position 1 is the source's only child (so its packets arrive one per
    // step) and has 3 children, so every packet i is held
    // T_c = (p−i+1) + (k−2)p + i = ((k−1)p + 1) steps [paper §4.2.3].
    let t = kb(16, 3);
    let kk = t.children(1).len();
    assert_eq!(kk, 3);
    for p in 1..=8 {
        let s = simulate(&t, p, Forwarding::Fcfs);
        for i in 0..p {
            let (a, b) = s.hold_interval(1, i).unwrap();
            let i1 = i + 1;
            assert_eq!(b - a, (p - i1 + 1) + (kk - 2) * p + i1);
            assert_eq!(b - a, (kk - 1) * p + 1);
        }
    }
    // FPFS on binomial trees (root has the most children): every intermediate
    // NI holds each packet exactly T_p = δ(v) steps.
    for n in [8, 16, 32] {
        let t = kb(n, ceil_log2(n));
        let s = simulate(&t, 5, Forwarding::Fpfs);
        for v in 1..n {
            for i in 0..5 {
                match s.hold_interval(v, i) {
                    Some((a, b)) => assert_eq!(b - a, t.children(v).len()),
                    None => assert!(t.children(v).is_empty()),
                }
            }
        }
    }
}

#[test]
fn s4_2_fpfs_never_slower_than_fcfs() {
    // [Sivaram 1998, §4.2, Fig 6, derived]: n = 2..64, every k ≤ ⌈log2 n⌉, m = 1..8: 2,568 cases,
    // FPFS strictly faster in 777, never slower.
    let (mut cases, mut faster) = (0, 0);
    for n in 2..=64 {
        for k in 1..=ceil_log2(n) {
            let t = kb(n, k);
            for m in 1..=8 {
                let p = simulate(&t, m, Forwarding::Fpfs).completion();
                let c = simulate(&t, m, Forwarding::Fcfs).completion();
                assert!(p <= c, "n={n} k={k} m={m}: FPFS {p} > FCFS {c}");
                cases += 1;
                faster += usize::from(p < c);
            }
        }
    }
    assert_eq!(cases, 2568);
    assert_eq!(faster, 777);
    assert_eq!((fpfs(16, 2, 2), fcfs(16, 2, 2)), (7, 8));
}

// ---------------------------------------------------------------- [Sivaram 1998, §4.3.1, Fig 7]

#[test]
fn s4_3_fig7_three_packets_three_destinations() {
    // Paper §4.3.1: binomial 6 steps, linear 5 steps.
    let bin = kb(4, 2);
    // S has children A (first) and B; A has child C: positions A=2, B=1, C=3.
    assert_eq!(bin.children(0), &[2, 1]);
    assert_eq!(bin.children(2), &[3]);
    let s = simulate(&bin, 3, Forwarding::Fpfs);
    assert_eq!(s.arrivals(2), &[1, 3, 5]); // S→A in steps 1, 3, 5
    assert_eq!(s.arrivals(1), &[2, 4, 6]); // S→B in steps 2, 4, 6
    assert_eq!(s.arrivals(3), &[2, 4, 6]); // A→C in steps 2, 4, 6
    assert_eq!(s.completion(), 6);

    let lin = kb(4, 1);
    let s = simulate(&lin, 3, Forwarding::Fpfs);
    assert_eq!(s.arrivals(1), &[1, 2, 3]);
    assert_eq!(s.arrivals(2), &[2, 3, 4]);
    assert_eq!(s.arrivals(3), &[3, 4, 5]);
    assert_eq!(s.completion(), 5);

    // Theorem 3 agrees: k = 1 is optimal for n = 4, m = 3.
    assert_eq!(optimal_k(4, 3), 1);
}

// ---------------------------------------------------------------- [Sivaram 1998, §4.3.2, Fig 8]

#[test]
fn s4_4_fig8_three_packets_seven_destinations() {
    let t = kb(8, 3);
    assert_eq!(
        listing(&t),
        map(&[(0, &[4, 2, 1]), (4, &[6, 5]), (2, &[3]), (6, &[7])])
    );
    let s = simulate(&t, 3, Forwarding::Fpfs);
    assert_eq!(s.completion(), 9); // paper: 9 = 3 + (3−1)·3
    assert_eq!(s.completion(), l1(8, 3) + (3 - 1) * t.children(0).len());
    assert_eq!(s.arrivals(4), &[1, 4, 7]);
    for p in [2, 6] {
        assert_eq!(s.arrivals(p), &[2, 5, 8], "pos {p}");
    }
    for p in [1, 3, 5, 7] {
        assert_eq!(s.arrivals(p), &[3, 6, 9], "pos {p}");
    }
    // Theorem 1: each packet lags the previous one by δr = 3 steps.
    assert_eq!(
        (0..3).map(|i| s.packet_completion(i)).collect::<Vec<_>>(),
        vec![3, 6, 9]
    );
    // Lemma 2: delay_i(v) = δr at every non-root vertex.
    for v in 1..8 {
        let a = s.arrivals(v);
        assert_eq!((a[1] - a[0], a[2] - a[1]), (3, 3), "pos {v}");
    }
}

// ---------------------------------------------------------------- [Sivaram 1998, §4.3.3, Fig 9]

#[test]
fn s4_5_n_table() {
    let rows: [(usize, [u64; 11]); 6] = [
        (1, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        (2, [1, 2, 4, 7, 12, 20, 33, 54, 88, 143, 232]),
        (3, [1, 2, 4, 8, 15, 28, 52, 96, 177, 326, 600]),
        (4, [1, 2, 4, 8, 16, 31, 60, 116, 224, 432, 833]),
        (5, [1, 2, 4, 8, 16, 32, 63, 124, 244, 480, 944]),
        (6, [1, 2, 4, 8, 16, 32, 64, 127, 252, 500, 992]),
    ];
    for (k, row) in rows {
        for (s, &want) in row.iter().enumerate() {
            assert_eq!(n_nodes(s, k), want, "N({s},{k})");
        }
    }
    for s in 0..10 {
        assert_eq!(n_nodes(s, 0), 1);
    }
}

/// Theorem 3 objective for every k in 1..=⌈log2 n⌉ (index k−1).
fn objective(n: usize, m: usize) -> Vec<usize> {
    (1..=ceil_log2(n).max(1))
        .map(|k| l1(n, k) + (m - 1) * k)
        .collect()
}

/// All k attaining the minimum of the objective.
fn argmin(n: usize, m: usize) -> Vec<usize> {
    let obj = objective(n, m);
    let best = *obj.iter().min().unwrap();
    (1..=obj.len()).filter(|&k| obj[k - 1] == best).collect()
}

/// One row of the optimal-k table (computed from [Sivaram 1998, §4.3.3]): n, L1 for k = 1.., and
/// (m_lo, m_hi, optimal k set); m_hi = None means "and above" (checked to 400).
type Row = (
    usize,
    &'static [usize],
    &'static [(usize, Option<usize>, &'static [usize])],
);

const OPTIMAL_K_TABLE: &[Row] = &[
    (2, &[1], &[(1, None, &[1])]),
    (3, &[2, 2], &[(1, Some(1), &[1, 2]), (2, None, &[1])]),
    (
        4,
        &[3, 2],
        &[(1, Some(1), &[2]), (2, Some(2), &[1, 2]), (3, None, &[1])],
    ),
    (
        5,
        &[4, 3, 3],
        &[
            (1, Some(1), &[2, 3]),
            (2, Some(2), &[1, 2]),
            (3, None, &[1]),
        ],
    ),
    (
        8,
        &[7, 4, 3],
        &[
            (1, Some(1), &[3]),
            (2, Some(2), &[2, 3]),
            (3, Some(3), &[2]),
            (4, Some(4), &[1, 2]),
            (5, None, &[1]),
        ],
    ),
    (
        9,
        &[8, 4, 4, 4],
        &[
            (1, Some(1), &[2, 3, 4]),
            (2, Some(4), &[2]),
            (5, Some(5), &[1, 2]),
            (6, None, &[1]),
        ],
    ),
    (
        12,
        &[11, 4, 4, 4],
        &[
            (1, Some(1), &[2, 3, 4]),
            (2, Some(7), &[2]),
            (8, Some(8), &[1, 2]),
            (9, None, &[1]),
        ],
    ),
    (
        13,
        &[12, 5, 4, 4],
        &[
            (1, Some(1), &[3, 4]),
            (2, Some(2), &[2, 3]),
            (3, Some(7), &[2]),
            (8, Some(8), &[1, 2]),
            (9, None, &[1]),
        ],
    ),
    (
        16,
        &[15, 5, 5, 4],
        &[
            (1, Some(1), &[4]),
            (2, Some(10), &[2]),
            (11, Some(11), &[1, 2]),
            (12, None, &[1]),
        ],
    ),
    (
        17,
        &[16, 5, 5, 5, 5],
        &[
            (1, Some(1), &[2, 3, 4, 5]),
            (2, Some(11), &[2]),
            (12, Some(12), &[1, 2]),
            (13, None, &[1]),
        ],
    ),
    (
        21,
        &[20, 6, 5, 5, 5],
        &[
            (1, Some(1), &[3, 4, 5]),
            (2, Some(2), &[2, 3]),
            (3, Some(14), &[2]),
            (15, Some(15), &[1, 2]),
            (16, None, &[1]),
        ],
    ),
    (
        29,
        &[28, 6, 6, 5, 5],
        &[
            (1, Some(1), &[4, 5]),
            (2, Some(22), &[2]),
            (23, Some(23), &[1, 2]),
            (24, None, &[1]),
        ],
    ),
    (
        32,
        &[31, 6, 6, 6, 5],
        &[
            (1, Some(1), &[5]),
            (2, Some(25), &[2]),
            (26, Some(26), &[1, 2]),
            (27, None, &[1]),
        ],
    ),
    (
        33,
        &[32, 6, 6, 6, 6, 6],
        &[
            (1, Some(1), &[2, 3, 4, 5, 6]),
            (2, Some(26), &[2]),
            (27, Some(27), &[1, 2]),
            (28, None, &[1]),
        ],
    ),
    (
        64,
        &[63, 8, 7, 7, 7, 6],
        &[
            (1, Some(1), &[6]),
            (2, Some(2), &[2, 3]),
            (3, Some(55), &[2]),
            (56, Some(56), &[1, 2]),
            (57, None, &[1]),
        ],
    ),
    (
        128,
        &[127, 9, 8, 8, 8, 8, 7],
        &[
            (1, Some(1), &[7]),
            (2, Some(2), &[2, 3]),
            (3, Some(118), &[2]),
            (119, Some(119), &[1, 2]),
            (120, None, &[1]),
        ],
    ),
];

#[test]
fn s4_5_optimal_k_table() {
    for &(n, l1s, ranges) in OPTIMAL_K_TABLE {
        let got: Vec<usize> = (1..=ceil_log2(n).max(1)).map(|k| l1(n, k)).collect();
        assert_eq!(got, l1s, "L1 row for n={n}");
        let mut next_m = 1;
        for &(lo, hi, ks) in ranges {
            assert_eq!(lo, next_m, "table rows must be contiguous in m");
            let hi_m = hi.unwrap_or(400);
            for m in lo..=hi_m {
                assert_eq!(argmin(n, m), ks, "optimal k set for n={n} m={m}");
                // Ties "a/b" resolve to the smallest k.
                assert_eq!(optimal_k(n, m), ks[0], "optimal_k({n},{m})");
            }
            next_m = hi_m + 1;
        }
    }
}

#[test]
fn s4_5_k3_wins_strictly_only_at_m2() {
    // Cases with neither k = 1 nor k = 2 optimal, for m ≥ 2 (at m = 1 the
    // binomial tree is optimal): exactly m = 2 with n = 89–96, 144–177,
    // 233–299, and each is a strict k = 3 win.
    let strict_k3 =
        |n: usize| (89..=96).contains(&n) || (144..=177).contains(&n) || (233..=299).contains(&n);
    for n in 2..=299usize {
        let max_m = if n <= 128 { 199 } else { 9 };
        for m in 2..=max_m {
            let a = argmin(n, m);
            let neither = !a.contains(&1) && !a.contains(&2);
            let expect = m == 2 && strict_k3(n);
            assert_eq!(neither, expect, "n={n} m={m} argmin={a:?}");
            if expect {
                assert_eq!(a, vec![3], "n={n}");
                assert_eq!(optimal_k(n, m), 3);
            }
        }
    }
    // n = 256 also has a 2/3 tie at m = 3 (our rule picks 2).
    assert_eq!(argmin(256, 3), vec![2, 3]);
    assert_eq!(optimal_k(256, 3), 2);
    for n in 89..=96 {
        assert_eq!(optimal_k(n, 2), 3, "n={n}");
    }
}

#[test]
fn s4_5_patterns() {
    for n in 2..=300usize {
        // m = 1: the binomial tree is always optimal (possibly tied).
        assert!(argmin(n, 1).contains(&ceil_log2(n)), "n={n}");
        // Optimal k converges to 1: linear wins strictly once
        // m ≥ n − L1(n,2) + 1, with a 1/2 tie one below.
        if n >= 3 {
            let m0 = n - l1(n, 2) + 1;
            assert_eq!(argmin(n, m0), vec![1], "n={n} m={m0}");
            assert_eq!(argmin(n, m0 + 10), vec![1]);
            if m0 > 2 {
                assert_eq!(argmin(n, m0 - 1), vec![1, 2], "n={n} m={}", m0 - 1);
            }
        }
    }
}

#[test]
fn s4_5_sample_objective_values() {
    let obj = |n: usize, m: usize, k: usize| l1(n, k) + (m - 1) * k;
    assert_eq!(obj(16, 2, 2), 7);
    assert_eq!(obj(16, 2, 4), 8); // binomial 4 + 4
    assert_eq!(obj(32, 4, 2), 12);
    assert_eq!(obj(32, 4, 5), 20); // binomial 5 + 15
    assert_eq!(obj(64, 8, 2), 22);
    // The unit-step model meets these values.
    assert_eq!(fpfs(16, 2, 2), 7);
    assert_eq!(fpfs(16, 4, 2), 8);
    assert_eq!(fpfs(32, 2, 4), 12);
    assert_eq!(fpfs(32, 5, 4), 20);
    assert_eq!(fpfs(64, 2, 8), 22);
}

#[test]
fn s4_5_binomial_is_k_equal_ceil_log2() {
    // Fig 9(b): the 4-binomial tree on 16 nodes is the full binomial tree.
    let t = kb(16, 4);
    assert_eq!(t.children(0), &[8, 4, 2, 1]);
    // Larger k changes nothing.
    for k in 5..9 {
        assert_eq!(listing(&kb(16, k)), listing(&t), "k={k}");
    }
}

// ---------------------------------------------------------------- [Sivaram 1998, §4.3.2–4.3.3, derived]

#[test]
fn s8_3_trees() {
    /// (n, k, non-leaf positions with their children in send order).
    type Case = (usize, usize, &'static [(usize, &'static [usize])]);
    let cases: &[Case] = &[
        (8, 3, &[(0, &[4, 2, 1]), (2, &[3]), (4, &[6, 5]), (6, &[7])]),
        (
            16,
            4,
            &[
                (0, &[8, 4, 2, 1]),
                (2, &[3]),
                (4, &[6, 5]),
                (6, &[7]),
                (8, &[12, 10, 9]),
                (10, &[11]),
                (12, &[14, 13]),
                (14, &[15]),
            ],
        ),
        (
            16,
            3,
            &[
                (0, &[1]),
                (1, &[8, 4, 2]),
                (2, &[3]),
                (4, &[6, 5]),
                (6, &[7]),
                (8, &[12, 10, 9]),
                (10, &[11]),
                (12, &[14, 13]),
                (14, &[15]),
            ],
        ),
        (
            16,
            2,
            &[
                (0, &[4, 1]),
                (1, &[2]),
                (2, &[3]),
                (4, &[9, 5]),
                (5, &[7, 6]),
                (7, &[8]),
                (9, &[12, 10]),
                (10, &[11]),
                (12, &[14, 13]),
                (14, &[15]),
            ],
        ),
        (
            8,
            2,
            &[(0, &[1]), (1, &[4, 2]), (2, &[3]), (4, &[6, 5]), (6, &[7])],
        ),
        (4, 2, &[(0, &[2, 1]), (2, &[3])]),
        (4, 1, &[(0, &[1]), (1, &[2]), (2, &[3])]),
    ];
    for &(n, k, want) in cases {
        assert_eq!(listing(&kb(n, k)), map(want), "n={n} k={k}");
    }
}

#[test]
fn s8_3_completion_table() {
    // (n, k, FPFS m = 1..6, FCFS m = 1..6 or None where no FCFS value is computed,
    //  whether FPFS equals the Theorem 3 value L1 + (m−1)k).
    type Row = (usize, usize, [usize; 6], Option<[usize; 6]>);
    let rows: [Row; 6] = [
        (8, 3, [3, 6, 9, 12, 15, 18], Some([3, 6, 9, 12, 15, 18])),
        (16, 4, [4, 8, 12, 16, 20, 24], Some([4, 8, 12, 16, 20, 24])),
        (16, 3, [5, 8, 11, 14, 17, 20], Some([5, 8, 11, 14, 17, 20])),
        (16, 2, [5, 7, 9, 11, 13, 15], Some([5, 8, 11, 14, 17, 20])),
        (4, 2, [2, 4, 6, 8, 10, 12], None),
        (4, 1, [3, 4, 5, 6, 7, 8], None),
    ];
    for (n, k, fp, fc) in rows {
        for m in 1..=6 {
            assert_eq!(fpfs(n, k, m), fp[m - 1], "FPFS n={n} k={k} m={m}");
            assert_eq!(
                fp[m - 1],
                l1(n, k) + (m - 1) * k,
                "theorem n={n} k={k} m={m}"
            );
            if let Some(fc) = fc {
                assert_eq!(fcfs(n, k, m), fc[m - 1], "FCFS n={n} k={k} m={m}");
            }
        }
    }
}

#[test]
fn s8_3_single_packet_arrivals_n16_k2() {
    let s = simulate(&kb(16, 2), 1, Forwarding::Fpfs);
    let want: &[(usize, &[usize])] = &[
        (1, &[4]),
        (2, &[1, 9]),
        (3, &[2, 5, 12]),
        (4, &[3, 7, 10, 14]),
        (5, &[6, 8, 11, 13, 15]),
    ];
    assert_eq!(s.arrival(0, 0), 0);
    for &(step, positions) in want {
        for &p in positions {
            assert_eq!(s.arrival(p, 0), step, "pos {p}");
        }
    }
    let listed: usize = want.iter().map(|(_, p)| p.len()).sum();
    assert_eq!(listed, 15);
}
