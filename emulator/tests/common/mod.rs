//! What the `mcsim` tests share: running the binary, and for `mcsim repro`
//! the verdict words, a quick run and the verdicts of a paper's quick grid
//! from the library.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use mcast_emulator::repro::{run_figures, Grid, Paper, Verdict};

/// Run `mcsim ARGS`: (exit status, stdout, stderr).
pub fn mcsim(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcsim"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run mcsim");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A verdict as `verdicts.csv` writes it.
pub fn word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
        Verdict::Differs => "differs",
        Verdict::NotCheckable(_) => "not checkable",
    }
}

/// Run `mcsim repro --paper PAPER --quick --jobs 2 --out DIR [extra]` and
/// read back the verdicts it wrote (`DIR/PAPER/verdicts.csv`) by claim.
pub fn quick_run(
    paper: &str,
    dir: &std::path::Path,
    extra: &[&std::ffi::OsStr],
) -> BTreeMap<u32, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_mcsim"))
        .args(["repro", "--paper", paper, "--quick", "--jobs", "2", "--out"])
        .arg(dir)
        .args(extra)
        .output()
        .expect("mcsim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts = std::fs::read_to_string(dir.join(paper).join("verdicts.csv")).unwrap();
    verdicts
        .lines()
        .skip(1)
        .map(|l| {
            let (id, v) = l.split_once(',').unwrap();
            (id.parse().unwrap(), v.to_string())
        })
        .collect()
}

/// The expected verdicts as `quick_run` returns them.
pub fn expected(e: &[(u32, &str)]) -> BTreeMap<u32, String> {
    e.iter().map(|&(i, v)| (i, v.into())).collect()
}

/// The verdicts of `paper`'s quick grid, run in this process.
pub fn verdicts(paper: &dyn Paper) -> Vec<(u32, &'static str)> {
    let results = run_figures(paper.figures(Grid::Quick), 2, &|_, _| {}).unwrap();
    paper
        .claims(&results)
        .iter()
        .map(|c| (c.id, word(&c.verdict)))
        .collect()
}

/// Every `fig` of `dir` has an SVG containing `unit` and a CSV of more than
/// `rows` lines.
pub fn figures_written(dir: &std::path::Path, figs: &[(&str, &str)], rows: usize) {
    for (fig, unit) in figs {
        let svg = std::fs::read_to_string(dir.join(format!("{fig}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains(unit), "{fig}");
        let csv = std::fs::read_to_string(dir.join(format!("{fig}.csv"))).unwrap();
        assert!(
            csv.starts_with("series,x,draw,value\n") && csv.lines().count() > rows,
            "{fig}"
        );
    }
}
