//! A quick version of `examples/qg_table.rs` (30 random multicasts per k on a
//! 16×16 mesh) checking the paper's qualitative claims that hold in its
//! contention-free setting [Al-Dubai 2009, §4.2]: QG has the lowest additional
//! traffic (C5); DP and MP beat QG and CP in latency with few destinations
//! (C2); CP is slowest (C4); QG's jitter is the lowest with many
//! destinations (C6, at k = 64) and falls with k while the baselines' rises.

use mcast_algorithms::mesh::compare::{compare, Row};
use mcast_algorithms::mesh::{Mesh, MeshAlgorithm, MeshCost};

fn rows(k: usize, seed: u64) -> Vec<Row> {
    let mesh = Mesh::new(&[16, 16]).unwrap();
    compare(
        &mesh,
        &MeshAlgorithm::ALL,
        k,
        30,
        seed,
        &MeshCost::paper(64.0),
    )
    .unwrap()
}

fn get<'a>(r: &'a [Row], alg: &str) -> &'a Row {
    r.iter().find(|x| x.algorithm == alg).unwrap()
}

#[test]
fn qualitative_claims() {
    let small = rows(16, 100);
    let big = rows(64, 102);
    for r in [&small, &big] {
        let qg = get(r, "QG");
        for alg in ["DP", "MP", "CP"] {
            assert!(
                qg.additional_traffic < get(r, alg).additional_traffic,
                "C5 vs {alg}"
            );
            assert!(
                get(r, "CP").network_latency > get(r, alg).network_latency.min(qg.network_latency)
            );
        }
        assert!(qg.phases == 2.0 && get(r, "DP").phases == 1.0 && get(r, "MP").phases == 1.0);
    }
    let qg = get(&small, "QG");
    assert!(get(&small, "DP").network_latency < qg.network_latency);
    assert!(get(&small, "MP").network_latency < qg.network_latency);
    for alg in ["DP", "MP", "CP"] {
        assert!(
            get(&big, "QG").cv < get(&big, alg).cv,
            "C6 vs {alg} at k = 64"
        );
        assert!(
            get(&big, alg).cv > get(&small, alg).cv,
            "{alg}'s CV rises with k"
        );
    }
    assert!(get(&big, "QG").cv < get(&small, "QG").cv);
}
