//! Mean worms and phases per scheme on the paper's default network (32 nodes,
//! eight 8-port switches, 80% connectivity), seeds 0..10, at 4, 8, 16 and 31
//! destinations.
//!
//! Draws: for every (seed, d) we draw `SAMPLES` multicasts from a splitmix64
//! stream seeded with `seed * 1000 + d`: the source uniform over the 32 nodes,
//! then `d` destinations uniform without replacement from the other 31 (a
//! partial Fisher–Yates). For d = 31 only the source varies. Means are over
//! 10 seeds × `SAMPLES` draws. Run with `--nocapture` to see the table.

use mcast_algorithms::check_delivery;
use mcast_algorithms::irregular::{IrregularSpec, Scheme, SplitMix64, SwitchNetwork};

const SAMPLES: usize = 10;
const DESTS: [usize; 4] = [4, 8, 16, 31];

#[test]
fn default_network_table() {
    let fabrics: Vec<SwitchNetwork> = (0..10)
        .map(|seed| {
            let spec: IrregularSpec =
                format!("irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed={seed}")
                    .parse()
                    .unwrap();
            SwitchNetwork::from_spec(&spec).unwrap()
        })
        .collect();
    let mut table = String::from(
        "| scheme | d=4 worms | d=4 phases | d=8 worms | d=8 phases | d=16 worms | d=16 phases | d=31 worms | d=31 phases |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut means = Vec::new();
    for scheme in Scheme::ALL {
        table.push_str(&format!("| {scheme} |"));
        let mut row = Vec::new();
        for d in DESTS {
            let (mut worms, mut phases, mut count) = (0usize, 0usize, 0usize);
            for (seed, f) in fabrics.iter().enumerate() {
                let mut rng = SplitMix64::new(seed as u64 * 1000 + d as u64);
                for _ in 0..SAMPLES {
                    let src = rng.below(32);
                    let others: Vec<usize> = (0..32).filter(|&x| x != src).collect();
                    let dests = rng.sample(&others, d);
                    let plan = f.plan(scheme, src, &dests).unwrap();
                    check_delivery(&plan.to_plan().unwrap(), src, &dests).unwrap();
                    for r in plan.routes() {
                        f.check_route(r).unwrap();
                    }
                    worms += plan.worm_count();
                    phases += plan.phases;
                    count += 1;
                }
            }
            let (w, p) = (worms as f64 / count as f64, phases as f64 / count as f64);
            table.push_str(&format!(" {w:.2} | {p:.2} |"));
            row.push((w, p));
        }
        table.push('\n');
        means.push((scheme, row));
    }
    println!("{table}");
    let get = |s: Scheme| &means.iter().find(|m| m.0 == s).unwrap().1;
    for i in 0..DESTS.len() {
        assert!(get(Scheme::PathGreedy)[i].0 <= get(Scheme::SsrGreedy)[i].0);
        assert!(get(Scheme::PathGreedy)[i].1 <= get(Scheme::PathLessGreedy)[i].1);
        assert!(get(Scheme::SsrGreedy)[i].1 <= get(Scheme::SsrLessGreedy)[i].1);
        assert_eq!(get(Scheme::TreeWorm)[i], (1.0, 1.0));
    }
}
