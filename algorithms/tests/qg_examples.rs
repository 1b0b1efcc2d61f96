//! The worked examples of [Al-Dubai 2009] (Qualified Groups) and our synthetic
//! Examples A-D as tests. Points are written (x, y); x is dimension 0.

use mcast_algorithms::mesh::{
    check_groups, check_plan, evaluate, grouping, plan, Mesh, MeshAlgorithm, MeshCost, MeshError,
    MeshPlan,
};

/// (sender as 10x + y, hops, destinations in delivery order).
type WormRow = (usize, usize, Vec<(usize, usize)>);
/// (members, weight, qualified).
type GroupRow = (Vec<(usize, usize)>, usize, bool);

fn pts(mesh: &Mesh, v: &[(usize, usize)]) -> Vec<usize> {
    v.iter()
        .map(|&(x, y)| mesh.node(&[x, y]).unwrap())
        .collect()
}

fn xy(mesh: &Mesh, n: usize) -> (usize, usize) {
    (mesh.coord(n, 0), mesh.coord(n, 1))
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

const EXAMPLE_A: [(usize, usize); 29] = [
    (0, 2),
    (0, 3),
    (0, 5),
    (0, 6),
    (0, 7),
    (0, 9),
    (1, 2),
    (1, 7),
    (1, 8),
    (2, 6),
    (2, 9),
    (3, 1),
    (3, 2),
    (3, 5),
    (3, 6),
    (3, 7),
    (3, 8),
    (4, 2),
    (4, 4),
    (4, 7),
    (5, 4),
    (5, 5),
    (5, 6),
    (6, 6),
    (7, 0),
    (7, 3),
    (7, 5),
    (7, 7),
    (8, 5),
];

fn all_checked(mesh: &Mesh, algo: MeshAlgorithm, p: usize, d: &[usize]) -> MeshPlan {
    let pl = plan(mesh, algo, p, d).unwrap();
    check_plan(mesh, &pl).unwrap();
    pl
}

/// The paper's Figs 6–7 numbers (N_y = 9 < N_x = 11; W = 13, 11, 25, 13;
/// W_av = 15.5; QP(G3) = 0.6 > TD = 0.5, split along X; 5 groups), on the
/// our Example A, whose coordinates reproduce them (the paper's own
/// coordinates are lost with its figures).
#[test]
fn paper_figs_6_7_via_example_a() {
    let mesh = Mesh::new(&[10, 10]).unwrap();
    let p = mesh.node(&[5, 2]).unwrap();
    let d = pts(&mesh, &EXAMPLE_A);
    let g = grouping(&mesh, p, &d, 0.5);
    assert_eq!(
        (g.lower.clone(), g.upper.clone(), g.mid.clone()),
        (vec![0, 0], vec![8, 9], vec![4, 4])
    );
    assert_eq!(g.imbalance, [11, 9]);
    assert_eq!(g.divisor, 1, "Div = Y");
    let w: Vec<usize> = g.primary.iter().map(|x| x.weight).collect();
    assert_eq!(w, [13, 11, 25, 13]);
    assert_eq!(g.primary[0].int, 5 + 7);
    assert_eq!(g.primary[0].ext, 1);
    assert!(close(g.w_av, 15.5, 1e-12));
    assert!(close(g.primary[2].qp, 0.6129, 5e-5));
    assert!(!g.primary[2].qualified);
    assert!(g
        .primary
        .iter()
        .enumerate()
        .all(|(i, x)| x.qualified == (i != 2)));
    // G3 is split along X at x <= 2.
    assert_eq!(g.groups.len(), 5);
    let g3a = &g.groups[2];
    let g3b = &g.groups[3];
    assert_eq!(g3a.members.len(), 8);
    assert_eq!(
        (g3a.weight, xy(&mesh, g3a.nearest), xy(&mesh, g3a.farthest)),
        (20, (2, 6), (0, 9))
    );
    assert!(close(g3a.qp, 0.2903, 5e-5));
    assert_eq!(
        (g3b.weight, xy(&mesh, g3b.nearest), xy(&mesh, g3b.farthest)),
        (13, (3, 5), (3, 8))
    );
    assert!(g.groups.iter().all(|x| x.qualified));
    assert!(g3a.members.iter().all(|&m| mesh.coord(m, 0) <= 2));
    let reps: Vec<(usize, usize)> = g.representatives().iter().map(|&r| xy(&mesh, r)).collect();
    assert_eq!(reps, [(4, 2), (5, 4), (2, 6), (3, 5), (5, 5)]);
    check_groups(&g, &d).unwrap();
    // Labels of the representatives and the source.
    let labels: Vec<usize> = g.representatives().iter().map(|&r| mesh.label(r)).collect();
    assert_eq!(labels, [24, 45, 62, 56, 54]);
    assert_eq!(mesh.label(p), 25);
}

/// Example A's worms: step 1 = two disjoint worms, step 2 per group; 56
/// channels (AT 27); DP 66, MP 62, CP 75 channels on the same set.
#[test]
fn example_a_worms_and_traffic() {
    let mesh = Mesh::new(&[10, 10]).unwrap();
    let p = mesh.node(&[5, 2]).unwrap();
    let d = pts(&mesh, &EXAMPLE_A);
    let qg = all_checked(&mesh, MeshAlgorithm::QG, p, &d);
    assert_eq!(qg.phases(), 2);
    let step1: Vec<Vec<(usize, usize)>> = qg
        .sends
        .iter()
        .filter(|s| s.phase == 1)
        .map(|s| s.delivers.iter().map(|&n| xy(&mesh, n)).collect())
        .collect();
    assert_eq!(step1, [vec![(5, 4), (5, 5), (3, 5), (2, 6)], vec![(4, 2)]]);
    let hops1: Vec<usize> = qg
        .sends
        .iter()
        .filter(|s| s.phase == 1)
        .map(|s| s.hops())
        .collect();
    assert_eq!(hops1, [7, 1]);
    // The two step-1 worms are channel-disjoint.
    let chans = |i: usize| -> Vec<(usize, usize)> {
        qg.sends[i].route.windows(2).map(|w| (w[0], w[1])).collect()
    };
    assert!(chans(0).iter().all(|c| !chans(1).contains(c)));
    let step2: Vec<WormRow> = qg
        .sends
        .iter()
        .filter(|s| s.phase == 2)
        .map(|s| {
            (
                xy(&mesh, s.from).0 * 10 + xy(&mesh, s.from).1,
                s.hops(),
                s.delivers.iter().map(|&n| xy(&mesh, n)).collect(),
            )
        })
        .collect();
    let want: Vec<WormRow> = vec![
        (42, 10, vec![(0, 3), (4, 4)]),
        (42, 8, vec![(3, 2), (1, 2), (0, 2), (3, 1)]),
        (54, 6, vec![(7, 3), (7, 0)]),
        (26, 9, vec![(1, 7), (0, 7), (1, 8), (2, 9), (0, 9)]),
        (26, 3, vec![(0, 6), (0, 5)]),
        (35, 5, vec![(3, 6), (4, 7), (3, 7), (3, 8)]),
        (55, 4, vec![(5, 6), (6, 6), (7, 7)]),
        (55, 3, vec![(7, 5), (8, 5)]),
    ];
    assert_eq!(step2, want);
    assert_eq!(qg.link_visits(), 56);
    assert_eq!(qg.additional_traffic(), 27);
    let dp = all_checked(&mesh, MeshAlgorithm::DualPath, p, &d);
    assert_eq!(
        (dp.sends.len(), dp.link_visits(), dp.additional_traffic()),
        (2, 66, 37)
    );
    assert_eq!(dp.sends.iter().map(|s| s.hops()).max(), Some(52));
    let mp = all_checked(&mesh, MeshAlgorithm::MultiPath, p, &d);
    assert_eq!(
        (mp.sends.len(), mp.link_visits(), mp.additional_traffic()),
        (4, 62, 33)
    );
    assert_eq!(mp.sends.iter().map(|s| s.hops()).max(), Some(38));
    let cp = all_checked(&mesh, MeshAlgorithm::ColumnPath, p, &d);
    assert_eq!(
        (cp.sends.len(), cp.link_visits(), cp.additional_traffic()),
        (11, 75, 46)
    );
    assert_eq!(cp.phases(), 3);
    // Contention-free timing with zero preparation ([Al-Dubai 2009, §4.1, Theorem 2], checked by hand).
    let cost = MeshCost {
        prep: Some(0.0),
        ..MeshCost::paper(32.0)
    };
    let nets: Vec<f64> = [&dp, &mp, &cp, &qg]
        .iter()
        .map(|pl| evaluate(pl, &cost).network_latency)
        .collect();
    assert_eq!(nets, [117.0, 103.0, 220.0, 146.0]);
    let cvs: Vec<f64> = [&dp, &mp, &cp, &qg]
        .iter()
        .map(|pl| evaluate(pl, &cost).cv)
        .collect();
    for (g, w) in cvs.iter().zip([0.172, 0.138, 0.472, 0.209]) {
        assert!(close(*g, w, 5e-4), "{cvs:?}");
    }
}

/// Example B (8×8, hand-checkable) [Al-Dubai 2009, §3, §4.1, derived].
#[test]
fn example_b() {
    let mesh = Mesh::new(&[8, 8]).unwrap();
    let p = mesh.node(&[2, 4]).unwrap();
    let d = pts(
        &mesh,
        &[
            (0, 4),
            (1, 2),
            (1, 3),
            (2, 5),
            (4, 4),
            (5, 2),
            (5, 3),
            (6, 1),
            (6, 2),
        ],
    );
    let g = grouping(&mesh, p, &d, 0.5);
    assert_eq!(g.imbalance, [1, 3]);
    assert_eq!(g.divisor, 0, "Div = X");
    assert_eq!(
        g.primary.iter().map(|x| x.weight).collect::<Vec<_>>(),
        [5, 6, 11, 3]
    );
    assert!(close(g.w_av, 6.25, 1e-12));
    assert!(close(g.primary[2].qp, 0.76, 1e-12));
    assert_eq!(
        g.groups.iter().map(|x| x.weight).collect::<Vec<_>>(),
        [5, 6, 7, 9, 3]
    );
    let reps: Vec<(usize, usize)> = g.representatives().iter().map(|&r| xy(&mesh, r)).collect();
    assert_eq!(reps, [(1, 3), (2, 5), (5, 3), (6, 2), (4, 4)]);
    let qg = all_checked(&mesh, MeshAlgorithm::QG, p, &d);
    let route1: Vec<(usize, usize)> = qg.sends[1].route.iter().map(|&n| xy(&mesh, n)).collect();
    assert_eq!(
        route1,
        [
            (2, 4),
            (1, 4),
            (1, 3),
            (2, 3),
            (3, 3),
            (4, 3),
            (5, 3),
            (6, 3),
            (6, 2)
        ]
    );
    assert_eq!(qg.link_visits(), 19);
    assert_eq!(qg.additional_traffic(), 10);
    let dp = all_checked(&mesh, MeshAlgorithm::DualPath, p, &d);
    assert_eq!(dp.link_visits(), 26);
    let mp = all_checked(&mesh, MeshAlgorithm::MultiPath, p, &d);
    assert_eq!(mp.link_visits(), 17);
    let l2: Vec<(usize, usize)> = mp.sends[3].route.iter().map(|&n| xy(&mesh, n)).collect();
    // Lin's R would route the last leg (5,2) → (6,1) via (5,1);
    // legs here are XY-routed (the paper's simulations), via (6,2). Same hops.
    assert_eq!(
        l2,
        [
            (2, 4),
            (2, 3),
            (3, 3),
            (4, 3),
            (5, 3),
            (6, 3),
            (6, 2),
            (5, 2),
            (6, 2),
            (6, 1)
        ]
    );
    // The four MP worms leave by distinct first channels.
    let mut firsts: Vec<usize> = mp.sends.iter().map(|s| s.route[1]).collect();
    firsts.sort_unstable();
    firsts.dedup();
    assert_eq!(firsts.len(), 4);
    let cp = all_checked(&mesh, MeshAlgorithm::ColumnPath, p, &d);
    assert_eq!((cp.sends.len(), cp.link_visits(), cp.phases()), (6, 20, 2));
    let cost = MeshCost {
        prep: Some(0.0),
        ..MeshCost::paper(32.0)
    };
    let m = evaluate(&qg, &cost);
    let arr: Vec<((usize, usize), f64)> =
        m.arrivals.iter().map(|&(n, t)| (xy(&mesh, n), t)).collect();
    for (pt, t) in [
        ((4, 4), 67.0),
        ((1, 3), 67.0),
        ((2, 5), 70.0),
        ((5, 3), 71.0),
        ((6, 2), 73.0),
        ((1, 2), 133.0),
        ((5, 2), 137.0),
        ((0, 4), 138.0),
        ((6, 1), 139.0),
    ] {
        assert!(arr.contains(&(pt, t)), "{pt:?} at {t}: {arr:?}");
    }
    assert_eq!(m.network_latency, 139.0);
    assert!(close(m.mean_node_latency, 99.44, 5e-3));
    assert!(close(m.cv, 0.336, 5e-4));
    assert_eq!(evaluate(&dp, &cost).network_latency, 86.0);
    assert_eq!(evaluate(&mp, &cost).network_latency, 74.0);
    assert_eq!(evaluate(&cp, &cost).network_latency, 140.0);
    assert!(close(evaluate(&dp, &cost).cv, 0.081, 5e-4));
    assert!(close(evaluate(&mp, &cost).cv, 0.035, 5e-4));
    assert!(close(evaluate(&cp, &cost).cv, 0.360, 5e-4));
    // With the paper's preparation times the source starts later.
    assert_eq!(
        evaluate(&qg, &MeshCost::paper(32.0)).network_latency,
        139.0 + 16.0
    );
}

/// Example C [Al-Dubai 2009, §3, derived]: an asymmetric 12×6 mesh, repeated splitting, a group
/// that never qualifies, and step 1 collapsing to one worm.
#[test]
fn example_c_asymmetric() {
    let mesh = Mesh::new(&[6, 12]).unwrap();
    let p = mesh.node(&[0, 5]).unwrap();
    let d = pts(
        &mesh,
        &[
            (0, 1),
            (1, 1),
            (2, 4),
            (6, 5),
            (8, 0),
            (9, 0),
            (9, 2),
            (9, 5),
            (10, 4),
            (11, 0),
        ],
    );
    let g = grouping(&mesh, p, &d, 0.5);
    assert_eq!(g.mid, [5, 2]);
    assert_eq!(g.imbalance, [4, 2]);
    assert_eq!(g.divisor, 1);
    assert_eq!(
        g.primary.iter().map(|x| x.weight).collect::<Vec<_>>(),
        [7, 20, 4, 14]
    );
    assert!(close(g.w_av, 11.25, 1e-12));
    assert_eq!(g.groups.len(), 6);
    let g2: Vec<GroupRow> = g
        .groups
        .iter()
        .filter(|x| x.primary == 1)
        .map(|x| {
            (
                x.members.iter().map(|&n| xy(&mesh, n)).collect(),
                x.weight,
                x.qualified,
            )
        })
        .collect();
    assert_eq!(
        g2,
        [
            (vec![(11, 0)], 17, false),
            (vec![(8, 0)], 14, true),
            (vec![(9, 0), (9, 2)], 16, true),
        ]
    );
    check_groups(&g, &d).unwrap();
    let qg = all_checked(&mesh, MeshAlgorithm::QG, p, &d);
    assert_eq!(mesh.label(p), 71);
    let step1: Vec<_> = qg.sends.iter().filter(|s| s.phase == 1).collect();
    assert_eq!(step1.len(), 1);
    assert_eq!(step1[0].hops(), 45);
    let cost = MeshCost {
        prep: Some(0.0),
        ..MeshCost::paper(32.0)
    };
    assert_eq!(evaluate(&qg, &cost).network_latency, 161.0);
    let dp = all_checked(&mesh, MeshAlgorithm::DualPath, p, &d);
    assert_eq!(evaluate(&dp, &cost).network_latency, 118.0);
}

/// Example D [Al-Dubai 2009, §3, derived]: 3-D grouping on a 4×4×4 mesh.
#[test]
fn example_d_3d() {
    let mesh = Mesh::new(&[4, 4, 4]).unwrap();
    let p3 = |v: &[(usize, usize, usize)]| -> Vec<usize> {
        v.iter()
            .map(|&(x, y, z)| mesh.node(&[x, y, z]).unwrap())
            .collect()
    };
    let p = p3(&[(0, 0, 3)])[0];
    let d = p3(&[
        (0, 2, 0),
        (1, 0, 1),
        (1, 1, 1),
        (1, 2, 0),
        (1, 3, 2),
        (2, 1, 0),
        (3, 0, 3),
        (3, 2, 0),
        (3, 2, 2),
        (3, 3, 0),
    ]);
    let g = grouping(&mesh, p, &d, 0.5);
    assert_eq!(g.mid, [1, 1, 1]);
    assert_eq!(g.imbalance, [0, 2, 4]);
    assert_eq!(g.divisor, 0);
    assert_eq!(g.primary.len(), 7);
    assert_eq!(
        g.primary.iter().map(|x| x.weight).collect::<Vec<_>>(),
        [6, 8, 6, 7, 4, 11, 7]
    );
    assert!(close(g.w_av, 7.0, 1e-12));
    assert_eq!(g.groups.len(), 8);
    let split: Vec<usize> = g
        .groups
        .iter()
        .filter(|x| x.primary == 5)
        .map(|x| x.weight)
        .collect();
    assert_eq!(split, [9, 10]);
    check_groups(&g, &d).unwrap();
    // DP and QG plan in 3-D; MP and CP are 2-D only.
    all_checked(&mesh, MeshAlgorithm::QG, p, &d);
    all_checked(&mesh, MeshAlgorithm::DualPath, p, &d);
    assert!(matches!(
        plan(&mesh, MeshAlgorithm::MultiPath, p, &d),
        Err(MeshError::Unsupported { .. })
    ));
    assert!(matches!(
        plan(&mesh, MeshAlgorithm::ColumnPath, p, &d),
        Err(MeshError::Unsupported { .. })
    ));
}

/// The snake labelling of a 4×4 mesh, and its n-D
/// generalisation keeps consecutive labels adjacent.
#[test]
fn snake_labels() {
    let mesh = Mesh::new(&[4, 4]).unwrap();
    let rows: Vec<Vec<usize>> = (0..4)
        .rev()
        .map(|y| {
            (0..4)
                .map(|x| mesh.label(mesh.node(&[x, y]).unwrap()))
                .collect()
        })
        .collect();
    assert_eq!(
        rows,
        [
            vec![15, 14, 13, 12],
            vec![8, 9, 10, 11],
            vec![7, 6, 5, 4],
            vec![0, 1, 2, 3]
        ]
    );
    for dims in [vec![5usize, 4], vec![3, 4, 5], vec![2, 3, 2, 3], vec![7]] {
        let m = Mesh::new(&dims).unwrap();
        for l in 0..m.nodes() {
            let a = m.unlabel(l).unwrap();
            assert_eq!(m.label(a), l);
            if l + 1 < m.nodes() {
                assert!(m.adjacent(a, m.unlabel(l + 1).unwrap()), "{dims:?} at {l}");
            }
        }
    }
}

/// [Al-Dubai 2009, §3, derived] edge cases.
#[test]
fn edge_cases() {
    let mesh = Mesh::new(&[8, 8]).unwrap();
    let p = mesh.node(&[3, 3]).unwrap();
    // |D| = 1: one group, no second step.
    let q = all_checked(&mesh, MeshAlgorithm::QG, p, &[mesh.node(&[6, 1]).unwrap()]);
    assert_eq!((q.phases(), q.sends.len()), (1, 1));
    // All destinations in one orthant.
    let d = pts(&mesh, &[(6, 6), (7, 7), (6, 7)]);
    let g = grouping(&mesh, p, &d, 0.5);
    assert_eq!(g.primary.len(), 1);
    // Source at a corner of the area.
    let corner = mesh.node(&[0, 0]).unwrap();
    all_checked(
        &mesh,
        MeshAlgorithm::QG,
        corner,
        &pts(&mesh, &[(7, 7), (1, 5), (6, 0), (3, 3)]),
    );
    // The number of groups does not grow with TD (on this set).
    let d = pts(
        &mesh,
        &EXAMPLE_A
            .iter()
            .copied()
            .filter(|&(x, y)| x < 8 && y < 8)
            .collect::<Vec<_>>(),
    );
    let count = |td: f64| grouping(&mesh, p, &d, td).groups.len();
    assert!(count(0.2) >= count(0.5) && count(0.5) >= count(0.8));
    // Bad requests are typed errors.
    assert_eq!(
        plan(&mesh, MeshAlgorithm::QG, p, &[]),
        Err(MeshError::NoDestinations)
    );
    assert_eq!(
        plan(&mesh, MeshAlgorithm::QG, p, &[p]),
        Err(MeshError::SourceIsDestination(p))
    );
    assert_eq!(
        plan(&mesh, MeshAlgorithm::QG, p, &[1, 1]),
        Err(MeshError::DuplicateDestination(1))
    );
    assert!(matches!(
        plan(&mesh, MeshAlgorithm::QG, p, &[64]),
        Err(MeshError::NodeOutOfRange { .. })
    ));
    assert!(matches!(
        plan(&mesh, MeshAlgorithm::Qg { td: 1.5 }, p, &[1]),
        Err(MeshError::BadThreshold(_))
    ));
    assert!("qg:0".parse::<MeshAlgorithm>().is_err());
    assert_eq!(
        "qg:0.2".parse::<MeshAlgorithm>(),
        Ok(MeshAlgorithm::Qg { td: 0.2 })
    );
    assert_eq!("qg".parse::<MeshAlgorithm>(), Ok(MeshAlgorithm::QG));
}
