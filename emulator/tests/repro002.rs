//! `mcsim repro --paper 002 --quick` ([Al-Dubai 2009]): the contention-free
//! claims decided on the paper's latency model over the planners' worms,
//! the same verdicts from another seed, a verdict that flips with the
//! message length, and the claims under load listed as not checkable.

use std::collections::BTreeMap;
use std::process::Command;

use mcast_emulator::repro::paper002::Paper002;
use mcast_emulator::repro::{run_figures, Grid, Paper, Verdict};

const EXPECTED: [(u32, &str); 12] = [
    (1, "holds"),
    (2, "holds"),
    (3, "holds"),
    (4, "holds"),
    (5, "holds"),
    (6, "not checkable"),
    (7, "not checkable"),
    (8, "not checkable"),
    (9, "not checkable"),
    (10, "not checkable"),
    (11, "not checkable"),
    (12, "not checkable"),
];

fn word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
        Verdict::Differs => "differs",
        Verdict::NotCheckable(_) => "not checkable",
    }
}

#[test]
fn quick_run_writes_every_figure_and_decides_every_claim() {
    let dir = std::env::temp_dir().join(format!("mcsim-repro002-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_mcsim"))
        .args(["repro", "--paper", "002", "--quick", "--jobs", "2", "--out"])
        .arg(&dir)
        .output()
        .expect("mcsim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = dir.join("002");
    let verdicts = std::fs::read_to_string(p.join("verdicts.csv")).unwrap();
    let got: BTreeMap<u32, String> = verdicts
        .lines()
        .skip(1)
        .map(|l| {
            let (id, v) = l.split_once(',').unwrap();
            (id.parse().unwrap(), v.to_string())
        })
        .collect();
    let want: BTreeMap<u32, String> = EXPECTED.iter().map(|&(i, v)| (i, v.into())).collect();
    assert_eq!(got, want);
    for fig in [
        "fig10", "fig11", "fig12", "fig13", "fig14a", "fig14b", "cv-16", "cv-32", "td",
    ] {
        let svg = std::fs::read_to_string(p.join(format!("{fig}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("destinations k"),
            "{fig}"
        );
        let csv = std::fs::read_to_string(p.join(format!("{fig}.csv"))).unwrap();
        assert!(csv.starts_with("series,x,draw,value\n") && csv.lines().count() > 100);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_seed_gives_the_same_verdicts() {
    let paper = Paper002 { seed: 31 };
    let results = run_figures(paper.figures(Grid::Quick), 2, &|_, _| {}).unwrap();
    let got: Vec<(u32, &str)> = paper
        .claims(&results)
        .iter()
        .map(|c| (c.id, word(&c.verdict)))
        .collect();
    assert_eq!(got, EXPECTED.to_vec());
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
