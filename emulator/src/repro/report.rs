//! What `mcsim repro` writes: per figure the CSV of every sample and the SVG
//! plot; per paper `claims.md`; and the `REPRODUCTION.md` report.

use std::fmt::Write as _;
use std::path::Path;

use super::plot::{Chart, Line};
use super::{Claim, FigureResult, Paper, Results, Verdict};

/// The CSV of every sample of a figure: `series,x,draw,value`.
pub fn figure_csv(fig: &FigureResult) -> String {
    let mut s = String::from("series,x,draw,value\n");
    for p in &fig.samples {
        let _ = writeln!(s, "\"{}\",{},{},{}", p.series, p.x, p.draw, p.value);
    }
    s
}

/// A figure as a chart: per series, the mean and its 95% interval per x.
pub fn figure_chart(fig: &FigureResult) -> Chart {
    let lines = fig
        .series()
        .into_iter()
        .map(|name| {
            let points = fig
                .xs(&name)
                .into_iter()
                .filter_map(|x| fig.stat(&name, x).map(|s| (x, s.mean, s.ci95)))
                .collect();
            Line { name, points }
        })
        .collect();
    Chart {
        title: fig.meta.title.clone(),
        x_label: fig.meta.x_label.clone(),
        y_label: fig.meta.y_label.clone(),
        lines,
        log: super::plot::LogAxes::default(),
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The markdown table of claims.
pub fn claims_table(claims: &[Claim]) -> String {
    let mut s = String::from("| # | the paper | ours | verdict | why |\n|---|---|---|---|---|\n");
    for c in claims {
        let _ = writeln!(
            s,
            "| {} | {} {} | {} | **{}** | {} |",
            c.id,
            cell(&c.statement),
            cell(&c.source),
            cell(&c.ours),
            cell(&c.verdict.to_string()),
            cell(&c.why)
        );
    }
    s
}

/// How many claims hold, differ, and cannot be checked.
pub fn tally(claims: &[Claim]) -> (usize, usize, usize) {
    let mut t = (0, 0, 0);
    for c in claims {
        match c.verdict {
            Verdict::Holds => t.0 += 1,
            Verdict::Differs => t.1 += 1,
            Verdict::NotCheckable(_) => t.2 += 1,
        }
    }
    t
}

/// Write every figure's CSV and SVG into `dir`.
///
/// # Errors
/// An I/O or plotting error, as text.
pub fn write_figures(dir: &Path, results: &Results) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (id, fig) in &results.figures {
        let csv = dir.join(format!("{id}.csv"));
        std::fs::write(&csv, figure_csv(fig)).map_err(|e| format!("{}: {e}", csv.display()))?;
        let svg = dir.join(format!("{id}.svg"));
        let doc = figure_chart(fig).svg(720, 450)?;
        std::fs::write(&svg, doc).map_err(|e| format!("{}: {e}", svg.display()))?;
    }
    Ok(())
}

/// One paper's section of the report. `fig_dir` is the figures' folder as
/// the report links it.
pub fn paper_section(
    paper: &dyn Paper,
    results: &Results,
    claims: &[Claim],
    command: &str,
    seconds: f64,
    fig_dir: &str,
) -> String {
    let (h, d, n) = tally(claims);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## {} — [{}] {}\n",
        paper.number(),
        paper.key(),
        paper.title()
    );
    let _ = writeln!(
        s,
        "Command: `{command}` ({seconds:.0} s of wall clock). Claims: {h} hold, {d} differ, \
         {n} not checkable.\n"
    );
    s.push_str(&claims_table(claims));
    s.push('\n');
    let differ: Vec<&Claim> = claims
        .iter()
        .filter(|c| c.verdict == Verdict::Differs)
        .collect();
    if !differ.is_empty() {
        s.push_str("### Where we differ, and why\n\n");
        for c in differ {
            let _ = writeln!(s, "* **Claim {}.** {}", c.id, c.why);
        }
        s.push('\n');
    }
    s.push_str("### Figures\n\n");
    for (id, fig) in &results.figures {
        let _ = writeln!(
            s,
            "* {} — [{id}.svg]({fig_dir}/{id}.svg), [{id}.csv]({fig_dir}/{id}.csv)",
            fig.meta.title
        );
    }
    s.push_str("\n### Setup and readings\n\n");
    for line in paper.notes() {
        let _ = writeln!(s, "{line}");
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repro::{FigureMeta, Sample};

    #[test]
    fn csv_table_and_chart() {
        let fig = FigureResult {
            meta: FigureMeta {
                id: "f".into(),
                title: "T".into(),
                x_label: "x".into(),
                y_label: "y".into(),
            },
            samples: vec![
                Sample {
                    series: "a".into(),
                    x: 1.0,
                    draw: 0,
                    value: 2.0,
                },
                Sample {
                    series: "a".into(),
                    x: 1.0,
                    draw: 1,
                    value: 4.0,
                },
            ],
        };
        assert_eq!(
            figure_csv(&fig),
            "series,x,draw,value\n\"a\",1,0,2\n\"a\",1,1,4\n"
        );
        let c = figure_chart(&fig);
        assert_eq!(c.lines.len(), 1);
        assert_eq!(c.lines[0].points[0].1, 3.0);
        let claims = vec![Claim {
            id: 3,
            statement: "a | b".into(),
            source: "[X 1, §1]".into(),
            ours: "c".into(),
            verdict: Verdict::NotCheckable("load".into()),
            why: "w".into(),
            figures: vec![],
        }];
        let t = claims_table(&claims);
        assert!(t.contains("| 3 | a \\| b [X 1, §1] | c | **not checkable (needs load)** | w |"));
        assert_eq!(tally(&claims), (0, 0, 1));
    }
}
