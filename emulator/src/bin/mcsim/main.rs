//! `mcsim`: the mcast simulator's command line.
//!
//! * `mcsim plan` prints one multicast plan as JSON (see
//!   [`mcast_emulator::plan`] for the format and the node notation;
//!   [`mcast_emulator::plan::path`] for the path-based worm planners;
//!   [`mcast_emulator::plan::mesh`] for the mesh schemes and the MIN).
//! * `mcsim model <kind>` evaluates a paper's analytic model and prints JSON:
//!   `mcsim model sci` ([`mcast_emulator::model_sci`]), `mcsim model min`
//!   ([`mcast_algorithms::min::model`]).
//!
//! * `mcsim run` simulates one multicast in the discrete-event simulator
//!   ([`mcast_emulator::sim::run`]); `mcsim load` runs load points and sweeps
//!   ([`mcast_emulator::sim::load`]).
//! * `mcsim repro` reruns a paper's evaluation and decides its claims
//!   ([`mcast_emulator::repro`]).
//!
//! Exit status: 0 on success; 2 for a bad command line or request (one line
//! on stderr); 1 when an oracle rejects a plan or a simulation (a bug, one
//! line on stderr); 3 when the simulator's watchdog reports deadlock.

mod chart;
mod cli;
mod model;
mod plan;
mod progress;
mod repro;
mod sim;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ModelKind};

/// Print `msg` as one line on stderr.
pub(crate) fn fail(msg: &str, code: u8) -> ExitCode {
    let line = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!("mcsim: {line}");
    ExitCode::from(code)
}

/// A clap error as one line: its message without the usage and hint lines.
pub(crate) fn clap_one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let kept: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with("Usage:")
                && !l.starts_with("For more information")
                && !l.starts_with("tip:")
        })
        .collect();
    kept.join(" ")
}

/// Print `value` as JSON on stdout.
pub(crate) fn print_json<T: serde::Serialize>(value: &T, compact: bool) -> ExitCode {
    let json = if compact {
        serde_json::to_string(value)
    } else {
        serde_json::to_string_pretty(value)
    };
    let json = match json {
        Ok(j) => j,
        Err(e) => return fail(&format!("error: cannot serialise the output: {e}"), 1),
    };
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{json}").and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&format!("error: cannot write the output: {e}"), 1),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            return if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                // Bare `mcsim`: the help, on stderr, as a usage error.
                let _ = e.print();
                ExitCode::from(2)
            } else if e.use_stderr() {
                fail(&clap_one_line(&e), 2)
            } else {
                // --help, --version: clap's own text on stdout.
                let _ = e.print();
                ExitCode::SUCCESS
            };
        }
    };
    match &cli.command {
        Command::Plan(args) => plan::run_plan(args),
        Command::Model(m) => match &m.kind {
            ModelKind::Sci(args) => model::run_sci(args),
            ModelKind::Min(args) => model::run_min_model(args),
        },
        Command::Run(args) => sim::run_run(args),
        Command::Load(args) => sim::run_load(args),
        Command::Repro(args) => repro::run_repro(args),
        Command::Plot(args) => chart::run_plot(args),
    }
}
