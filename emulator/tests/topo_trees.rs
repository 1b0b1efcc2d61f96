//! The thesis's trees run distributed: each NI re-plans on the address field D
//! it received. The tree the engines build must be exactly the tree the
//! centralized planner in `mcast-algorithms` builds, and reach every
//! destination once.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcast::algorithm::{TopoTree, TreeKind};
use mcast::Forwarding;
use mcast_algorithms::trees::{plan, Options, PortModel};
use mcast_algorithms::Topology;
use mcast_emulator::lockstep::{simulate_tree, Post};
use proptest::prelude::*;

fn check(spec: &str, t: TopoTree, source: usize, dests: Vec<usize>) {
    let topo: Topology = spec.parse().unwrap();
    let n = topo.nodes();
    let want = plan(
        &topo,
        t.planner(),
        source,
        &dests,
        Options {
            // The port model assigns steps only; the tree's edges do not depend on it.
            port_model: PortModel::OnePort,
            packets: 1,
        },
    )
    .unwrap();
    let want: BTreeSet<(usize, usize)> = want.sends().iter().map(|s| (s.from, s.to)).collect();
    let got = simulate_tree(
        n,
        &Post::Multicast {
            source,
            dests: dests.clone(),
        },
        TreeKind::Topo(t),
        Some(Arc::new(topo)),
        Forwarding::Fpfs,
        2,
    )
    .unwrap();
    let edges: BTreeSet<(usize, usize)> = got.edges.iter().copied().collect();
    assert_eq!(edges.len(), got.edges.len(), "a copy sent twice");
    assert_eq!(edges, want, "{spec} {t:?} source {source} dests {dests:?}");
    for r in 0..n {
        let expect = if dests.contains(&r) { 2 } else { 0 };
        assert_eq!(got.arrivals[r].len(), expect, "rank {r}");
    }
}

#[test]
fn bcast_on_a_hypercube_and_a_torus() {
    for t in [
        TopoTree::UCube,
        TopoTree::Maxport,
        TopoTree::Combine,
        TopoTree::WSort,
        TopoTree::UTorus,
    ] {
        check("hypercube:4", t, 5, (0..16).filter(|&d| d != 5).collect());
    }
    check(
        "torus:5x5:uni",
        TopoTree::UTorus,
        23,
        vec![0, 6, 11, 3, 8, 24],
    );
    check("torus:4x4", TopoTree::UTorus, 0, (1..16).collect());
}

fn subset(n: usize) -> impl Strategy<Value = (usize, Vec<usize>)> {
    (0..n, proptest::collection::vec(any::<bool>(), n)).prop_map(move |(s, pick)| {
        let d = (0..n).filter(|&i| i != s && pick[i]).collect();
        (s, d)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn hypercube_trees_match_the_planner((s, d) in subset(32), which in 0usize..5) {
        prop_assume!(!d.is_empty());
        let t = [TopoTree::UCube, TopoTree::Maxport, TopoTree::Combine, TopoTree::WSort, TopoTree::UTorus][which];
        check("hypercube:5", t, s, d);
    }

    #[test]
    fn utorus_matches_the_planner((s, d) in subset(36), uni: bool) {
        prop_assume!(!d.is_empty());
        check(if uni { "torus:6x6:uni" } else { "torus:6x6" }, TopoTree::UTorus, s, d);
    }
}
