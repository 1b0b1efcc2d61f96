//! `mcsim plot`: draw a CSV of points as an SVG line chart with the one
//! plotting module ([`mcast_emulator::repro::plot`]), for the benchmark
//! harnesses (`bench/compare-mpi/run.py`) as for `mcsim repro`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use mcast_emulator::repro::plot::{Chart, Line, LogAxes};

use crate::fail;

#[derive(Debug, Args)]
pub(crate) struct PlotArgs {
    /// The points: a CSV with the header `series,x,y` or `series,x,y,ci`
    /// (ci: half-width of an error bar); lines in legend order of first
    /// appearance, points in file order.
    #[arg(long, value_name = "FILE")]
    pub(crate) csv: PathBuf,
    /// Where to write the SVG.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: PathBuf,
    /// The caption.
    #[arg(long, default_value = "")]
    pub(crate) title: String,
    /// The x axis, with its unit.
    #[arg(long, default_value = "x")]
    pub(crate) x_label: String,
    /// The y axis, with its unit.
    #[arg(long, default_value = "y")]
    pub(crate) y_label: String,
    /// x on a base-2 log scale (message sizes).
    #[arg(long)]
    pub(crate) log_x: bool,
    /// y on a base-10 log scale.
    #[arg(long)]
    pub(crate) log_y: bool,
    /// Width in pixels.
    #[arg(long, default_value_t = 900)]
    pub(crate) width: u32,
    /// Height in pixels.
    #[arg(long, default_value_t = 520)]
    pub(crate) height: u32,
}

/// The lines of a `series,x,y[,ci]` CSV.
fn parse(text: &str) -> Result<Vec<Line>, String> {
    let mut rows = text.lines().enumerate();
    let header = rows.next().map(|(_, h)| h.trim()).unwrap_or_default();
    let with_ci = match header {
        "series,x,y" => false,
        "series,x,y,ci" => true,
        h => {
            return Err(format!(
                "line 1: header `{h}` (expected series,x,y or series,x,y,ci)"
            ))
        }
    };
    let mut lines: Vec<Line> = Vec::new();
    for (i, row) in rows {
        if row.trim().is_empty() {
            continue;
        }
        // The series name may hold commas: the numbers are the last fields.
        let fields: Vec<&str> = row.rsplitn(if with_ci { 4 } else { 3 }, ',').collect();
        let want = if with_ci { 4 } else { 3 };
        if fields.len() != want {
            return Err(format!(
                "line {}: `{row}` has {} fields, not {want}",
                i + 1,
                fields.len()
            ));
        }
        let num = |s: &str, what: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("line {}: {what} `{s}` is not a finite number", i + 1))
        };
        let (ci, y, x) = if with_ci {
            (
                num(fields[0], "ci")?,
                num(fields[1], "y")?,
                num(fields[2], "x")?,
            )
        } else {
            (0.0, num(fields[0], "y")?, num(fields[1], "x")?)
        };
        let name = fields[want - 1].trim();
        match lines.iter_mut().find(|l| l.name == name) {
            Some(l) => l.points.push((x, y, ci)),
            None => lines.push(Line {
                name: name.to_string(),
                points: vec![(x, y, ci)],
            }),
        }
    }
    Ok(lines)
}

pub(crate) fn run_plot(a: &PlotArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&a.csv) {
        Ok(t) => t,
        Err(e) => return fail(&format!("error: cannot read {}: {e}", a.csv.display()), 2),
    };
    let lines = match parse(&text) {
        Ok(l) => l,
        Err(e) => return fail(&format!("error: {}: {e}", a.csv.display()), 2),
    };
    let chart = Chart {
        title: a.title.clone(),
        x_label: a.x_label.clone(),
        y_label: a.y_label.clone(),
        lines,
        log: LogAxes {
            x: a.log_x,
            y: a.log_y,
        },
    };
    let svg = match chart.svg(a.width, a.height) {
        Ok(s) => s,
        Err(e) => return fail(&format!("error: {e}"), 2),
    };
    match std::fs::write(&a.out, svg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("error: cannot write {}: {e}", a.out.display()), 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_series_with_commas_and_refuses_bad_rows() {
        let l =
            parse("series,x,y\nmcast, 4 ranks,8,12.5\nmcast, 4 ranks,16,13\nompi,8,9\n").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].name, "mcast, 4 ranks");
        assert_eq!(l[0].points, vec![(8.0, 12.5, 0.0), (16.0, 13.0, 0.0)]);
        let c = parse("series,x,y,ci\na,1,2,0.5\n").unwrap();
        assert_eq!(c[0].points, vec![(1.0, 2.0, 0.5)]);
        assert!(parse("a,b\n").unwrap_err().contains("header"));
        assert!(parse("series,x,y\na,1,nan\n")
            .unwrap_err()
            .contains("line 2"));
        assert!(parse("series,x,y\na,1\n").unwrap_err().contains("fields"));
    }
}
