//! The worked examples of [Robinson 1994, §5.2, Fig 5.4, Eq 5.2; §5.3.1, Fig 5.6; §5.1, §5.4, Figs 5.1, 5.7; ch. 6, Fig 5.1, derived] and [Robinson 1994, §5.4, Fig 5.7, derived]
//! [Oral 2003, §3, Fig 1, derived] for the path-based (UTPR) module.

use mcast_algorithms::path::{
    plan, plan_with, Cdg, PathAlgorithm, PathError, PathPlan, PathWorm, Utpr, VcSets,
};
use mcast_algorithms::topo::{Channel, Dir, Links, Topology, Vc};

fn torus(r: &[usize]) -> Topology {
    Topology::torus(r, Links::Unidirectional).unwrap()
}

fn n2(t: &Topology, a: usize, b: usize) -> usize {
    t.node(&[a, b]).unwrap()
}

fn coords(t: &Topology, v: &[usize]) -> Vec<(usize, usize)> {
    v.iter()
        .map(|&x| {
            let c = t.coords(x).unwrap();
            (c[0], c[1])
        })
        .collect()
}

/// [Robinson 1994, §5.2, Fig 5.4, Eq 5.2]: the 6×6 labels, their inverse, and the boundaries.
#[test]
fn labels_and_boundaries_6x6() {
    let t = torus(&[6, 6]);
    let u = Utpr::new(&t).unwrap();
    let rows = [
        [0, 1, 2, 3, 4, 5],
        [7, 8, 9, 10, 11, 6],
        [14, 15, 16, 17, 12, 13],
        [21, 22, 23, 18, 19, 20],
        [28, 29, 24, 25, 26, 27],
        [35, 30, 31, 32, 33, 34],
    ];
    for (s1, row) in rows.iter().enumerate() {
        for (s0, &l) in row.iter().enumerate() {
            let v = n2(&t, s1, s0);
            assert_eq!(u.h_label(v).unwrap(), l);
            assert_eq!(u.h_label(v).unwrap(), t.h_label(v).unwrap());
            assert_eq!(u.node_at(l).unwrap(), v);
        }
    }
    // H order starts (0,0), (0,1), ..., (0,5), (1,5), (1,0), (1,1).
    let start: Vec<usize> = (0..9).map(|l| u.node_at(l).unwrap()).collect();
    assert_eq!(
        coords(&t, &start),
        vec![
            (0, 0),
            (0, 1),
            (0, 2),
            (0, 3),
            (0, 4),
            (0, 5),
            (1, 5),
            (1, 0),
            (1, 1)
        ]
    );
    let mut dim0 = Vec::new();
    let mut dim1 = Vec::new();
    for v in 0..t.nodes() {
        if u.is_boundary(v, 0).unwrap() {
            dim0.push(v);
        }
        if u.is_boundary(v, 1).unwrap() {
            dim1.push(v);
        }
    }
    assert_eq!(
        coords(&t, &dim0),
        vec![(0, 5), (1, 4), (2, 3), (3, 2), (4, 1), (5, 0)]
    );
    assert_eq!(dim1, (30..36).collect::<Vec<_>>());
    assert!(matches!(u.is_boundary(36, 0), Err(PathError::Topo(_))));
    assert!(matches!(
        u.is_boundary(0, 2),
        Err(PathError::BadDimension { dim: 2, dims: 2 })
    ));
}

/// Lemma 5.7 equals Definition 5.1; H is a Hamiltonian circuit (successive
/// labels are neighbours, the last wraps to the first).
#[test]
fn lemma_5_7_and_h_is_a_circuit() {
    for r in [
        vec![7],
        vec![2, 2],
        vec![4, 4],
        vec![5, 5],
        vec![6, 6],
        vec![3, 3, 3],
        vec![4, 4, 4],
        vec![3, 3, 3, 3],
    ] {
        let t = torus(&r);
        let u = Utpr::new(&t).unwrap();
        for v in 0..t.nodes() {
            for d in 0..t.dims() {
                assert_eq!(
                    u.is_boundary(v, d).unwrap(),
                    u.is_boundary_by_labels(v, d).unwrap(),
                    "{r:?} node {v} dim {d}"
                );
            }
        }
        for l in 0..t.nodes() {
            let a = u.node_at(l).unwrap();
            let b = u.node_at((l + 1) % t.nodes()).unwrap();
            assert_eq!(u.distance(a, b).unwrap(), 1, "{r:?} label {l}");
        }
    }
}

/// [Robinson 1994, §5.2, Fig 5.4, Eq 5.2]: plane 3 of the 4×4×4 labels (Fig 5.5).
#[test]
fn labels_4x4x4() {
    let t = torus(&[4, 4, 4]);
    let u = Utpr::new(&t).unwrap();
    let planes = [
        [[0, 1, 2, 3], [5, 6, 7, 4], [10, 11, 8, 9], [15, 12, 13, 14]],
        [
            [21, 22, 23, 20],
            [26, 27, 24, 25],
            [31, 28, 29, 30],
            [16, 17, 18, 19],
        ],
        [
            [42, 43, 40, 41],
            [47, 44, 45, 46],
            [32, 33, 34, 35],
            [37, 38, 39, 36],
        ],
        [
            [63, 60, 61, 62],
            [48, 49, 50, 51],
            [53, 54, 55, 52],
            [58, 59, 56, 57],
        ],
    ];
    for (s2, plane) in planes.iter().enumerate() {
        for (s1, row) in plane.iter().enumerate() {
            for (s0, &l) in row.iter().enumerate() {
                assert_eq!(u.h_label(t.node(&[s2, s1, s0]).unwrap()).unwrap(), l);
            }
        }
    }
    // Every channel from plane 3 to plane 0 is a boundary.
    for v in 48..64 {
        assert!(u.is_boundary(v, 2).unwrap());
    }
}

/// UTPR needs a regular unidirectional torus.
#[test]
fn utpr_fabric_errors() {
    for t in [
        Topology::torus(&[4, 4], Links::Bidirectional).unwrap(),
        Topology::torus(&[4, 6], Links::Unidirectional).unwrap(),
        Topology::mesh(&[4, 4]).unwrap(),
    ] {
        assert!(matches!(
            Utpr::new(&t),
            Err(PathError::NotUnidirectionalTorus(_))
        ));
        assert!(matches!(
            plan(&t, PathAlgorithm::STorus, 0, &[1]),
            Err(PathError::NotUnidirectionalTorus(_))
        ));
    }
}

fn hop_dims_and_vcs(r: &mcast_algorithms::path::WormRoute) -> (Vec<usize>, String) {
    (
        r.hops.iter().map(|c| c.dim).collect(),
        r.hops
            .iter()
            .map(|c| if c.vc == Vc::P { 'p' } else { 'h' })
            .collect(),
    )
}

/// [Robinson 1994, §5.3.1, Fig 5.6]: the restrictive worm, 10 hops on p-channels, labels 23..33 in order.
#[test]
fn restrictive_worm_6x6() {
    let t = torus(&[6, 6]);
    let u = Utpr::new(&t).unwrap();
    let dests = [n2(&t, 4, 3), n2(&t, 4, 5), n2(&t, 5, 1), n2(&t, 5, 4)];
    let w = PathWorm::restrictive(&u, n2(&t, 3, 2), &dests).unwrap();
    let r = w.route(&u).unwrap();
    assert_eq!(r.len(), 10);
    assert_eq!(r.boundaries, 0);
    assert_eq!(
        coords(&t, &r.nodes(&u)),
        vec![
            (3, 2),
            (4, 2),
            (4, 3),
            (4, 4),
            (4, 5),
            (4, 0),
            (4, 1),
            (5, 1),
            (5, 2),
            (5, 3),
            (5, 4)
        ]
    );
    let labels: Vec<usize> = r.nodes(&u).iter().map(|&v| u.h_label(v).unwrap()).collect();
    assert_eq!(labels, (23..=33).collect::<Vec<_>>());
    let (dims, vcs) = hop_dims_and_vcs(&r);
    assert_eq!(dims, vec![1, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(vcs, "pppppppppp");
    assert_eq!(r.delivers, dests.to_vec());
    assert_eq!(r.reached_at, vec![2, 4, 7, 10]);
    // Not an H-chain: (0,5) has label 5 < 23.
    assert_eq!(
        PathWorm::restrictive(&u, n2(&t, 3, 2), &[n2(&t, 0, 5)]),
        Err(PathError::NotHChain(n2(&t, 0, 5)))
    );
}

fn fig_5_1(t: &Topology) -> (usize, Vec<usize>) {
    let d = [
        (0, 5),
        (4, 5),
        (3, 4),
        (5, 4),
        (4, 3),
        (1, 2),
        (2, 1),
        (5, 1),
        (1, 0),
    ];
    (n2(t, 3, 2), d.iter().map(|&(a, b)| n2(t, a, b)).collect())
}

/// [Robinson 1994, §5.1, §5.4, Figs 5.1, 5.7]: the general worm, 26 hops, one boundary.
#[test]
fn general_worm_6x6() {
    let t = torus(&[6, 6]);
    let u = Utpr::new(&t).unwrap();
    let (src, dests) = fig_5_1(&t);
    let w = PathWorm::prepare(&u, src, &dests).unwrap();
    assert_eq!(
        coords(&t, &w.dests),
        vec![
            (4, 3),
            (4, 5),
            (5, 1),
            (5, 4),
            (0, 5),
            (1, 0),
            (1, 2),
            (2, 1),
            (3, 4)
        ]
    );
    let r = w.route(&u).unwrap();
    assert_eq!(r.len(), 26);
    assert_eq!(r.boundaries, 1);
    let nodes = r.nodes(&u);
    assert_eq!(
        coords(&t, &nodes),
        vec![
            (3, 2),
            (4, 2),
            (4, 3),
            (4, 4),
            (4, 5),
            (4, 0),
            (4, 1),
            (5, 1),
            (5, 2),
            (5, 3),
            (5, 4),
            (5, 5),
            (0, 5),
            (1, 5),
            (1, 0),
            (1, 1),
            (1, 2),
            (1, 3),
            (1, 4),
            (2, 4),
            (2, 5),
            (2, 0),
            (2, 1),
            (2, 2),
            (2, 3),
            (3, 3),
            (3, 4)
        ]
    );
    let (_, vcs) = hop_dims_and_vcs(&r);
    assert_eq!(vcs, format!("{}{}", "p".repeat(11), "h".repeat(15)));
    // The boundary is (5,5) -> (0,5) in dimension 1, label 34 -> 5.
    let b = r.hops[11];
    assert_eq!(
        b,
        Channel {
            node: n2(&t, 5, 5),
            dim: 1,
            dir: Dir::Plus,
            vc: Vc::H
        }
    );
    assert!(u.is_boundary(b.node, b.dim).unwrap());
    // 26 distinct physical links, no node revisited.
    let mut links: Vec<(usize, usize)> = r.hops.iter().map(|c| (c.node, c.dim)).collect();
    links.sort_unstable();
    links.dedup();
    assert_eq!(links.len(), 26);
    let mut seen = nodes.clone();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 27);
    // Segment lengths [Robinson 1994, §5.4, Fig 5.7, derived]: 2,2,3,3,2,2,2,6,4.
    let mut prev = 0;
    let seg: Vec<usize> = r
        .reached_at
        .iter()
        .map(|&h| {
            let s = h - prev;
            prev = h;
            s
        })
        .collect();
    assert_eq!(seg, vec![2, 2, 3, 3, 2, 2, 2, 6, 4]);
    // Fig 5.1's XY example: the unicast route (3,2) -> (4,3).
    let xy = t.route(src, n2(&t, 4, 3)).unwrap();
    assert_eq!(xy.len(), 2);
    assert_eq!(xy[0].dim, 1);
}

type Phase = Vec<((usize, usize), Vec<(usize, usize)>, usize)>;
/// (sender, first receiver).
type Hop = ((usize, usize), (usize, usize));

fn phases(t: &Topology, p: &PathPlan) -> Vec<Phase> {
    (1..=p.phases)
        .map(|ph| {
            p.sends
                .iter()
                .filter(|s| s.phase == ph)
                .map(|s| {
                    (
                        coords(t, &[s.sender])[0],
                        coords(t, s.delivers()),
                        s.route.len(),
                    )
                })
                .collect()
        })
        .collect()
}

/// [Robinson 1994, ch. 6, Fig 5.1, derived]: the M-torus family on the Fig 5.1 problem.
#[test]
fn m_torus_family_fig_5_1() {
    let t = torus(&[6, 6]);
    let (src, dests) = fig_5_1(&t);
    let s = plan(&t, PathAlgorithm::STorus, src, &dests).unwrap();
    assert_eq!(s.phases, 1);
    assert_eq!(s.worm_count(), 1);
    assert_eq!(s.sends[0].delivers().len(), 9);
    assert_eq!(s.link_visits(), 26);

    let md = plan(&t, PathAlgorithm::MdTorus, src, &dests).unwrap();
    assert_eq!(md.phases, 2);
    assert_eq!(
        phases(&t, &md),
        vec![
            vec![(
                (3, 2),
                vec![(4, 3), (5, 1), (0, 5), (1, 0), (2, 1), (3, 4)],
                20
            )],
            vec![
                ((4, 3), vec![(4, 5)], 2),
                ((5, 1), vec![(5, 4)], 3),
                ((1, 0), vec![(1, 2)], 2),
            ],
        ]
    );

    let mu4 = plan(&t, PathAlgorithm::MuTorus { r: 4 }, src, &dests).unwrap();
    assert_eq!(mu4.phases, 2);
    let ph = phases(&t, &mu4);
    assert_eq!(ph[0], vec![((3, 2), vec![(5, 1), (1, 0), (2, 1)], 16)]);
    let phase2: Vec<_> = ph[1].iter().map(|(a, b, _)| (*a, b.clone())).collect();
    assert_eq!(
        phase2,
        vec![
            ((3, 2), vec![(4, 3), (4, 5)]),
            ((5, 1), vec![(5, 4), (0, 5)]),
            ((1, 0), vec![(1, 2)]),
            ((2, 1), vec![(3, 4)]),
        ]
    );
    // The parts (compound header contents) of phase 1: sizes 3, 3, 2, 2.
    let parts: Vec<Vec<(usize, usize)>> =
        mu4.sends[0].parts.iter().map(|p| coords(&t, p)).collect();
    assert_eq!(
        parts,
        vec![
            vec![(5, 1), (5, 4), (0, 5)],
            vec![(1, 0), (1, 2)],
            vec![(2, 1), (3, 4)]
        ]
    );

    let mu2 = plan(&t, PathAlgorithm::MuTorus { r: 2 }, src, &dests).unwrap();
    assert_eq!(mu2.phases, 4);
    assert_eq!(mu2.worm_count(), 9);
    let ph: Vec<Vec<Hop>> = phases(&t, &mu2)
        .into_iter()
        .map(|p| p.into_iter().map(|(a, b, _)| (a, b[0])).collect())
        .collect();
    assert_eq!(
        ph,
        vec![
            vec![((3, 2), (0, 5))],
            vec![((3, 2), (5, 1)), ((0, 5), (2, 1))],
            vec![
                ((3, 2), (4, 5)),
                ((5, 1), (5, 4)),
                ((0, 5), (1, 2)),
                ((2, 1), (3, 4))
            ],
            vec![((3, 2), (4, 3)), ((0, 5), (1, 0))],
        ]
    );
    for p in [&s, &md, &mu4, &mu2] {
        let oracle_plan = p.to_plan().unwrap();
        mcast_algorithms::oracle::check_responsibility(&oracle_plan, src, &dests).unwrap();
    }
}

/// [Oral 2003, §3, Fig 1, derived] worm vectors on 4×4 (S-torus and Mu-torus(R)).
#[test]
fn sci_4x4_worm_vectors() {
    let t = torus(&[4, 4]);
    let u = Utpr::new(&t).unwrap();
    let d = [
        (0, 1),
        (0, 3),
        (1, 0),
        (1, 3),
        (2, 0),
        (2, 2),
        (3, 1),
        (3, 2),
        (3, 3),
    ];
    let dests: Vec<usize> = d.iter().map(|&(a, b)| n2(&t, a, b)).collect();
    let src = n2(&t, 1, 2);
    let s = plan(&t, PathAlgorithm::STorus, src, &dests).unwrap();
    let r = &s.sends[0].route;
    assert_eq!(
        coords(&t, &r.nodes(&u)),
        vec![
            (1, 2),
            (2, 2),
            (2, 3),
            (2, 0),
            (2, 1),
            (3, 1),
            (3, 2),
            (3, 3),
            (3, 0),
            (0, 0),
            (0, 1),
            (0, 2),
            (0, 3),
            (1, 3),
            (1, 0)
        ]
    );
    let (_, vcs) = hop_dims_and_vcs(r);
    assert_eq!(vcs, "pppppppphhhhhh");
    assert_eq!(r.boundaries, 1);
    let mu = plan(&t, PathAlgorithm::MuTorus { r: 4 }, src, &dests).unwrap();
    assert_eq!(mu.phases, 2);
    assert_eq!(mu.sends[0].route.len(), 9);
    assert_eq!(
        coords(&t, mu.sends[0].delivers()),
        vec![(3, 1), (0, 1), (1, 3)]
    );
    assert_eq!(mu.link_visits(), 17);
    // Md-torus: the SCI-torus planner merges the source's split ring ((1,2) serves
    // (1,3), (1,0) in phase 2: 14 link visits); we follow the maximal-runs fix of
    // split, so (1,3) is the head of its own run, reached by the phase-1
    // worm (6 + 3 hops), then (1,3) -> (1,0): 16 link visits.
    let md = plan(&t, PathAlgorithm::MdTorus, src, &dests).unwrap();
    assert_eq!(md.phases, 2);
    assert_eq!(
        coords(&t, md.sends[0].delivers()),
        vec![(2, 2), (3, 1), (0, 1), (1, 3)]
    );
    assert_eq!(md.sends[0].route.len(), 9);
    assert_eq!(md.link_visits(), 16);
    // [Oral 2003, §3, Fig 1, derived]: the 4×4 broadcast from (0,0) is a 15-hop worm with no boundary.
    let all: Vec<usize> = (1..16).collect();
    let b = plan(&t, PathAlgorithm::STorus, 0, &all).unwrap();
    assert_eq!(b.link_visits(), 15);
    assert_eq!(b.sends[0].route.boundaries, 0);
}

/// The generic M-torus rejects a partitioner that does not partition.
#[test]
fn generic_m_torus_checks_partitions() {
    let t = torus(&[4, 4]);
    let bad = [vec![1], vec![0, 3], vec![1, 1]];
    for sizes in bad {
        let s = sizes.clone();
        let e = plan_with(&t, 0, &[1, 2], move |_, _| s.clone()).unwrap_err();
        assert!(
            matches!(e, PathError::BadPartition { len: 3, .. }),
            "{sizes:?}: {e:?}"
        );
    }
    assert_eq!(
        plan(&t, PathAlgorithm::MuTorus { r: 1 }, 0, &[1]),
        Err(PathError::BadParameter("M_u-torus needs r >= 2"))
    );
    assert_eq!(
        plan(&t, PathAlgorithm::STorus, 0, &[0]),
        Err(PathError::SourceIsDestination(0))
    );
    assert_eq!(
        plan(&t, PathAlgorithm::STorus, 0, &[1, 1]),
        Err(PathError::DuplicateDestination(1))
    );
    assert!(matches!(
        plan(&t, PathAlgorithm::STorus, 0, &[16]),
        Err(PathError::Topo(_))
    ));
    // No destinations: an empty plan.
    let e = plan(&t, PathAlgorithm::STorus, 0, &[]).unwrap();
    assert_eq!((e.phases, e.worm_count()), (0, 0));
    assert_eq!("mtorus-u:8".parse(), Ok(PathAlgorithm::MuTorus { r: 8 }));
    assert_eq!("storus".parse(), Ok(PathAlgorithm::STorus));
    assert_eq!("M-Torus-D".parse(), Ok(PathAlgorithm::MdTorus));
    for bad in [
        "mdtorus",
        "mutorus:4",
        "mtorus-u",
        "mtorus-u:1",
        "mtorus-u:x",
        "storus:3",
        "utorus",
        "mtorus-u:+3",
    ] {
        assert!(bad.parse::<PathAlgorithm>().is_err(), "{bad}");
    }
    for a in [
        PathAlgorithm::STorus,
        PathAlgorithm::MdTorus,
        PathAlgorithm::MuTorus { r: 64 },
    ] {
        assert_eq!(a.to_string().parse(), Ok(a));
    }
}

/// The CDG of R_UTPR is acyclic with two VC sets on several tori, and has a
/// cycle with one.
#[test]
fn cdg_two_sets_acyclic_one_set_cyclic() {
    for r in [
        vec![2],
        vec![7],
        vec![2, 2],
        vec![3, 3],
        vec![4, 4],
        vec![5, 5],
        vec![6, 6],
        vec![3, 3, 3],
        vec![4, 4, 4],
        vec![3, 3, 3, 3],
    ] {
        let t = torus(&r);
        let u = Utpr::new(&t).unwrap();
        let two = Cdg::build(&u, VcSets::Two);
        assert!(two.arc_count() > 0);
        assert_eq!(two.find_cycle(), None, "{r:?}");
        let one = Cdg::build(&u, VcSets::One);
        let cycle = one
            .find_cycle()
            .unwrap_or_else(|| panic!("{r:?}: no cycle"));
        // A genuine cycle: consecutive channels are arcs, and it closes.
        for w in cycle.windows(2) {
            assert!(one.has_arc(&w[0], &w[1]));
        }
        assert!(one.has_arc(cycle.last().unwrap(), &cycle[0]));
    }
}
