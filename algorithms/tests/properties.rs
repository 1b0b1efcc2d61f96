//! Property tests: plans over random chains pass the delivery oracle, and the
//! unit-step model obeys the paper's bounds [Sivaram 1998, §4.3.2, Fig 8; §4.3.3, Fig 9; §4.3.4, Fig 10].

use std::collections::BTreeSet;

use mcast_algorithms::{
    ceil_log2, check_delivery, check_responsibility, l1, optimal_k, simulate, ChainTree,
    Forwarding, Plan, PlanError, Shape,
};
use proptest::prelude::*;

/// (n, k, m, chain of n distinct arbitrary node ids in random order).
fn case() -> impl Strategy<Value = (usize, usize, usize, Vec<usize>)> {
    (1usize..200).prop_flat_map(|n| {
        (
            Just(n),
            1usize..=8,
            1usize..10,
            prop::collection::btree_set(any::<usize>(), n)
                .prop_map(|s| s.into_iter().collect::<Vec<_>>())
                .prop_shuffle(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn plans_deliver_exactly_once((n, k, _m, chain) in case()) {
        for shape in [Shape::KBinomial { k }, Shape::Flat] {
            let plan = Plan::from_chain(&chain, shape).unwrap();
            prop_assert_eq!(check_delivery(&plan, chain[0], &chain[1..]), Ok(()));
            prop_assert_eq!(check_responsibility(&plan, chain[0], &chain[1..]), Ok(()));
            prop_assert_eq!(plan.len(), n);
            prop_assert_eq!(plan.send_count(), n - 1);
            // The plan is the tree, renamed through the chain.
            let tree = ChainTree::new(shape, n).unwrap();
            for p in 0..n {
                let to: Vec<usize> = plan.sends(chain[p]).iter().map(|s| s.to).collect();
                let want: Vec<usize> = tree.children(p).iter().map(|&c| chain[c]).collect();
                prop_assert_eq!(to, want);
            }
        }
    }

    #[test]
    fn duplicate_ids_are_rejected((n, _k, _m, chain) in case(), at in any::<prop::sample::Index>()) {
        let mut bad = chain.clone();
        let src = at.index(n);
        bad.push(chain[src]);
        let got = Plan::from_chain(&bad, Shape::KBinomial { k: 2 });
        let is_duplicate_error = matches!(
            got,
            Err(PlanError::DuplicateNode { node, first, second }) if node == chain[src] && first == src && second == n
        );
        prop_assert!(is_duplicate_error);
    }

    #[test]
    fn unit_step_bounds((n, k, m, _chain) in case()) {
        let tree = ChainTree::new(Shape::KBinomial { k }, n).unwrap();
        let one = simulate(&tree, 1, Forwarding::Fpfs);
        prop_assert_eq!(one.completion(), l1(n, k));
        let fp = simulate(&tree, m, Forwarding::Fpfs);
        let fc = simulate(&tree, m, Forwarding::Fcfs);
        prop_assert!(fp.completion() <= l1(n, k) + (m - 1) * k);
        prop_assert!(fp.completion() <= fc.completion(), "FPFS {} > FCFS {}", fp.completion(), fc.completion());
        // Both disciplines deliver every packet everywhere, in packet order,
        // and a child never has a packet before its parent.
        for p in 1..n {
            let parent = tree.parent(p).unwrap();
            for s in [&fp, &fc] {
                prop_assert!(s.arrivals(p).windows(2).all(|w| w[0] < w[1]));
                for i in 0..m {
                    prop_assert!(s.arrival(p, i) > s.arrival(parent, i));
                }
            }
        }
        // Theorem 2 holds exactly when the root has the most children, and
        // then FPFS holds one packet per NI (Lemmas 1–2).
        let dr = tree.children(0).len();
        if n >= 2 && dr == tree.max_children() {
            prop_assert_eq!(fp.completion(), l1(n, k) + (m - 1) * dr);
            prop_assert_eq!(fp.peak_held(), 1);
        }
        // FCFS holds all m packets wherever a node has two or more children.
        if tree.max_children() >= 2 {
            prop_assert_eq!(fc.peak_held(), m);
        }
    }

    #[test]
    fn tree_shape_limits((n, k, _m, _chain) in case()) {
        let tree = ChainTree::new(Shape::KBinomial { k }, n).unwrap();
        for p in 0..n {
            prop_assert!(tree.children(p).len() <= k);
        }
        prop_assert_eq!(tree.height(), (0..n).map(|p| tree.depth(p)).max().unwrap());
        let flat = ChainTree::new(Shape::Flat, n).unwrap();
        prop_assert_eq!(flat.children(0).len(), n - 1);
        prop_assert!((1..n).all(|p| flat.children(p).is_empty()));
        // Separate addressing: the source sends m·(n−1) copies back to back.
        let m = 3;
        prop_assert_eq!(simulate(&flat, m, Forwarding::Fpfs).completion(), m * (n - 1));
        let order: BTreeSet<usize> = tree.preorder().iter().copied().collect();
        prop_assert_eq!(order.len(), n);
    }

    #[test]
    fn optimal_k_minimises_theorem_3(n in 1usize..2000, m in 1usize..300) {
        let k = optimal_k(n, m);
        let kmax = ceil_log2(n).max(1);
        prop_assert!((1..=kmax).contains(&k));
        let cost = |k: usize| l1(n, k) + (m - 1) * k;
        for j in 1..=kmax {
            prop_assert!(cost(k) <= cost(j));
            if j < k {
                prop_assert!(cost(j) > cost(k), "smallest k among ties");
            }
        }
    }
}
