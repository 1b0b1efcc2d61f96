//! Unit tests of `algorithm`.

use super::*;

#[test]
fn names_round_trip() {
    for a in Algorithm::ALL
        .into_iter()
        .chain(Algorithm::TOPOLOGY)
        .chain([Algorithm::KBinomial { k: Some(3) }])
    {
        assert_eq!(a.to_string().parse::<Algorithm>().unwrap(), a);
    }
    assert!("kbinomial:0".parse::<Algorithm>().is_err());
    assert!("kbinomial:x".parse::<Algorithm>().is_err());
    assert!("tree".parse::<Algorithm>().is_err());
    assert_eq!(
        "KBINOMIAL:2".parse::<Algorithm>().unwrap(),
        Algorithm::KBinomial { k: Some(2) }
    );
}

#[test]
fn shapes() {
    assert_eq!(
        Algorithm::Binomial.shape(8, 1).unwrap(),
        Shape::KBinomial { k: 3 }
    );
    assert_eq!(
        Algorithm::Chain.shape(8, 1).unwrap(),
        Shape::KBinomial { k: 1 }
    );
    // Theorem 3, [Sivaram 1998, §4.3.3]: n = 16, m = 2..10 → k = 2.
    assert_eq!(
        Algorithm::KBinomial { k: None }.shape(16, 5).unwrap(),
        Shape::KBinomial { k: 2 }
    );
    assert!(Algorithm::KBinomial { k: Some(0) }.shape(8, 1).is_err());
}

#[test]
fn topology_resolution() {
    let cube: Topology = "hypercube:3".parse().unwrap();
    let torus: Topology = "torus:4x4".parse().unwrap();
    let mesh: Topology = "mesh:4x4".parse().unwrap();
    assert_eq!(
        Algorithm::Auto.resolve(8, 1, Some(&cube)).unwrap(),
        TreeKind::Topo(TopoTree::WSort)
    );
    assert_eq!(
        Algorithm::Auto.resolve(16, 1, Some(&torus)).unwrap(),
        TreeKind::Topo(TopoTree::UTorus)
    );
    assert!(matches!(
        Algorithm::Auto.resolve(16, 1, Some(&mesh)).unwrap(),
        TreeKind::Chain(_)
    ));
    assert!(matches!(
        Algorithm::Auto.resolve(16, 1, None).unwrap(),
        TreeKind::Chain(_)
    ));
    assert!(Algorithm::UTorus.resolve(8, 1, None).is_err());
    // Long messages: a chain over a network, a binomial tree in shared
    // memory; explicit algorithms and topologies do not care.
    let k = |t: TreeKind| match t {
        TreeKind::Chain(Shape::KBinomial { k }) => k,
        other => panic!("{other:?}"),
    };
    assert_eq!(k(Algorithm::Auto.resolve(8, 64, None).unwrap()), 1);
    let shm = |a: Algorithm, topo| {
        a.resolve_for(8, 64, topo, Medium::SharedMemory)
            .unwrap()
            .tree()
            .unwrap()
    };
    assert_eq!(k(shm(Algorithm::Auto, None)), 3);
    assert_eq!(k(shm(Algorithm::Chain, None)), 1);
    assert_eq!(
        shm(Algorithm::Auto, Some(&cube)),
        TreeKind::Topo(TopoTree::WSort)
    );
    assert!(Algorithm::UCube.resolve(16, 1, Some(&torus)).is_err());
    assert_eq!(
        Algorithm::UTorus.resolve(8, 1, Some(&cube)).unwrap(),
        TreeKind::Topo(TopoTree::UTorus)
    );
    assert!(Algorithm::UTorus.shape(8, 1).is_err());
}

#[test]
fn worms_resolve_to_themselves() {
    let Algorithm::Worm(w) = "tree-worm".parse().unwrap() else {
        panic!("tree-worm is a worm");
    };
    let r = Algorithm::Worm(w)
        .resolve_for(8, 1, None, Medium::Network)
        .unwrap();
    assert_eq!(r, Resolved::Worm(w));
    assert_eq!(r.tree(), None);
    assert_eq!(r.tree_code(), w.tree_code());
    assert!(Algorithm::Worm(w).resolve(8, 1, None).is_err());
    let flat = Algorithm::Flat.resolve_for(8, 1, None, Medium::Network);
    assert_eq!(flat.unwrap().tree_code(), (0, 0));
}

#[test]
fn a_bcast_timeout_names_the_parent_it_waits_for() {
    // k = 1 is a chain: position p's parent is p - 1. Root 2 of 5: rank 0
    // is position 3, fed by position 2, rank 4.
    let chain = Resolved::Tree(TreeKind::Chain(Shape::KBinomial { k: 1 }));
    assert_eq!(
        bcast_waits_for(2, 0, 5, chain, None, None),
        "waiting for packets from rank 4, its parent in the tree from root 2"
    );
    assert_eq!(
        bcast_waits_for(2, 3, 5, chain, None, None),
        "waiting for packets from root 2, its parent"
    );
    let flat = Resolved::Tree(TreeKind::Chain(Shape::Flat));
    assert_eq!(
        bcast_waits_for(0, 6, 8, flat, None, None),
        "waiting for packets from root 0, its parent"
    );
    let utorus = Resolved::Tree(TreeKind::Topo(TopoTree::UTorus));
    assert_eq!(
        bcast_waits_for(1, 0, 4, utorus, None, None),
        "waiting for packets from root 1",
        "without the topology nobody can tell"
    );
    // U-torus on a 4x4 torus from node 0: recursive doubling on the
    // R-chain, so most nodes are fed by a node other than the root, and
    // every node's parent is one the planner's own plan names.
    let torus: Topology = "torus:4x4".parse().unwrap();
    let plan = mcast_algorithms::trees::plan(
        &torus,
        mcast_algorithms::trees::TreeAlgorithm::UTorus,
        0,
        &(1..16).collect::<Vec<_>>(),
        Default::default(),
    )
    .unwrap();
    let mut fed_by_others = 0;
    for me in 1..16 {
        let parent = plan
            .sends()
            .iter()
            .find(|s| s.to == me)
            .map(|s| s.from)
            .unwrap();
        assert_eq!(utorus.bcast_parent(0, me, 16, Some(&torus)), Some(parent));
        fed_by_others += usize::from(parent != 0);
    }
    assert!(fed_by_others > 0);
    assert_eq!(
        bcast_waits_for(0, 0, 16, utorus, Some(&torus), None),
        "waiting for packets from root 0"
    );
}

#[test]
fn auto_spans_hosts_in_two_levels_and_explicit_trees_keep_their_meaning() {
    let hosts = Medium::Hosts { hosts: 3 };
    let r = |a: Algorithm, m| a.resolve_for(6, m, None, hosts).unwrap().tree().unwrap();
    assert_eq!(r(Algorithm::Auto, 1), TreeKind::Hosts { k: 0 });
    assert_eq!(
        r(Algorithm::Auto, 64),
        TreeKind::Hosts {
            k: optimal_k(3, 64)
        }
    );
    assert_eq!(
        r(Algorithm::KBinomial { k: None }, 1),
        TreeKind::Chain(Shape::KBinomial { k: optimal_k(6, 1) })
    );
    assert_eq!(
        r(Algorithm::Binomial, 1),
        TreeKind::Chain(Shape::KBinomial { k: 3 })
    );
    // One host, or one rank per host: no second level (flat for one
    // packet among at most FLAT_HOSTS hosts, the paper's k beyond).
    for h in [1, 6] {
        let t = Algorithm::Auto.resolve_for(6, 1, None, Medium::Hosts { hosts: h });
        assert!(matches!(t.unwrap().tree(), Some(TreeKind::Chain(_))));
    }
    let one_each = |n: usize, m| {
        let t = Algorithm::Auto.resolve_for(n, m, None, Medium::Hosts { hosts: n });
        t.unwrap().tree().unwrap()
    };
    assert_eq!(one_each(FLAT_HOSTS, 1), TreeKind::Chain(Shape::Flat));
    assert_eq!(
        one_each(FLAT_HOSTS + 1, 1),
        TreeKind::Chain(Shape::KBinomial {
            k: optimal_k(FLAT_HOSTS + 1, 1)
        })
    );
    assert_eq!(
        one_each(3, 2),
        TreeKind::Chain(Shape::KBinomial { k: optimal_k(3, 2) })
    );
    let many = Algorithm::Auto.resolve_for(40, 1, None, Medium::Hosts { hosts: 20 });
    assert_eq!(
        many.unwrap().tree().unwrap(),
        TreeKind::Hosts {
            k: optimal_k(20, 1)
        }
    );
    let table = [0, 0, 1, 1, 2, 2];
    // Who waits for whom: 3 hosts of 2, root 0, k = 0 (0 → 2, 0 → 4).
    let t = Resolved::Tree(TreeKind::Hosts { k: 0 });
    let parents: Vec<Option<usize>> = (0..6)
        .map(|me| t.bcast_parent_on(0, me, 6, None, Some(&table)))
        .collect();
    assert_eq!(parents, [None, Some(0), Some(0), Some(2), Some(0), Some(4)]);
    // k = 1 (0 → 2 → 4).
    let t = Resolved::Tree(TreeKind::Hosts { k: 1 });
    let parents: Vec<Option<usize>> = (0..6)
        .map(|me| t.bcast_parent_on(0, me, 6, None, Some(&table)))
        .collect();
    assert_eq!(parents, [None, Some(0), Some(0), Some(2), Some(2), Some(4)]);
    assert_eq!(t.bcast_parent(0, 3, 6, None), None); // no host table
}

#[test]
fn depths() {
    let table = [0, 0, 1, 1, 2, 2];
    let depth =
        |t: TreeKind, root: usize| Resolved::Tree(t).bcast_depth_on(root, 6, None, Some(&table));
    // 3 hosts of 2: the root to every leader, each leader to its host-mate.
    assert_eq!(depth(TreeKind::Hosts { k: 0 }, 0), Some(2));
    // A chain among the leaders, 0 → 2 → 4 → 5.
    assert_eq!(depth(TreeKind::Hosts { k: 1 }, 0), Some(3));
    // From a rank that leads no host: 3 → 2 (its host's leader first) → ...
    assert_eq!(depth(TreeKind::Hosts { k: 1 }, 3), Some(3));
    // No host table, no host-aware tree.
    let hosts = Resolved::Tree(TreeKind::Hosts { k: 0 });
    assert_eq!(hosts.bcast_depth_on(0, 6, None, None), None);
    // Chain shapes: the formula agrees with walking every rank's parents.
    for n in 1..40 {
        for shape in [
            Shape::Flat,
            Shape::KBinomial { k: 1 },
            Shape::KBinomial { k: 2 },
            Shape::KBinomial { k: 3 },
            Shape::KBinomial { k: 6 },
        ] {
            let t = Resolved::Tree(TreeKind::Chain(shape));
            let walked = (1..n)
                .map(|me| {
                    let (mut at, mut hops) = (me, 0);
                    while at != 0 {
                        at = t.bcast_parent(0, at, n, None).unwrap();
                        hops += 1;
                    }
                    hops
                })
                .max()
                .unwrap_or(0);
            assert_eq!(
                t.bcast_depth_on(0, n, None, None),
                Some(walked),
                "{shape:?} n={n}"
            );
        }
    }
    // A root outside the set, a worm scheme: none.
    let chain = Resolved::Tree(TreeKind::Chain(Shape::Flat));
    assert_eq!(chain.bcast_depth_on(6, 6, None, None), None);
    let worm: Algorithm = "tree-worm".parse().unwrap();
    let worm = worm.resolve_for(6, 1, None, Medium::Network).unwrap();
    assert!(matches!(worm, Resolved::Worm(_)));
    assert_eq!(worm.bcast_depth_on(0, 6, None, None), None);
}
