//! `mcsim repro --paper 004 --quick` ([Robinson 1994]): every figure written,
//! every verdict as recorded in REPRODUCTION.md, the same verdicts from
//! another seed, and a verdict that flips with the startup costs it rests
//! on.

use mcast_emulator::repro::paper004::experiments::{torus_figure, Sizes, LENGTHS};
use mcast_emulator::repro::paper004::{claims, Paper004};
use mcast_emulator::repro::{run_figures, Grid, Verdict};

mod common;
use common::{expected, figures_written, quick_run, verdicts};

/// The verdicts of the thesis's ten claims on mcast's simulator.
const EXPECTED: [(u32, &str); 10] = [
    (1, "holds"),
    (2, "holds"),
    (3, "holds"),
    (4, "holds"),
    (5, "holds"),
    (6, "holds"),
    (7, "holds"),
    (8, "holds"),
    (9, "holds"),
    (10, "holds"),
];

#[test]
fn quick_run_writes_every_figure_and_decides_every_claim() {
    let dir = std::env::temp_dir().join(format!("mcsim-repro004-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let got = quick_run("004", &dir, &[]);
    assert_eq!(got, expected(&EXPECTED));
    let figs = [
        ("fig3.10", "steps"),
        ("fig3.11", "steps"),
        ("fig3.12", "µs"),
        ("fig3.15", "µs"),
        ("fig6.3-8", "µs"),
        ("fig6.6-16384", "µs"),
        ("fig6.7", "flits"),
        ("fig6.8-2d", "link visits"),
    ];
    figures_written(&dir.join("004"), &figs, 20);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_seed_gives_the_same_verdicts() {
    assert_eq!(verdicts(&Paper004 { seed: 99 }), EXPECTED.to_vec());
}

/// Claim 7 (low startup: unicast-based ≈ M_u(8) for 8-flit messages) rests
/// on cheap startups: run its experiment with the high-startup costs and
/// the unicast-based tree's extra phases cost 95 + 75 µs each, so it
/// differs.
#[test]
fn claim_7_flips_with_the_startup_costs() {
    let s = Sizes::of(Grid::Quick);
    let verdict = |startup: &'static str| {
        let figs: Vec<_> = LENGTHS
            .iter()
            .map(|&l| {
                let mut f = torus_figure(2, startup, l, &s, 0);
                f.meta.id = format!("fig6.4-{l}");
                f
            })
            .collect();
        let r = run_figures(figs, 2, &|_, _| {}).unwrap();
        claims::c6_7(&r)[1].verdict.clone()
    };
    assert_eq!(verdict("low-startup"), Verdict::Holds);
    assert_eq!(verdict("high-startup"), Verdict::Differs);
}
