//! Property tests for the mesh path-based planners (QG, DP, MP, CP) on
//! random meshes and destination sets.

use mcast_algorithms::mesh::{
    check_groups, check_plan, evaluate, grouping, plan, Mesh, MeshAlgorithm, MeshCost,
};
use proptest::prelude::*;

/// (radices high first, source, destinations).
fn case(max_dims: usize) -> impl Strategy<Value = (Vec<usize>, usize, Vec<usize>)> {
    proptest::collection::vec(2usize..=10, 1..=max_dims).prop_flat_map(|radices| {
        let nodes: usize = radices.iter().product();
        (
            Just(radices),
            0..nodes,
            proptest::collection::vec(0..nodes, 1..40),
        )
            .prop_filter_map("needs a destination", |(r, p, mut d)| {
                d.retain(|&x| x != p);
                d.sort_unstable();
                d.dedup();
                (!d.is_empty()).then_some((r, p, d))
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every algorithm: every destination exactly once, nobody else, routes
    /// are walks, senders have received first, every leg is a shortest path.
    #[test]
    fn plans_deliver_exactly_once((radices, p, d) in case(3), td in 0.05f64..0.95) {
        let mesh = Mesh::new(&radices).unwrap();
        for algo in [MeshAlgorithm::Qg { td }, MeshAlgorithm::QG, MeshAlgorithm::DualPath, MeshAlgorithm::MultiPath, MeshAlgorithm::ColumnPath] {
            let pl = match plan(&mesh, algo, p, &d) {
                Ok(pl) => pl,
                Err(_) if mesh.dims() != 2 && matches!(algo, MeshAlgorithm::MultiPath | MeshAlgorithm::ColumnPath) => continue,
                Err(e) => panic!("{algo}: {e}"),
            };
            check_plan(&mesh, &pl).unwrap();
            for s in &pl.sends {
                let mut at = s.from;
                let mut prev_hop = 0;
                for (&dst, &h) in s.delivers.iter().zip(&s.delivery_hops) {
                    let leg = h - prev_hop;
                    // A forced first hop (MP) adds nothing: it is on a shortest path.
                    prop_assert_eq!(leg, mesh.dist(at, dst), "{} leg to {}", algo, dst);
                    at = dst;
                    prev_hop = h;
                }
            }
            prop_assert!(pl.link_visits() >= d.len());
            let m = evaluate(&pl, &MeshCost::paper(64.0));
            prop_assert!(m.arrivals.iter().all(|a| a.1.is_finite() && a.1 > 0.0));
            prop_assert!(m.cv >= 0.0 && m.network_latency >= m.mean_node_latency);
            match algo {
                MeshAlgorithm::DualPath => prop_assert!(pl.sends.len() <= 2 && pl.phases() == 1),
                MeshAlgorithm::MultiPath => {
                    prop_assert!(pl.sends.len() <= 4 && pl.phases() == 1);
                    let mut first: Vec<usize> = pl.sends.iter().map(|s| s.route[1]).collect();
                    first.sort_unstable();
                    first.dedup();
                    prop_assert_eq!(first.len(), pl.sends.len(), "MP first hops distinct");
                }
                MeshAlgorithm::ColumnPath => prop_assert_eq!(pl.phases(), pl.sends.len().div_ceil(4)),
                MeshAlgorithm::Qg { .. } => {
                    prop_assert!(pl.phases() <= 2);
                    prop_assert!(pl.sends.iter().filter(|s| s.phase == 1).count() <= 2);
                }
            }
        }
    }

    /// QG's groups are disjoint, cover D, each primary group yields at most
    /// 2^n pieces, and every representative is its group's nearest member.
    #[test]
    fn qg_groups_partition((radices, p, d) in case(3), td in 0.05f64..0.95) {
        let mesh = Mesh::new(&radices).unwrap();
        let g = grouping(&mesh, p, &d, td);
        check_groups(&g, &d).unwrap();
        let cap = 1usize << mesh.dims();
        prop_assert!(g.primary.len() <= cap);
        for i in 0..g.primary.len() {
            let pieces = g.groups.iter().filter(|x| x.primary == i).count();
            prop_assert!((1..=cap).contains(&pieces));
        }
        for grp in &g.groups {
            let best = grp.members.iter().map(|&m| mesh.dist(m, p)).min().unwrap();
            prop_assert_eq!(mesh.dist(grp.nearest, p), best);
            prop_assert_eq!(grp.weight, grp.int + grp.ext);
            prop_assert_eq!(grp.qualified, grp.qp <= td);
        }
        let w = g.primary.iter().map(|x| x.weight).sum::<usize>() as f64 / g.primary.len() as f64;
        prop_assert!((g.w_av - w).abs() < 1e-9);
    }

    /// R (the label-monotone routing function): every step is a link and
    /// moves the label strictly towards the target's; in 2-D (and 1-D) the
    /// route is a shortest path, as Lin, McKinley and Ni prove.
    #[test]
    fn label_routes_are_monotone_walks((radices, p, d) in case(3)) {
        let mesh = Mesh::new(&radices).unwrap();
        for &to in &d {
            let mut route = vec![p];
            mesh.label_route_into(p, to, &mut route);
            prop_assert_eq!(route.last(), Some(&to));
            let up = mesh.label(to) > mesh.label(p);
            for w in route.windows(2) {
                prop_assert!(mesh.adjacent(w[0], w[1]));
                prop_assert_eq!(mesh.label(w[1]) > mesh.label(w[0]), up);
            }
            if radices.len() <= 2 {
                prop_assert_eq!(route.len() - 1, mesh.dist(p, to));
            }
        }
    }
}
