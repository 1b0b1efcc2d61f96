//! `mcsim repro`: regenerate a paper's evaluation ([`mcast_emulator::repro`]).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use clap::Args;
use mcast_emulator::repro::run::{reproduce, Options};
use mcast_emulator::repro::{Grid, Verdict};

use crate::fail;

#[derive(Debug, Args)]
pub(crate) struct ReproArgs {
    /// The paper: 000 (irregular networks), 001 (MIN multicast), 002 (qualified
    /// groups), 003 (SCI torus), 004 (Robinson's thesis), or all.
    #[arg(long, default_value = "all", value_name = "000|001|002|003|004|all")]
    pub(crate) paper: String,
    /// The reduced grid: decides every qualitative verdict in minutes.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Worker threads (default: the machine's cores).
    #[arg(long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Output folder: DIR/<paper>/ gets a CSV and an SVG per figure,
    /// claims.md and verdicts.csv.
    #[arg(long, default_value = "repro-out", value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Also write the markdown report (REPRODUCTION.md), linking the figures.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// Base seed of the random topologies and destination sets.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
}

pub(crate) fn run_repro(a: &ReproArgs) -> ExitCode {
    use std::io::IsTerminal;
    let jobs = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    if jobs == 0 {
        return fail("error: --jobs must be at least 1", 2);
    }
    let opts = Options {
        paper: a.paper.clone(),
        grid: if a.quick { Grid::Quick } else { Grid::Full },
        jobs,
        out: a.out.clone(),
        report: a.report.clone(),
        seed: a.seed,
    };
    let on = std::io::stderr().is_terminal();
    let bar: Mutex<Option<(String, indicatif::ProgressBar)>> = Mutex::new(None);
    let progress = |paper: &str, done: u64, total: u64| {
        if !on {
            return;
        }
        let Ok(mut g) = bar.lock() else { return };
        if g.as_ref().is_none_or(|(p, _)| p != paper) {
            if let Some((_, b)) = g.take() {
                b.finish_and_clear();
            }
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "paper {paper} {{bar:40}} {{pos}}/{{len}} points, ETA {{eta}}"
                ))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            *g = Some((paper.to_string(), b));
        }
        if let Some((_, b)) = g.as_ref() {
            b.set_position(done);
        }
    };
    let result = reproduce(&opts, &progress);
    if let Ok(mut g) = bar.lock() {
        if let Some((_, b)) = g.take() {
            b.finish_and_clear();
        }
    }
    match result {
        Err(e) if e.starts_with("no reproduction") => fail(&format!("error: {e}"), 2),
        Err(e) => fail(&format!("error: {e}"), 1),
        Ok(outcomes) => {
            use std::fmt::Write as _;
            let mut text = String::new();
            for o in &outcomes {
                let _ = writeln!(
                    text,
                    "paper {}: {} runs in {:.1} s -> {}",
                    o.number,
                    o.runs,
                    o.seconds,
                    opts.out.join(&o.number).display()
                );
                for c in &o.claims {
                    let v = match &c.verdict {
                        Verdict::NotCheckable(_) => "not checkable".to_string(),
                        v => v.to_string(),
                    };
                    let _ = writeln!(text, "  claim {:>2}: {v:<13} {}", c.id, c.ours);
                }
            }
            // A closed pipe (`| head`) is not an error.
            let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
            ExitCode::SUCCESS
        }
    }
}
