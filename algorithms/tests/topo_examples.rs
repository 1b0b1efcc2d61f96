//! Every worked example of [Robinson 1994, §3.1, §3.4, Figs 3.1, 3.2, 3.9; §3.3, Fig 3.4; §3.3, Fig 3.6; §3.2.1, §3.3; §4.3–4.4, Figs 4.4–4.5; §4.4, Fig 4.10; §4.1–4.2, Fig 4.1] (plus the unicast examples of
//! [Robinson 1994, §4.3–4.4, Figs 4.4–4.5, derived] [Oral 2003, §3, Fig 1, derived] and the unicast M_u-torus(2) baseline of [Robinson 1994, ch. 6, Fig 5.1, derived]),
//! typed as they stand in the papers: nodes as `4,3` or `0101`.

use std::collections::BTreeSet;

use mcast_algorithms::contention::{
    analyze, check_delivery, check_steps, depth_conflicts, link_sharing, stepwise_conflicts,
};
use mcast_algorithms::topo::{Channel, Dir, Vc};
use mcast_algorithms::trees::{plan, MuPartition, Options, PortModel, TreeAlgorithm, TreeSend};
use mcast_algorithms::{Multicast, Topology};

fn topo(spec: &str) -> Topology {
    spec.parse().unwrap()
}

fn node(t: &Topology, s: &str) -> usize {
    t.parse_node(s).unwrap()
}

fn nodes(t: &Topology, s: &str) -> Vec<usize> {
    t.parse_nodes(s).unwrap()
}

fn run(t: &Topology, algo: TreeAlgorithm, src: &str, dests: &str, model: PortModel) -> Multicast {
    let m = plan(
        t,
        algo,
        node(t, src),
        &nodes(t, dests),
        Options::with_port_model(model),
    )
    .unwrap();
    check_delivery(&m).unwrap();
    assert_eq!(check_steps(t, &m).unwrap(), m.steps());
    m
}

/// The schedule as a set of (step, from, to) in paper notation.
fn schedule(t: &Topology, m: &Multicast) -> BTreeSet<(usize, String, String)> {
    m.sends()
        .iter()
        .map(|s| {
            (
                s.step,
                t.format_node(s.from).unwrap(),
                t.format_node(s.to).unwrap(),
            )
        })
        .collect()
}

fn expect(rows: &[(usize, &str, &str)]) -> BTreeSet<(usize, String, String)> {
    rows.iter()
        .map(|&(s, a, b)| (s, a.to_string(), b.to_string()))
        .collect()
}

/// The address field D of the send to `to`, in paper notation.
fn covers(t: &Topology, m: &Multicast, to: &str) -> Vec<String> {
    let to = node(t, to);
    m.sends()
        .iter()
        .find(|s| s.to == to)
        .unwrap()
        .covers
        .iter()
        .map(|&v| t.format_node(v).unwrap())
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn contention_free(t: &Topology, m: &Multicast) {
    assert!(stepwise_conflicts(t, m).unwrap().is_empty());
    assert!(depth_conflicts(t, m).unwrap().is_empty());
}

// ---------------------------------------------------------------- [Robinson 1994, §3.1, §3.4, Figs 3.1, 3.2, 3.9]

const D71: &str = "0001;0011;0101;0111;1011;1100;1110;1111";

#[test]
fn s7_1_ucube_one_port() {
    let t = topo("hypercube:4");
    let m = run(&t, TreeAlgorithm::UCube, "0000", D71, PortModel::OnePort);
    assert_eq!(m.steps(), 4);
    assert_eq!(
        schedule(&t, &m),
        expect(&[
            (1, "0000", "0111"),
            (2, "0000", "0011"),
            (2, "0111", "1100"),
            (3, "0000", "0001"),
            (3, "0011", "0101"),
            (3, "0111", "1011"),
            (3, "1100", "1110"),
            (4, "1110", "1111"),
        ])
    );
    contention_free(&t, &m);
}

#[test]
fn s7_1_ucube_all_port() {
    let t = topo("hypercube:4");
    for model in [PortModel::AllPortA, PortModel::AllPortB] {
        let m = run(&t, TreeAlgorithm::UCube, "0000", D71, model);
        assert_eq!(m.steps(), 4);
        assert_eq!(
            schedule(&t, &m),
            expect(&[
                (1, "0000", "0111"),
                (1, "0000", "0011"),
                (1, "0000", "0001"),
                (2, "0011", "0101"),
                (2, "0111", "1100"),
                (3, "0111", "1011"),
                (3, "1100", "1110"),
                (4, "1110", "1111"),
            ])
        );
        // "1011 is reached at step 3 under U-cube" [T].
        assert_eq!(m.receive_step(node(&t, "1011")), Some(3));
    }
}

#[test]
fn s7_1_maxport() {
    let t = topo("hypercube:4");
    for model in [PortModel::AllPortA, PortModel::AllPortB] {
        let m = run(&t, TreeAlgorithm::Maxport, "0000", D71, model);
        assert_eq!(m.steps(), 4);
        assert_eq!(
            schedule(&t, &m),
            expect(&[
                (1, "0000", "1011"),
                (1, "0000", "0101"),
                (1, "0000", "0011"),
                (1, "0000", "0001"),
                (2, "0101", "0111"),
                (2, "1011", "1100"),
                (3, "1100", "1110"),
                (4, "1110", "1111"),
            ])
        );
        assert_eq!(
            covers(&t, &m, "1011"),
            strs(&["1011", "1100", "1110", "1111"])
        );
        assert_eq!(covers(&t, &m, "0101"), strs(&["0101", "0111"]));
        assert_eq!(covers(&t, &m, "1100"), strs(&["1100", "1110", "1111"]));
        contention_free(&t, &m);
    }
}

#[test]
fn s7_1_combine() {
    let t = topo("hypercube:4");
    for model in [PortModel::AllPortA, PortModel::AllPortB] {
        let m = run(&t, TreeAlgorithm::Combine, "0000", D71, model);
        assert_eq!(m.steps(), 3);
        assert_eq!(
            schedule(&t, &m),
            expect(&[
                (1, "0000", "1011"),
                (1, "0000", "0101"),
                (1, "0000", "0011"),
                (1, "0000", "0001"),
                (2, "0101", "0111"),
                (2, "1011", "1110"),
                (3, "1011", "1100"),
                (3, "1110", "1111"),
            ])
        );
        contention_free(&t, &m);
    }
}

#[test]
fn s7_1_wsort() {
    let t = topo("hypercube:4");
    for model in [PortModel::AllPortA, PortModel::AllPortB] {
        let m = run(&t, TreeAlgorithm::WSort, "0000", D71, model);
        assert_eq!(m.steps(), 2);
        assert_eq!(
            schedule(&t, &m),
            expect(&[
                (1, "0000", "1110"),
                (1, "0000", "0101"),
                (1, "0000", "0011"),
                (1, "0000", "0001"),
                (2, "1110", "1011"),
                (2, "1110", "1100"),
                (2, "1110", "1111"),
                (2, "0101", "0111"),
            ])
        );
        // D = {14, 15, 12, 11}: R_1110 = {1110, 1011, 1100, 1111} [T].
        assert_eq!(
            covers(&t, &m, "1110"),
            strs(&["1110", "1111", "1100", "1011"])
        );
        assert_eq!(covers(&t, &m, "0101"), strs(&["0101", "0111"]));
        contention_free(&t, &m);
    }
}

// ---------------------------------------------------------------- [Robinson 1994, §3.3, Fig 3.4]

#[test]
fn s7_2_fig_3_4() {
    let t = topo("hypercube:4");
    let m = run(
        &t,
        TreeAlgorithm::UCube,
        "0100",
        "0001;0011;0101;0111;1000;1010;1011;1111",
        PortModel::OnePort,
    );
    assert_eq!(m.steps(), 4);
    assert_eq!(
        schedule(&t, &m),
        expect(&[
            (1, "0100", "0011"),
            (2, "0100", "0111"),
            (2, "0011", "1000"),
            (3, "0100", "0101"),
            (3, "0111", "0001"),
            (3, "0011", "1111"),
            (3, "1000", "1010"),
            (4, "1010", "1011"),
        ])
    );
    contention_free(&t, &m);
}

// ---------------------------------------------------------------- [Robinson 1994, §3.3, Fig 3.6]

#[test]
fn s7_3_fig_3_6() {
    let t = topo("hypercube:4");
    let d = "1001;1010;1011";
    let m = run(&t, TreeAlgorithm::Maxport, "0000", d, PortModel::ALL_PORT);
    assert_eq!(m.steps(), 3);
    assert_eq!(
        schedule(&t, &m),
        expect(&[
            (1, "0000", "1001"),
            (2, "1001", "1010"),
            (3, "1010", "1011")
        ])
    );
    assert_eq!(covers(&t, &m, "1001"), strs(&["1001", "1010", "1011"]));
    for algo in [TreeAlgorithm::UCube, TreeAlgorithm::Combine] {
        for model in [PortModel::AllPortA, PortModel::AllPortB] {
            let m = run(&t, algo, "0000", d, model);
            assert_eq!(m.steps(), 2);
            assert_eq!(
                schedule(&t, &m),
                expect(&[
                    (1, "0000", "1010"),
                    (2, "0000", "1001"),
                    (2, "1010", "1011")
                ])
            );
            assert_eq!(covers(&t, &m, "1010"), strs(&["1010", "1011"]));
        }
    }
}

// ---------------------------------------------------------------- [Robinson 1994, §3.2.1, §3.3]

#[test]
fn s7_4_small_vectors() {
    let t = topo("hypercube:4");
    let r = t.route(node(&t, "0101"), node(&t, "1110")).unwrap();
    assert_eq!(r[0].dim, 3); // δ(0101, 1110) = 3
    let path: Vec<String> = r.iter().map(|c| t.format_node(c.node).unwrap()).collect();
    assert_eq!(path, strs(&["0101", "1101", "1111"]));
    // Broadcast: every algorithm takes n steps on an all-port n-cube.
    for n in 2..=7 {
        let h: Topology = format!("hypercube:{n}").parse().unwrap();
        let all: Vec<usize> = (1..h.nodes()).collect();
        for algo in [
            TreeAlgorithm::UCube,
            TreeAlgorithm::Maxport,
            TreeAlgorithm::Combine,
            TreeAlgorithm::WSort,
        ] {
            for model in [PortModel::AllPortA, PortModel::AllPortB] {
                let m = plan(&h, algo, 0, &all, Options::with_port_model(model)).unwrap();
                assert_eq!(m.steps(), n, "{algo:?} n={n}");
            }
        }
    }
}

// ---------------------------------------------------------------- [Robinson 1994, §4.3–4.4, Figs 4.4–4.5]

const S75: &str = "4,3";
const D75: &str = "0,0;1,1;2,1;0,3;1,3;4,4";

fn ch(t: &Topology, at: &str, dim: usize, dir: Dir, vc: Vc) -> Channel {
    Channel {
        node: node(t, at),
        dim,
        dir,
        vc,
    }
}

#[test]
fn s7_5_utorus_utr() {
    let t = topo("torus:5x5:uni");
    let m = run(&t, TreeAlgorithm::UTorus, S75, D75, PortModel::OnePort);
    assert_eq!(m.steps(), 3);
    assert_eq!(
        schedule(&t, &m),
        expect(&[
            (1, "4,3", "1,1"),
            (2, "4,3", "0,0"),
            (2, "1,1", "2,1"),
            (3, "4,3", "4,4"),
            (3, "1,1", "1,3"),
            (3, "0,0", "0,3"),
        ])
    );
    assert_eq!(covers(&t, &m, "1,1"), strs(&["1,1", "1,3", "2,1"]));
    assert_eq!(covers(&t, &m, "0,0"), strs(&["0,0", "0,3"]));
    let (p, h) = (Vc::P, Vc::H);
    let route = |a: &str, b: &str| t.route(node(&t, a), node(&t, b)).unwrap();
    assert_eq!(
        route("4,3", "1,1"),
        vec![
            ch(&t, "4,3", 1, Dir::Plus, p),
            ch(&t, "0,3", 1, Dir::Plus, h),
            ch(&t, "1,3", 0, Dir::Plus, p),
            ch(&t, "1,4", 0, Dir::Plus, p),
            ch(&t, "1,0", 0, Dir::Plus, h),
        ]
    );
    assert_eq!(
        route("4,3", "0,0"),
        vec![
            ch(&t, "4,3", 1, Dir::Plus, p),
            ch(&t, "0,3", 0, Dir::Plus, p),
            ch(&t, "0,4", 0, Dir::Plus, p),
        ]
    );
    assert_eq!(route("1,1", "2,1"), vec![ch(&t, "1,1", 1, Dir::Plus, h)]);
    assert_eq!(route("4,3", "4,4"), vec![ch(&t, "4,3", 0, Dir::Plus, h)]);
    assert_eq!(
        route("1,1", "1,3"),
        vec![
            ch(&t, "1,1", 0, Dir::Plus, h),
            ch(&t, "1,2", 0, Dir::Plus, h)
        ]
    );
    assert_eq!(
        route("0,0", "0,3"),
        vec![
            ch(&t, "0,0", 0, Dir::Plus, h),
            ch(&t, "0,1", 0, Dir::Plus, h),
            ch(&t, "0,2", 0, Dir::Plus, h),
        ]
    );
    // "The p-channel from (4,3) to (0,3) is used by two unicasts (steps 1
    // and 2)" — contention-free because the same sender serialises them.
    contention_free(&t, &m);
    let r = analyze(&t, &m).unwrap();
    assert_eq!((r.stepwise, r.depth), (0, 0));
}

#[test]
fn s7_5_utorus_btr() {
    let t = topo("torus:5x5");
    let m = run(&t, TreeAlgorithm::UTorus, S75, D75, PortModel::OnePort);
    assert_eq!(m.steps(), 3);
    let route = |a: &str, b: &str| t.route(node(&t, a), node(&t, b)).unwrap();
    assert_eq!(
        route("4,3", "1,1"),
        vec![
            ch(&t, "4,3", 1, Dir::Plus, Vc::P),
            ch(&t, "0,3", 1, Dir::Plus, Vc::H),
            ch(&t, "1,3", 0, Dir::Minus, Vc::L),
            ch(&t, "1,2", 0, Dir::Minus, Vc::L),
        ]
    );
    assert_eq!(
        route("4,3", "0,0"),
        vec![
            ch(&t, "4,3", 1, Dir::Plus, Vc::P),
            ch(&t, "0,3", 0, Dir::Plus, Vc::P),
            ch(&t, "0,4", 0, Dir::Plus, Vc::P),
        ]
    );
    assert_eq!(
        route("0,0", "0,3"),
        vec![
            ch(&t, "0,0", 0, Dir::Minus, Vc::P),
            ch(&t, "0,4", 0, Dir::Minus, Vc::L)
        ]
    );
    for (a, b) in [("1,1", "2,1"), ("4,3", "4,4"), ("1,1", "1,3")] {
        assert!(route(a, b)
            .iter()
            .all(|c| c.vc == Vc::H && c.dir == Dir::Plus));
    }
    contention_free(&t, &m);
}

fn hand(t: &Topology, dests: &str, sends: &[(usize, &str, &str, usize)]) -> Multicast {
    let sends = sends
        .iter()
        .map(|&(step, a, b, order)| TreeSend {
            step,
            from: node(t, a),
            to: node(t, b),
            covers: vec![node(t, b)],
            order,
        })
        .collect::<Vec<_>>();
    // Covers of inner nodes: their subtree (fixed below by the caller if
    // needed); delivery only is checked here.
    Multicast::from_sends(node(t, S75), &nodes(t, dests), PortModel::OnePort, sends)
}

#[test]
fn s7_5_fig_4_5_contention_scenarios() {
    let t = topo("torus:5x5:uni");
    // Fig 4.5(b): depth contention on the h-channel (0,3) -> (1,3).
    let b = hand(
        &t,
        "0,3;1,1;1,3",
        &[
            (1, "4,3", "0,3", 0),
            (2, "0,3", "1,1", 0),
            (3, "4,3", "1,3", 1),
        ],
    );
    assert!(stepwise_conflicts(&t, &b).unwrap().is_empty());
    let d = depth_conflicts(&t, &b).unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].channel, ch(&t, "0,3", 1, Dir::Plus, Vc::H));
    // Fig 4.5(a): stepwise contention, both in step 2.
    let a = hand(
        &t,
        "0,3;1,1;1,3",
        &[
            (1, "4,3", "0,3", 0),
            (2, "4,3", "1,3", 1),
            (2, "0,3", "1,1", 0),
        ],
    );
    let s = stepwise_conflicts(&t, &a).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].channel, ch(&t, "0,3", 1, Dir::Plus, Vc::H));
    assert_eq!(depth_conflicts(&t, &a).unwrap().len(), 1);
    assert_eq!(check_steps(&t, &a), Ok(2));
}

// ---------------------------------------------------------------- [Robinson 1994, §4.4, Fig 4.10]

#[test]
fn s7_6_utorus_3d() {
    let src = "8,4,5";
    let dests = "4,9,3;1,9,7;1,0,2;8,5,4;4,8,9;9,0,5;3,5,5;9,0,1;8,0,5;1,6,4";
    for spec in ["torus:10x10x10:uni", "torus:10x10x10"] {
        let t = topo(spec);
        let m = run(&t, TreeAlgorithm::UTorus, src, dests, PortModel::OnePort);
        assert_eq!(m.steps(), 4);
        assert_eq!(
            schedule(&t, &m),
            expect(&[
                (1, "8,4,5", "1,9,7"),
                (2, "8,4,5", "9,0,5"),
                (2, "1,9,7", "4,9,3"),
                (3, "8,4,5", "9,0,1"),
                (3, "1,9,7", "4,8,9"),
                (3, "9,0,5", "1,6,4"),
                (3, "4,9,3", "8,0,5"),
                (4, "8,4,5", "8,5,4"),
                (4, "1,9,7", "3,5,5"),
                (4, "9,0,5", "1,0,2"),
            ])
        );
        assert_eq!(
            covers(&t, &m, "1,9,7"),
            strs(&["1,9,7", "3,5,5", "4,8,9", "4,9,3", "8,0,5"])
        );
        assert_eq!(covers(&t, &m, "9,0,5"), strs(&["9,0,5", "1,0,2", "1,6,4"]));
        assert_eq!(covers(&t, &m, "4,9,3"), strs(&["4,9,3", "8,0,5"]));
        // The source sends ceil(log2 11) = 4 messages.
        assert_eq!(m.sends_from(node(&t, src)).len(), 4);
        contention_free(&t, &m);
    }
}

// ---------------------------------------------------------------- [Robinson 1994, §4.1–4.2, Fig 4.1]

#[test]
fn s7_7_routes_4x4() {
    let u = topo("torus:4x4:uni");
    let route = |t: &Topology, a: &str, b: &str| t.route(node(t, a), node(t, b)).unwrap();
    assert_eq!(
        route(&u, "0,0", "2,1"),
        vec![
            ch(&u, "0,0", 1, Dir::Plus, Vc::H),
            ch(&u, "1,0", 1, Dir::Plus, Vc::H),
            ch(&u, "2,0", 0, Dir::Plus, Vc::H),
        ]
    );
    let r = route(&u, "0,2", "3,1");
    assert_eq!(r.len(), 6);
    assert_eq!(
        r.iter().map(|c| (c.dim, c.vc)).collect::<Vec<_>>(),
        vec![
            (1, Vc::H),
            (1, Vc::H),
            (1, Vc::H),
            (0, Vc::P),
            (0, Vc::P),
            (0, Vc::H)
        ]
    );
    let b = topo("torus:4x4");
    assert_eq!(
        route(&b, "0,2", "3,1"),
        vec![
            ch(&b, "0,2", 1, Dir::Minus, Vc::P),
            ch(&b, "3,2", 0, Dir::Minus, Vc::L)
        ]
    );
}

// ------------------------------------------- [Robinson 1994, §4.3–4.4, Figs 4.4–4.5, derived] [Oral 2003, §3, Fig 1, derived], [Robinson 1994, ch. 6, Fig 5.1, derived]

fn link_visits(t: &Topology, m: &Multicast) -> (usize, usize) {
    let mut used = BTreeSet::new();
    let mut visits = 0;
    for s in m.sends() {
        for c in t.route(s.from, s.to).unwrap() {
            visits += 1;
            used.insert(t.directed_link(&c));
        }
    }
    (visits, used.len())
}

#[test]
fn sci_6_6_4x4_g10() {
    let t = topo("torus:4x4:uni");
    let (src, d) = ("1,2", "0,1;0,3;1,0;1,3;2,0;2,2;3,1;3,2;3,3");
    let one = PortModel::OnePort;
    let sa = run(&t, TreeAlgorithm::SeparateAddressing, src, d, one);
    assert_eq!(sa.steps(), 9);
    let order: Vec<String> = sa
        .sends()
        .iter()
        .map(|s| t.format_node(s.to).unwrap())
        .collect();
    assert_eq!(
        order,
        strs(&["0,1", "0,3", "1,0", "1,3", "2,0", "2,2", "3,1", "3,2", "3,3"])
    );
    assert_eq!(link_visits(&t, &sa), (27, 13));

    let u = run(&t, TreeAlgorithm::UTorus, src, d, one);
    assert_eq!(
        schedule(&t, &u),
        expect(&[
            (1, "1,2", "3,2"),
            (2, "1,2", "2,2"),
            (2, "3,2", "0,3"),
            (3, "1,2", "2,0"),
            (3, "2,2", "3,1"),
            (3, "3,2", "0,1"),
            (3, "0,3", "1,0"),
            (4, "1,2", "1,3"),
            (4, "3,2", "3,3"),
        ])
    );
    assert_eq!(link_visits(&t, &u), (20, 14));

    let md = run(&t, TreeAlgorithm::MdTorus, src, d, one);
    assert_eq!(
        schedule(&t, &md),
        expect(&[
            (1, "1,2", "2,2"),
            (2, "1,2", "3,1"),
            (2, "2,2", "2,0"),
            (3, "1,2", "0,1"),
            (3, "3,1", "3,2"),
            (4, "1,2", "1,3"),
            (4, "3,2", "3,3"),
            (4, "0,1", "0,3"),
            (5, "1,3", "1,0"),
        ])
    );
    assert_eq!(link_visits(&t, &md), (20, 15));

    let mu = TreeAlgorithm::MuTorus {
        r: 4,
        partition: MuPartition::Length,
    };
    let mu = run(&t, mu, src, d, one);
    assert_eq!(
        schedule(&t, &mu),
        expect(&[
            (1, "1,2", "3,2"),
            (2, "1,2", "1,3"),
            (2, "3,2", "3,3"),
            (3, "1,2", "2,2"),
            (3, "3,3", "0,1"),
            (3, "1,3", "1,0"),
            (4, "2,2", "2,0"),
            (4, "0,1", "0,3"),
            (5, "2,0", "3,1"),
        ])
    );
    assert_eq!(link_visits(&t, &mu), (15, 14));
}

#[test]
fn sci_6_7_4x4_broadcast() {
    let t = topo("torus:4x4:uni");
    let all: Vec<String> = (1..16).map(|v| t.format_node(v).unwrap()).collect();
    let d = all.join(";");
    let one = PortModel::OnePort;
    let u = run(&t, TreeAlgorithm::UTorus, "0,0", &d, one);
    assert_eq!(u.steps(), 4);
    let mut want = vec![(1, "0,0", "2,0"), (2, "0,0", "1,0"), (2, "2,0", "3,0")];
    let (a0, a2, a1, a3) = (
        ["0,0", "1,0", "2,0", "3,0"],
        ["0,2", "1,2", "2,2", "3,2"],
        ["0,1", "1,1", "2,1", "3,1"],
        ["0,3", "1,3", "2,3", "3,3"],
    );
    for i in 0..4 {
        want.push((3, a0[i], a2[i]));
        want.push((4, a0[i], a1[i]));
        want.push((4, a2[i], a3[i]));
    }
    assert_eq!(schedule(&t, &u), expect(&want));
    assert_eq!(link_visits(&t, &u), (20, 15));
    let sa = run(&t, TreeAlgorithm::SeparateAddressing, "0,0", &d, one);
    assert_eq!((sa.steps(), link_visits(&t, &sa)), (15, (48, 15)));
    let md = run(&t, TreeAlgorithm::MdTorus, "0,0", &d, one);
    assert_eq!(md.steps(), 6);
    let heads: Vec<String> = md
        .sends_from(0)
        .iter()
        .take(3)
        .map(|s| t.format_node(s.to).unwrap())
        .collect();
    assert_eq!(heads, strs(&["1,3", "2,2", "3,1"]));
    assert_eq!(link_visits(&t, &md), (24, 18));
    let mu = TreeAlgorithm::MuTorus {
        r: 4,
        partition: MuPartition::Length,
    };
    let mu = run(&t, mu, "0,0", &d, one);
    assert_eq!((mu.steps(), link_visits(&t, &mu)), (6, (24, 18)));
}

#[test]
fn s7_11_unicast_mu_torus_2() {
    // The unicast-based baseline M_u-torus(2) on the Fig 5.1 problem: phases
    // are one-port steps.
    let t = topo("torus:6x6:uni");
    let m = run(
        &t,
        TreeAlgorithm::MuTorus {
            r: 2,
            partition: MuPartition::Count,
        },
        "3,2",
        "0,5;4,5;3,4;5,4;4,3;1,2;2,1;5,1;1,0",
        PortModel::OnePort,
    );
    assert_eq!(m.steps(), 4);
    assert_eq!(
        schedule(&t, &m),
        expect(&[
            (1, "3,2", "0,5"),
            (2, "3,2", "5,1"),
            (2, "0,5", "2,1"),
            (3, "3,2", "4,5"),
            (3, "5,1", "5,4"),
            (3, "0,5", "1,2"),
            (3, "2,1", "3,4"),
            (4, "3,2", "4,3"),
            (4, "0,5", "1,0"),
        ])
    );
    // M_u-torus(4): 2 phases; as unicasts, the source sends to the heads
    // (5,1), (1,0), (2,1) and then serves its own part.
    let m4 = run(
        &t,
        TreeAlgorithm::MuTorus {
            r: 4,
            partition: MuPartition::Count,
        },
        "3,2",
        "0,5;4,5;3,4;5,4;4,3;1,2;2,1;5,1;1,0",
        PortModel::OnePort,
    );
    let heads: Vec<String> = m4
        .sends_from(node(&t, "3,2"))
        .iter()
        .map(|s| t.format_node(s.to).unwrap())
        .collect();
    assert_eq!(heads, strs(&["5,1", "1,0", "2,1", "4,3", "4,5"]));
    assert_eq!(covers(&t, &m4, "5,1"), strs(&["5,1", "5,4", "0,5"]));
}

#[test]
fn link_sharing_type1_on_a_unidirectional_link() {
    // [Robinson 1994, §4.5, Figs 4.16–4.17]: in step 2, (0,3) -> (2,3) uses the h-channel and (1,3) -> (0,2)
    // the p-channel of the one physical link (1,3) -> (2,3): not contention,
    // but both unicasts share the link (Type 1).
    let t = topo("torus:5x5:uni");
    let tr = |step, a: &str, b: &str, order| TreeSend {
        step,
        from: node(&t, a),
        to: node(&t, b),
        covers: vec![node(&t, b)],
        order,
    };
    let mut first = tr(1, "0,3", "1,3", 0);
    first.covers.push(node(&t, "0,2"));
    let m = Multicast::from_sends(
        node(&t, "0,3"),
        &nodes(&t, "1,3;2,3;0,2"),
        PortModel::OnePort,
        vec![first, tr(2, "0,3", "2,3", 1), tr(2, "1,3", "0,2", 0)],
    );
    check_delivery(&m).unwrap();
    assert_eq!(check_steps(&t, &m), Ok(2));
    let r = analyze(&t, &m).unwrap();
    assert_eq!(
        (r.stepwise, r.depth, r.link_type1, r.link_type2),
        (0, 0, 2, 0)
    );
    // The same sends on a bidirectional torus: (1,3) -> (0,2) goes down on
    // l-channels, so nothing is shared.
    let b = topo("torus:5x5");
    assert_eq!(link_sharing(&b, &m).unwrap().type1, 0);
}
