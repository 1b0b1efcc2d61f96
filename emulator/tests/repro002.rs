//! `mcsim repro --paper 002 --quick` ([Al-Dubai 2009]): the contention-free
//! claims decided on the paper's latency model over the planners' worms,
//! the claims under load decided from worms in the simulator's switches,
//! the same verdicts from another seed, and a verdict that flips with the
//! mesh size.

use mcast_emulator::repro::paper002::Paper002;
use mcast_emulator::repro::{run_figures, Grid, Paper};

mod common;
use common::{expected, figures_written, quick_run, verdicts, word};

const EXPECTED: [(u32, &str); 12] = [
    (1, "holds"),
    (2, "holds"),
    (3, "holds"),
    (4, "holds"),
    (5, "holds"),
    (6, "differs"),
    (7, "differs"),
    (8, "differs"),
    (9, "differs"),
    (10, "differs"),
    (11, "differs"),
    (12, "not checkable"),
];

#[test]
fn quick_run_writes_every_figure_and_decides_every_claim() {
    let dir = std::env::temp_dir().join(format!("mcsim-repro002-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let got = quick_run("002", &dir, &[]);
    assert_eq!(got, expected(&EXPECTED));
    let mut figs: Vec<(&str, &str)> = [
        "fig10",
        "fig11",
        "fig12",
        "fig13",
        "fig14a",
        "fig14b",
        "cv-16",
        "cv-32",
        "td",
        "cv-load-16",
        "cv-load-32",
    ]
    .iter()
    .map(|f| (*f, "destinations k"))
    .collect();
    figures_written(&dir.join("002"), &figs, 10);
    figs.clear();
    for f in [
        "fig15a", "fig15b", "fig16a", "fig16b", "fig17", "fig18", "fig19", "fig20", "td-load",
    ] {
        figs.push((f, "offered load (message flits/cycle/node)"));
    }
    let acc: Vec<String> = figs.iter().map(|f| format!("{}-acc", f.0)).collect();
    for a in &acc {
        figs.push((a, "accepted throughput"));
    }
    figures_written(&dir.join("002"), &figs, 10);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_seed_gives_the_same_verdicts() {
    assert_eq!(verdicts(&Paper002 { seed: 31 }), EXPECTED.to_vec());
}

/// Claim 3 (QG overtakes DP and MP as destinations grow) rests on the
/// destinations spreading over a large mesh: with the large-mesh figures
/// replaced by the 16×16 ones at 10–50 destinations, QG never gets below
/// MP and the verdict flips.
#[test]
fn claim_3_flips_on_a_small_mesh() {
    let paper = Paper002::default();
    let figs = paper.figures(Grid::Quick);
    let results = run_figures(figs, 2, &|_, _| {}).unwrap();
    let mut small = results.clone();
    for (big, from) in [("fig12", "fig10"), ("fig13", "fig10")] {
        let mut f = small.figures[from].clone();
        f.meta.id = big.into();
        // The claim reads k = 10 and k = 100; give the small mesh's k = 50
        // as its largest.
        for s in &mut f.samples {
            if s.x == 50.0 {
                s.x = 100.0;
            }
        }
        small.figures.insert(big.into(), f);
    }
    let verdict = |r| {
        paper
            .claims(r)
            .into_iter()
            .find(|c| c.id == 3)
            .map(|c| word(&c.verdict))
    };
    assert_eq!(verdict(&results), Some("holds"));
    assert_eq!(verdict(&small), Some("differs"));
}
