//! The smart-NI engine, run in unit-step time, must agree with the pure
//! unit-step model of `mcast-algorithms` on every tree: same arrival step for
//! every packet at every position, under FPFS and FCFS.

use mcast::Forwarding;
use mcast_algorithms::unitstep::simulate as model;
use mcast_algorithms::{ChainTree, Shape};
use mcast_emulator::lockstep::{simulate, Post};
use proptest::prelude::*;

fn check(n: usize, shape: Shape, m: usize, fcfs: bool) {
    // One forwarding type for the engine and the model.
    let fw = if fcfs {
        Forwarding::Fcfs
    } else {
        Forwarding::Fpfs
    };
    let tree = ChainTree::new(shape, n).unwrap();
    let want = model(&tree, m, fw);
    let got = simulate(n, &Post::Bcast { root: 0 }, shape, fw, m).unwrap();
    for pos in 1..n {
        let w: Vec<u64> = want.arrivals(pos).iter().map(|&s| s as u64).collect();
        assert_eq!(
            got.arrivals[pos], w,
            "n={n} {shape:?} m={m} fcfs={fcfs} pos={pos}"
        );
    }
    assert_eq!(got.completion, want.completion() as u64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn engine_matches_model(n in 2usize..70, k in 1usize..7, m in 1usize..7, fcfs: bool, flat: bool) {
        let shape = if flat { Shape::Flat } else { Shape::KBinomial { k } };
        check(n, shape, m, fcfs);
    }
}
