//! [Robinson 1994, §3.5.1, Figs 3.10–3.11, derived]: mean (over 100 random destination sets, source
//! 0) of the maximum step, all-port, on the 6-cube and the 10-cube. The
//! planners' values are printed (`cargo test --test topo_table_9_1 --
//! --nocapture`) and checked against the computed reference means within
//! sampling tolerance.

use mcast_algorithms::topo::Resolution;
use mcast_algorithms::trees::{plan, Options, PortModel, TreeAlgorithm};
use mcast_algorithms::Topology;

/// A deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// `m` distinct nodes of `1..nodes` (partial Fisher–Yates).
    fn set(&mut self, nodes: usize, m: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (1..nodes).collect();
        for i in 0..m {
            let j = i + (self.next() % (v.len() - i) as u64) as usize;
            v.swap(i, j);
        }
        v.truncate(m);
        v
    }
}

/// (n, m, U-cube, Maxport, Combine A, Combine B, W-sort), computed reference means.
#[allow(clippy::approx_constant)] // 3.14 is a mean step count, not π
const REFERENCE: [(usize, usize, f64, f64, f64, f64, f64); 10] = [
    (6, 8, 4.0, 3.14, 3.00, 3.00, 2.53),
    (6, 16, 5.0, 4.08, 3.94, 3.94, 3.16),
    (6, 32, 6.0, 5.10, 4.87, 4.88, 4.04),
    (6, 48, 6.0, 5.51, 5.49, 5.62, 4.83),
    (6, 63, 6.0, 6.0, 6.0, 6.0, 6.0),
    (10, 16, 5.0, 4.10, 3.83, 3.84, 3.12),
    (10, 64, 7.0, 6.27, 5.86, 5.94, 4.93),
    (10, 256, 9.0, 8.34, 7.87, 7.97, 6.63),
    (10, 512, 10.0, 9.14, 8.87, 8.97, 7.78),
    (10, 1023, 10.0, 10.0, 10.0, 10.0, 10.0),
];

const TRIALS: usize = 100;

#[test]
fn table_9_1_mean_max_steps() {
    let mut rng = Rng(0x5EED_0004_0009_0001);
    println!("n   m     U-cube(A)  U-cube(B)  Maxport  Combine(A) [B]   W-sort   | reference: U-cube Maxport Combine [B] W-sort");
    for &(n, m, ru, rmax, rca, rcb, rw) in &REFERENCE {
        let t = Topology::hypercube(n, Resolution::HighToLow).unwrap();
        let runs = [
            (TreeAlgorithm::UCube, PortModel::AllPortA),
            (TreeAlgorithm::UCube, PortModel::AllPortB),
            (TreeAlgorithm::Maxport, PortModel::AllPortA),
            (TreeAlgorithm::Combine, PortModel::AllPortA),
            (TreeAlgorithm::Combine, PortModel::AllPortB),
            (TreeAlgorithm::WSort, PortModel::AllPortA),
        ];
        let mut sums = [0usize; 6];
        for _ in 0..TRIALS {
            let dests = rng.set(t.nodes(), m);
            for (i, &(algo, model)) in runs.iter().enumerate() {
                let p = plan(&t, algo, 0, &dests, Options::with_port_model(model)).unwrap();
                sums[i] += p.steps();
            }
            // Maxport and W-sort never reuse a channel: A and B agree.
            for algo in [TreeAlgorithm::Maxport, TreeAlgorithm::WSort] {
                let a = plan(
                    &t,
                    algo,
                    0,
                    &dests,
                    Options::with_port_model(PortModel::AllPortA),
                )
                .unwrap();
                let b = plan(
                    &t,
                    algo,
                    0,
                    &dests,
                    Options::with_port_model(PortModel::AllPortB),
                )
                .unwrap();
                assert_eq!(a.steps(), b.steps());
            }
        }
        let mean: Vec<f64> = sums.iter().map(|&s| s as f64 / TRIALS as f64).collect();
        println!(
            "{n:<3} {m:<5} {:<10.2} {:<10.2} {:<8.2} {:<6.2} [{:.2}]    {:<8.2} | {ru:.2} {rmax:.2} {rca:.2} [{rcb:.2}] {rw:.2}",
            mean[0], mean[1], mean[2], mean[3], mean[4], mean[5]
        );
        let tol = 0.25;
        for (got, want, what) in [
            (mean[0], ru, "U-cube"),
            (mean[2], rmax, "Maxport"),
            (mean[3], rca, "Combine A"),
            (mean[4], rcb, "Combine B"),
            (mean[5], rw, "W-sort"),
        ] {
            assert!(
                (got - want).abs() <= tol,
                "n={n} m={m} {what}: {got} vs table {want}"
            );
        }
    }
}
