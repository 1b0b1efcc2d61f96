//! The fully specified test network standing in for Fig 17 [Sivaram 1998, §5.3.2, Fig 17, derived]: up*/down*
//! setup, Fig 13 chains and weights, the four schedules with the paper's step
//! counts and sender/worm pairings, the Fig 18 strings, the tree worm, and the
//! Fig 17(b) duplicate with and without the header rewrite.

use std::collections::BTreeMap;

use mcast_algorithms::irregular::examples::{paper_network, paper_node, paper_switch};
use mcast_algorithms::irregular::{
    BitStringHeader, IdForm, NodeId, NodeSet, RouteHeader, Scheme, SwitchId, SwitchNetwork,
    UpDownDir, WormKind, WormTraceOptions,
};
use mcast_algorithms::{check_delivery, check_responsibility, Shape};

fn sw(i: usize) -> SwitchId {
    paper_switch(i)
}
fn p(i: usize, j: usize) -> NodeId {
    paper_node(i, j)
}
/// Paper switch numbers of a list of switch ids.
fn paper(v: &[SwitchId]) -> Vec<usize> {
    v.iter().map(|s| s + 1).collect()
}
/// Both nodes of each paper switch.
fn nodes_of(switches: &[usize]) -> Vec<NodeId> {
    switches.iter().flat_map(|&i| [p(i, 1), p(i, 2)]).collect()
}
/// The paper's multicast: source p10,1, both nodes of every switch but 6, 10.
fn paper_dests() -> Vec<NodeId> {
    nodes_of(&[1, 2, 3, 4, 5, 7, 8, 9])
}
fn switches_of_nodes(f: &SwitchNetwork, nodes: &[NodeId]) -> Vec<usize> {
    let mut v: Vec<usize> = nodes
        .iter()
        .map(|&n| f.topology().switch_of(n).unwrap() + 1)
        .collect();
    v.dedup();
    v
}

#[test]
fn updown_setup() {
    let f = paper_network(false).unwrap();
    let ud = f.updown();
    let levels: BTreeMap<usize, usize> = (1..=10).map(|i| (i, ud.level(sw(i)).unwrap())).collect();
    let want = [
        (6, 0),
        (1, 1),
        (4, 1),
        (5, 1),
        (2, 2),
        (3, 2),
        (7, 2),
        (8, 2),
        (10, 2),
        (9, 3),
    ];
    for (s, l) in want {
        assert_eq!(levels[&s], l, "level of switch {s}");
    }
    let downs = [
        (6, 4),
        (6, 1),
        (6, 5),
        (1, 4),
        (1, 7),
        (1, 8),
        (4, 5),
        (4, 8),
        (4, 10),
        (5, 2),
        (5, 3),
        (3, 9),
        (2, 10),
    ];
    for (a, b) in downs {
        assert_eq!(ud.dir(sw(a), sw(b)), UpDownDir::Down, "{a}->{b}");
        assert_eq!(ud.dir(sw(b), sw(a)), UpDownDir::Up, "{b}->{a}");
    }
    // Host ports count as down; inter-switch ports start at 2.
    assert_eq!(ud.port_dir(f.topology(), sw(6), 0), Some(UpDownDir::Down));
    assert_eq!(ud.port_dir(f.topology(), sw(4), 2), Some(UpDownDir::Up));
}

#[test]
fn fig13_chains_and_weights() {
    let f = paper_network(false).unwrap();
    let pocs = f.pocs(p(10, 1), &paper_dests()).unwrap();
    let edges: Vec<(usize, usize)> = pocs
        .reduced_edges
        .iter()
        .map(|&(a, b)| (a + 1, b + 1))
        .collect();
    assert_eq!(
        edges,
        vec![(1, 7), (1, 8), (3, 9), (4, 8), (4, 10), (5, 2), (5, 3)]
    );
    let weights: BTreeMap<usize, usize> = pocs.weights.iter().map(|(&s, &w)| (s + 1, w)).collect();
    let want: BTreeMap<usize, usize> = [
        (5, 8),
        (1, 6),
        (4, 5),
        (3, 4),
        (2, 2),
        (7, 2),
        (8, 2),
        (9, 2),
        (10, 1),
    ]
    .into_iter()
    .collect();
    assert_eq!(weights, want);
    let chains: Vec<Vec<usize>> = pocs.chains.iter().map(|c| paper(c)).collect();
    assert_eq!(
        chains,
        vec![vec![5, 3, 9], vec![1, 7], vec![4, 8], vec![2], vec![10]]
    );
    // Path worms: the chains with destinations, source's switch dropped.
    let worms = f
        .path_worms(p(10, 1), &paper_dests(), IdForm::Switch)
        .unwrap();
    let ws: Vec<(Vec<usize>, usize)> = worms
        .iter()
        .map(|w| (paper(&w.switches), w.delivers.len()))
        .collect();
    assert_eq!(
        ws,
        vec![
            (vec![5, 3, 9], 6),
            (vec![1, 7], 4),
            (vec![4, 8], 4),
            (vec![2], 2)
        ]
    );
    let ssr = f
        .ssr_worms(p(10, 1), &paper_dests(), IdForm::Switch)
        .unwrap();
    let order: Vec<usize> = ssr.iter().map(|w| w.switches[0] + 1).collect();
    assert_eq!(order, vec![5, 3, 9, 1, 7, 4, 8, 2]);
}

/// (step, sender, paper switches covered) for every send.
fn schedule(f: &SwitchNetwork, scheme: Scheme) -> Vec<(usize, NodeId, Vec<usize>)> {
    let plan = f.plan(scheme, p(10, 1), &paper_dests()).unwrap();
    check_delivery(&plan.to_plan().unwrap(), p(10, 1), &paper_dests()).unwrap();
    check_responsibility(&plan.to_plan().unwrap(), p(10, 1), &paper_dests()).unwrap();
    for r in plan.routes() {
        f.check_route(r).unwrap();
    }
    plan.sends
        .iter()
        .map(|s| (s.step, s.sender, switches_of_nodes(f, &s.delivers)))
        .collect()
}

#[test]
fn paper_schedules() {
    let f = paper_network(false).unwrap();
    let src = p(10, 1);
    assert_eq!(
        schedule(&f, Scheme::SsrGreedy),
        vec![
            (1, src, vec![5]),
            (2, src, vec![3]),
            (2, p(5, 1), vec![9]),
            (2, p(5, 2), vec![1]),
            (3, src, vec![7]),
            (3, p(5, 1), vec![4]),
            (3, p(5, 2), vec![8]),
            (3, p(3, 1), vec![2]),
        ]
    );
    assert_eq!(
        schedule(&f, Scheme::SsrLessGreedy),
        vec![
            (1, src, vec![5]),
            (2, src, vec![3]),
            (2, p(5, 1), vec![9]),
            (3, src, vec![1]),
            (3, p(5, 1), vec![7]),
            (3, p(3, 1), vec![4]),
            (3, p(9, 1), vec![8]),
            (4, src, vec![2]),
        ]
    );
    assert_eq!(
        schedule(&f, Scheme::PathGreedy),
        vec![
            (1, src, vec![5, 3, 9]),
            (2, src, vec![1, 7]),
            (2, p(5, 1), vec![4, 8]),
            (2, p(5, 2), vec![2]),
        ]
    );
    assert_eq!(
        schedule(&f, Scheme::PathLessGreedy),
        vec![
            (1, src, vec![5, 3, 9]),
            (2, src, vec![1, 7]),
            (2, p(5, 1), vec![4, 8]),
            (2, p(3, 1), vec![2]),
        ]
    );
    let phases: Vec<usize> = Scheme::ALL
        .iter()
        .map(|&s| f.plan(s, src, &paper_dests()).unwrap().phases)
        .collect();
    assert_eq!(phases, vec![3, 4, 2, 2, 1]);
}

#[test]
fn path_worm_routes() {
    let f = paper_network(false).unwrap();
    let plan = f
        .plan(Scheme::PathLessGreedy, p(10, 1), &paper_dests())
        .unwrap();
    let routes: Vec<Vec<usize>> = plan.sends.iter().map(|s| paper(&s.route)).collect();
    assert_eq!(
        routes,
        vec![
            vec![10, 4, 5, 3, 9],
            vec![10, 4, 1, 7],
            vec![5, 4, 8],
            vec![3, 5, 2]
        ]
    );
    assert!(plan.sends.iter().all(|s| s.worm == WormKind::Path));
}

fn string_switches(f: &SwitchNetwork, set: &NodeSet) -> Vec<usize> {
    switches_of_nodes(f, &set.iter().collect::<Vec<_>>())
}

#[test]
fn fig18_strings() {
    let f = paper_network(false).unwrap();
    let r = f.reachability();
    let s = |i: usize, port: usize| string_switches(&f, r.restricted(sw(i), port).unwrap());
    assert_eq!(s(6, 2), Vec::<usize>::new());
    assert_eq!(s(6, 3), vec![1, 4, 7, 8]);
    assert_eq!(s(6, 4), vec![2, 3, 5, 9, 10]);
    assert_eq!(string_switches(&f, r.total(sw(6)).unwrap()).len(), 10);
    assert_eq!(s(1, 3), vec![2, 3, 4, 5, 9, 10]);
    assert_eq!(s(1, 4), vec![7]);
    assert_eq!(s(1, 5), vec![8]);
    assert_eq!(s(4, 4), vec![2, 3, 5, 9]);
    assert_eq!(s(4, 5), vec![8]);
    assert_eq!(s(4, 6), vec![10]);
    assert_eq!(
        string_switches(&f, r.total(sw(4)).unwrap()),
        vec![2, 3, 4, 5, 8, 9, 10]
    );
    assert_eq!(s(5, 4), vec![2, 10]);
    assert_eq!(s(5, 5), vec![3, 9]);
    // Up links have no string; host ports hold their own node.
    assert!(r.restricted(sw(4), 2).is_none());
    assert_eq!(
        r.restricted(sw(3), 1).unwrap().iter().collect::<Vec<_>>(),
        vec![p(3, 2)]
    );
}

#[test]
fn tree_worm_all_16() {
    let f = paper_network(false).unwrap();
    let plan = f.plan(Scheme::TreeWorm, p(10, 1), &paper_dests()).unwrap();
    assert_eq!(plan.phases, 1);
    assert_eq!(plan.worm_count(), 1);
    let s = &plan.sends[0];
    assert_eq!(s.worm, WormKind::Tree);
    assert_eq!(paper(&s.route), vec![10, 4, 6]);
    let mut got = s.delivers.clone();
    got.sort();
    assert_eq!(got, paper_dests(), "each destination exactly once");
    for b in &s.branches {
        f.check_route(b).unwrap();
    }
    // Down copies with rewritten headers: 6->1 carries {1,4,7,8}, 6->5 {2,3,5,9}.
    let header = &s.header;
    // It arrives at 6 from 4 (switch 6's port 2), still travelling up.
    let d = f.decide(sw(6), 2, header, 0).unwrap();
    let copies: Vec<(usize, Vec<usize>)> = d
        .outputs
        .iter()
        .map(|o| match &o.header {
            RouteHeader::BitString(b) => (o.port, string_switches(&f, b.dests())),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(copies, vec![(3, vec![1, 4, 7, 8]), (4, vec![2, 3, 5, 9])]);
}

fn copies_per_node(
    f: &SwitchNetwork,
    src: NodeId,
    dests: &[NodeId],
    rewrite: bool,
) -> BTreeMap<NodeId, usize> {
    let h = RouteHeader::BitString(
        BitStringHeader::new(
            true,
            NodeSet::from_nodes(f.topology().node_count(), dests.iter().copied()),
        )
        .unwrap(),
    );
    let t = f
        .trace_with(src, &h, WormTraceOptions { pick: 0, rewrite })
        .unwrap();
    let mut m = BTreeMap::new();
    for n in t.delivered {
        *m.entry(n).or_insert(0) += 1;
    }
    m
}

#[test]
fn fig17b_duplicate() {
    let f = paper_network(true).unwrap();
    // Switch 6's port to 4 has an all-zero string (footnote 1).
    assert!(f.reachability().restricted(sw(6), 2).unwrap().is_empty());
    let dests = nodes_of(&[4, 7]);
    let with = copies_per_node(&f, p(6, 1), &dests, true);
    assert_eq!(with.values().copied().collect::<Vec<_>>(), vec![1; 4]);
    let without = copies_per_node(&f, p(6, 1), &dests, false);
    assert_eq!(without[&p(4, 1)], 1);
    assert_eq!(without[&p(4, 2)], 1);
    assert_eq!(without[&p(7, 1)], 2, "p7,1 gets the Fig 17(b) duplicate");
    assert_eq!(without[&p(7, 2)], 2);

    // All 16 from p10,1 on the variant.
    let all = paper_dests();
    let with = copies_per_node(&f, p(10, 1), &all, true);
    assert_eq!(with.keys().copied().collect::<Vec<_>>(), all);
    assert!(with.values().all(|&c| c == 1));
    let without = copies_per_node(&f, p(10, 1), &all, false);
    for i in [2, 3, 5, 7, 8, 9] {
        assert_eq!(without[&p(i, 1)], 2, "switch {i}");
        assert_eq!(without[&p(i, 2)], 2, "switch {i}");
    }
    for i in [1, 4] {
        assert_eq!(without[&p(i, 1)], 1, "switch {i}");
    }
    // The planner (which rewrites) still delivers exactly once.
    let plan = f.plan(Scheme::TreeWorm, p(10, 1), &all).unwrap();
    check_delivery(&plan.to_plan().unwrap(), p(10, 1), &all).unwrap();
}

#[test]
fn kbinomial_on_paper_order() {
    let f = paper_network(false).unwrap();
    let chain = f.host_chain(p(10, 1), &paper_dests()).unwrap();
    let mut want = vec![p(10, 1)];
    want.extend(nodes_of(&[5, 3, 9, 1, 7, 4, 8, 2]));
    assert_eq!(chain, want);
    for shape in [
        Shape::Flat,
        Shape::KBinomial { k: 2 },
        Shape::KBinomial { k: 5 },
    ] {
        let plan = f.chain_plan(p(10, 1), &paper_dests(), shape).unwrap();
        check_responsibility(&plan, p(10, 1), &paper_dests()).unwrap();
    }
}
