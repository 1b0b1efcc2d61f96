//! Property tests of the topology planners ([Robinson 1994, §3.3, §4.4, §6.2]:
//! Theorems 3.5, 4.4): random sources and destination sets on random tori
//! (up to 16×16 and 8×8×8, UTR and BTR), meshes and hypercubes (up to n = 10).

use mcast_algorithms::contention::{
    check_delivery, check_steps, depth_conflicts, stepwise_conflicts,
};
use mcast_algorithms::topo::{Links, Resolution};
use mcast_algorithms::trees::{
    plan, weighted_sort, MuPartition, Options, PortModel, TreeAlgorithm,
};
use mcast_algorithms::{ceil_log2, Topology};
use proptest::prelude::*;

/// A random source and destination set (source excluded) of a topology.
fn members(nodes: usize) -> impl Strategy<Value = (usize, Vec<usize>)> {
    (
        0..nodes,
        prop::sample::subsequence((0..nodes).collect::<Vec<_>>(), 0..=nodes).prop_shuffle(),
    )
        .prop_map(|(s, mut d)| {
            d.retain(|&v| v != s);
            (s, d)
        })
}

fn torus() -> impl Strategy<Value = Topology> {
    let links = prop_oneof![Just(Links::Unidirectional), Just(Links::Bidirectional)];
    prop_oneof![
        (2usize..=16, 2usize..=16, links.clone())
            .prop_map(|(a, b, l)| Topology::torus(&[a, b], l).unwrap()),
        (2usize..=8, 2usize..=8, 2usize..=8, links).prop_map(|(a, b, c, l)| Topology::torus(
            &[a, b, c],
            l
        )
        .unwrap()),
    ]
}

fn torus_case() -> impl Strategy<Value = (Topology, usize, Vec<usize>)> {
    torus().prop_flat_map(|t| {
        let n = t.nodes();
        (Just(t), members(n)).prop_map(|(t, (s, d))| (t, s, d))
    })
}

fn cube_case(max_n: usize) -> impl Strategy<Value = (Topology, usize, Vec<usize>)> {
    (1..=max_n, any::<bool>())
        .prop_map(|(n, low)| {
            let r = if low {
                Resolution::LowToHigh
            } else {
                Resolution::HighToLow
            };
            Topology::hypercube(n, r).unwrap()
        })
        .prop_flat_map(|t| {
            let n = t.nodes();
            (Just(t), members(n)).prop_map(|(t, (s, d))| (t, s, d))
        })
}

fn any_case() -> impl Strategy<Value = (Topology, usize, Vec<usize>)> {
    let topo = prop_oneof![
        torus(),
        (2usize..=9, 2usize..=9).prop_map(|(a, b)| Topology::mesh(&[a, b]).unwrap()),
        (2usize..=6, 2usize..=6).prop_map(|(a, b)| Topology::torus(
            &[a, a, b.min(a)],
            Links::Bidirectional
        )
        .unwrap()),
        (1usize..=8).prop_map(|n| Topology::hypercube(n, Resolution::HighToLow).unwrap()),
        (1usize..=6).prop_map(|n| Topology::hypercube(n, Resolution::LowToHigh).unwrap()),
    ];
    topo.prop_flat_map(|t| {
        let n = t.nodes();
        (Just(t), members(n)).prop_map(|(t, (s, d))| (t, s, d))
    })
}

const ALL: [TreeAlgorithm; 14] = [
    TreeAlgorithm::SeparateAddressing,
    TreeAlgorithm::DimensionOrderedChain,
    TreeAlgorithm::UTorus,
    TreeAlgorithm::UCube,
    TreeAlgorithm::Maxport,
    TreeAlgorithm::Combine,
    TreeAlgorithm::WSort,
    TreeAlgorithm::KBinomial { k: None },
    TreeAlgorithm::KBinomial { k: Some(1) },
    TreeAlgorithm::KBinomial { k: Some(3) },
    TreeAlgorithm::MdTorus,
    TreeAlgorithm::MuTorus {
        r: 2,
        partition: MuPartition::Count,
    },
    TreeAlgorithm::MuTorus {
        r: 5,
        partition: MuPartition::Count,
    },
    TreeAlgorithm::MuTorus {
        r: 4,
        partition: MuPartition::Length,
    },
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Theorem 4.4: U-torus on an R-chain takes ceil(log2 m) steps (m with
    /// the source), with no stepwise and no depth contention, UTR and BTR.
    #[test]
    fn utorus_minimum_time_and_contention_free((t, s, d) in torus_case()) {
        let m = plan(&t, TreeAlgorithm::UTorus, s, &d, Options::default()).unwrap();
        check_delivery(&m).unwrap();
        prop_assert_eq!(check_steps(&t, &m).unwrap(), ceil_log2(d.len() + 1));
        prop_assert_eq!(m.steps(), ceil_log2(d.len() + 1));
        prop_assert!(stepwise_conflicts(&t, &m).unwrap().is_empty());
        prop_assert!(depth_conflicts(&t, &m).unwrap().is_empty());
    }

    /// U-cube, one-port: ceil(log2(m+1)) steps for m destinations, and
    /// contention-free regardless of startup latency (claim 1).
    #[test]
    fn ucube_one_port((t, s, d) in cube_case(10)) {
        let m = plan(&t, TreeAlgorithm::UCube, s, &d, Options::default()).unwrap();
        check_delivery(&m).unwrap();
        prop_assert_eq!(m.steps(), ceil_log2(d.len() + 1));
        prop_assert_eq!(check_steps(&t, &m).unwrap(), m.steps());
        prop_assert!(stepwise_conflicts(&t, &m).unwrap().is_empty());
        prop_assert!(depth_conflicts(&t, &m).unwrap().is_empty());
    }

    /// Maxport, Combine and W-sort are depth contention-free under both
    /// all-port models ([Robinson 1994, §3.4, Fig 3.9, derived], Theorem 3.6); U-cube has no
    /// stepwise contention under Model B.
    #[test]
    fn all_port_cube_algorithms((t, s, d) in cube_case(8)) {
        for model in [PortModel::AllPortA, PortModel::AllPortB] {
            for algo in [TreeAlgorithm::Maxport, TreeAlgorithm::Combine, TreeAlgorithm::WSort] {
                let m = plan(&t, algo, s, &d, Options::with_port_model(model)).unwrap();
                check_delivery(&m).unwrap();
                prop_assert_eq!(check_steps(&t, &m).unwrap(), m.steps());
                prop_assert!(depth_conflicts(&t, &m).unwrap().is_empty(), "{:?} {:?}", algo, model);
            }
        }
        let m = plan(&t, TreeAlgorithm::UCube, s, &d, Options::with_port_model(PortModel::AllPortB)).unwrap();
        prop_assert!(stepwise_conflicts(&t, &m).unwrap().is_empty());
        // All-port never needs more steps than one-port U-cube.
        prop_assert!(m.steps() <= ceil_log2(d.len() + 1));
    }

    /// Every planner passes the delivery and responsibility oracles, and its
    /// steps are those of its port model.
    #[test]
    fn every_planner_delivers((t, s, d) in any_case()) {
        for algo in ALL {
            for model in [PortModel::OnePort, PortModel::AllPortA, PortModel::AllPortB] {
                let Ok(m) = plan(&t, algo, s, &d, Options { port_model: model, packets: 4 }) else {
                    // Only topology mismatches may be refused.
                    let cube_only = matches!(algo, TreeAlgorithm::UCube | TreeAlgorithm::Maxport | TreeAlgorithm::Combine | TreeAlgorithm::WSort);
                    let torus_only = matches!(algo, TreeAlgorithm::MdTorus | TreeAlgorithm::MuTorus { .. });
                    prop_assert!(cube_only && !t.is_hypercube() || torus_only && !(t.is_torus() && t.regular_radix().is_some()));
                    continue;
                };
                check_delivery(&m).unwrap();
                prop_assert_eq!(check_steps(&t, &m).unwrap(), m.steps());
                prop_assert_eq!(m.sends().len(), d.len());
            }
        }
    }

    /// The unrotated dimension-ordered chain (U-mesh) is contention-free on
    /// meshes and takes ceil(log2 m) steps.
    #[test]
    fn umesh_on_meshes(a in 2usize..=10, b in 2usize..=10, seed in members(100)) {
        let t = Topology::mesh(&[a, b]).unwrap();
        let n = t.nodes();
        let s = seed.0 % n;
        let mut d: Vec<usize> = seed.1.into_iter().filter(|&v| v < n && v != s).collect();
        d.dedup();
        let m = plan(&t, TreeAlgorithm::DimensionOrderedChain, s, &d, Options::default()).unwrap();
        prop_assert_eq!(m.steps(), ceil_log2(d.len() + 1));
        prop_assert!(stepwise_conflicts(&t, &m).unwrap().is_empty());
        prop_assert!(depth_conflicts(&t, &m).unwrap().is_empty());
    }

    /// Theorem 3.5: WeightedSort's output is a cube-ordered permutation of its
    /// input that keeps the first element.
    #[test]
    fn weighted_sort_is_cube_ordered(n in 1usize..=10, pick in prop::collection::btree_set(1usize..1024, 0..200)) {
        let mut d: Vec<usize> = std::iter::once(0).chain(pick.into_iter().filter(|&v| v < 1 << n)).collect();
        let before = d.clone();
        weighted_sort(&mut d, n);
        prop_assert_eq!(d[0], 0);
        let mut a = d.clone();
        a.sort_unstable();
        prop_assert_eq!(a, before);
        // Every S-cube's members are contiguous.
        for ns in 1..=n {
            let mut seen = std::collections::HashSet::new();
            let mut prev = None;
            for &v in &d {
                let cube = v >> ns;
                if prev != Some(cube) {
                    prop_assert!(seen.insert(cube), "S-cube {} of dimension {} split", cube, ns);
                    prev = Some(cube);
                }
            }
        }
    }
}
