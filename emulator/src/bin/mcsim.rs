//! `mcsim`: the mcast simulator's command line.
//!
//! * `mcsim plan` prints one multicast plan as JSON (see
//!   [`mcast_emulator::plan_json`] for the format and the node notation).
//!
//! Later subcommands (`mcsim run`, `mcsim repro`) go into [`Command`].
//!
//! Exit status: 0 on success; 2 for a bad command line or request (one line
//! on stderr); 1 when an oracle rejects a plan (a planner bug, one line on
//! stderr).

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use mcast_emulator::plan_json::{
    self, McsimError, PlanRequest, PortChoice, ALGORITHMS_HELP, FABRICS_HELP, NODES_HELP,
};

/// `mcsim`: plan and simulate mcast multicasts on logical fabrics.
#[derive(Debug, Parser)]
#[command(
    name = "mcsim",
    version,
    about = "Plan and simulate mcast multicasts on logical fabrics",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print one multicast plan as JSON, checked by the delivery oracle.
    #[command(
        long_about = "Print one multicast plan as JSON.\n\n\
            The plan is checked before it is printed: every destination receives exactly \
            once and nobody else receives, the steps are re-derived, and on irregular \
            fabrics every route passes the up*/down* legality oracle. Output fields: \
            algorithm, fabric, port_model, packets, k (k-binomial only), source, \
            destinations, steps, sends [{step, from, to, covers, and for worms worm, \
            route, branches, delivers}] and contention {stepwise, depth, link_type1, \
            link_type2}.",
        after_help = plan_after_help()
    )]
    Plan(PlanArgs),
}

fn plan_after_help() -> String {
    format!(
        "Fabrics:\n{FABRICS_HELP}\n\nAlgorithms:\n{ALGORITHMS_HELP}\n\nNodes:\n{NODES_HELP}\n\n\
         Example (digest 004 §7.5):\n  mcsim plan --fabric torus:5x5:uni --algo utorus \
         --source 4,3 --dests '0,0;1,1;2,1;0,3;1,3;4,4'\n\n\
         Exit status: 0 ok; 2 bad request (one line on stderr); 1 a plan failed an oracle."
    )
}

#[derive(Debug, Args)]
struct PlanArgs {
    /// The fabric, e.g. torus:5x5, torus:5x5:uni, mesh:4x4, hypercube:4 or
    /// irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=7.
    #[arg(long, value_name = "SPEC")]
    fabric: String,

    /// The algorithm, e.g. utorus, ucube, kbinomial:3, ssr-greedy (list below).
    #[arg(long, value_name = "NAME")]
    algo: String,

    /// The source node: 4,3 (torus, mesh), 0101 (hypercube), 17 (irregular).
    #[arg(long, value_name = "NODE")]
    source: String,

    /// The destinations, separated by ';' (quote them in a shell).
    #[arg(long, value_name = "NODE[;NODE...]", allow_hyphen_values = true)]
    dests: String,

    /// The message length in packets (picks the optimal k of kbinomial).
    #[arg(long, value_name = "M", default_value_t = 1, value_parser = parse_packets)]
    packets: usize,

    /// The step model: one-port, or all-port (Model B, in-order issue;
    /// all-a = Model A, per-channel counting).
    #[arg(long, value_enum, value_name = "MODEL", default_value_t = PortArg::One)]
    port_model: PortArg,

    /// Print the JSON on one line instead of indented.
    #[arg(long)]
    compact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PortArg {
    /// One send per node per step.
    One,
    /// All-port, Model B (in-order issue).
    #[value(alias = "all-b")]
    All,
    /// All-port, Model A (per-channel counting).
    AllA,
}

impl From<PortArg> for PortChoice {
    fn from(p: PortArg) -> PortChoice {
        match p {
            PortArg::One => PortChoice::One,
            PortArg::All => PortChoice::All,
            PortArg::AllA => PortChoice::AllA,
        }
    }
}

/// `--packets`: a decimal number ≥ 1.
fn parse_packets(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("a message has at least 1 packet".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("expected a number of packets ({e})")),
    }
}

/// Print `msg` as one line on stderr.
fn fail(msg: &str, code: u8) -> ExitCode {
    let line = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!("mcsim: {line}");
    ExitCode::from(code)
}

/// A clap error as one line: its message without the usage and hint lines.
fn clap_one_line(e: &clap::Error) -> String {
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

fn run_plan(args: &PlanArgs) -> ExitCode {
    let req = PlanRequest {
        fabric: &args.fabric,
        algo: &args.algo,
        source: &args.source,
        dests: &args.dests,
        packets: args.packets,
        port_model: args.port_model.into(),
    };
    let plan = match plan_json::plan(&req) {
        Ok(p) => p,
        Err(e @ McsimError::Input(_)) => return fail(&format!("error: {e}"), 2),
        Err(e @ McsimError::Internal(_)) => return fail(&format!("error: {e}"), 1),
    };
    let json = if args.compact {
        serde_json::to_string(&plan)
    } else {
        serde_json::to_string_pretty(&plan)
    };
    let json = match json {
        Ok(j) => j,
        Err(e) => return fail(&format!("error: cannot serialise the plan: {e}"), 1),
    };
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{json}").and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (e.g. `| head`) is not worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&format!("error: cannot write the plan: {e}"), 1),
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
        Command::Plan(args) => run_plan(args),
    }
}
