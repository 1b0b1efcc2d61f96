//! `mcsim`: the mcast simulator's command line.
//!
//! * `mcsim plan` prints one multicast plan as JSON (see
//!   [`mcast_emulator::plan_json`] for the format and the node notation;
//!   [`mcast_emulator::plan_path`] for the path-based worm planners;
//!   [`mcast_emulator::plan_mesh`] for the mesh schemes and the MIN).
//! * `mcsim model <kind>` evaluates a paper's analytic model and prints JSON:
//!   `mcsim model sci` ([`mcast_emulator::model_sci`]), `mcsim model min`
//!   ([`mcast_algorithms::min::model`]).
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
            link_type2}. The path-based planners on unidirectional tori (storus, mtorus-d, \
            mtorus-u:R) add phases and link_visits, and per worm vcs (p/h per hop) and \
            boundaries.",
        after_help = plan_after_help()
    )]
    Plan(PlanArgs),
    /// Evaluate a paper's analytic model for given parameters; print JSON.
    Model(ModelArgs),
}

#[derive(Debug, Args)]
struct ModelArgs {
    #[command(subcommand)]
    kind: ModelKind,
}

/// The analytic models. Each prints one JSON document.
#[derive(Debug, Subcommand)]
enum ModelKind {
    /// The SCI-torus paper's small-message latency models (digest 003 §3):
    /// separate addressing, U-torus, S-torus, Md-torus and Mu-torus.
    #[command(
        long_about = "The SCI-torus paper's small-message latency models (Oral & George; \
            digest 003 §3): t = 2o + h_i L_i for the tree and path algorithms (h_i relays on \
            the deepest path, L_i = 2o + t_process), (G-1)(2o + t_process) for separate \
            addressing. Defaults: the paper's 4x4 SCI testbed profile at 128 B (k=4, n=2, \
            L_p=14 ns, L_f=60 ns, L_s=670 ns, o = 1994 + 3.15 (M-128) ns, t_process = \
            SA 7, Md 206, Mu 201, U 629, S 265 us, Mu partition length r=4). Coefficients \
            lost in the paper's OCR are the digest's candidates, selectable with --md-form \
            and --utorus-form. Output: {model, params, o_us, l_i_us, rows: [{group, \
            latency_us, relays}]}, latencies in us.",
        after_help = "Examples:\n  mcsim model sci --group 4-16\n  \
            mcsim model sci --k 8 --group 64 --r 8 --algo mutorus,mdtorus\n  \
            mcsim model sci --group 16 --bytes 512 --utorus-form ceiling"
    )]
    Sci(SciArgs),
    /// The MIN paper's throughput model (Park & Yoon Eqs. 1-2; digest 001 §5).
    #[command(
        long_about = "The throughput of the unbuffered wrap-around MIN under the two-pass \
            multicast (Park & Yoon, Eqs. 1-2; digest 001 §5): per stage i = n-1..0, \
            rho_{i-1} = rho_i(1+m_i c_i) - rho_i^2 (1+m_i c_i)^2/4 - rho_i^2 m_i c_i (1-m_i c_i)/2, \
            u_{i-1} = rho_i(1-m_i) - rho_i^2 (1-m_i)(1+m_i c_i)/4, m_{i-1} = 1 - u_{i-1}/rho_{i-1}; \
            eta = (rho' - u')/f + u'. The offered load L = (1-m) rho + m rho f. Copy rates c_i: \
            case a (random start address, the paper's algorithm: E[B_i]/E[B_{i+1}] - 1) or b \
            (copies as early as possible). f = 1 is Patel's delta network: n = 7 at load 1 gives \
            eta = 0.3271. Output: {model, n, f, m, load, rho, case, stages: [{stage, rho_in, \
            m_in, copy_rate, rho_out, u_out, m_out}], rho_out, u_out, eta}.",
        after_help = "Examples:\n  mcsim model min --n 7 --f 1 --load 1.0\n  \
            mcsim model min --n 7 --f 4 --m 0.5 --load 1.0 --case b"
    )]
    Min(MinModelArgs),
}

#[derive(Debug, Args)]
struct MinModelArgs {
    /// The number of stages n (2^n nodes), 1..=31.
    #[arg(long)]
    n: u32,

    /// The multicast fanout f (1..=2^n).
    #[arg(long)]
    f: u64,

    /// The offered load L (copies per input per slot).
    #[arg(long, default_value_t = 1.0)]
    load: f64,

    /// The fraction m of packets that are multicasts (0..=1).
    #[arg(long, default_value_t = 0.5)]
    m: f64,

    /// The copy-rate case: a = random start address, b = copies as early as
    /// possible.
    #[arg(long, value_enum, default_value_t = CaseArg::A)]
    case: CaseArg,

    /// Print the JSON on one line instead of indented.
    #[arg(long)]
    compact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CaseArg {
    A,
    B,
}

#[derive(Debug, Args)]
struct SciArgs {
    /// Group sizes G (source included): G or A-B.
    #[arg(long, value_name = "G|A-B")]
    group: String,

    /// Algorithms: all, or a comma-separated list of separate, utorus,
    /// storus, mdtorus, mutorus.
    #[arg(long, value_name = "LIST", default_value = "all")]
    algo: String,

    /// The torus radix k.
    #[arg(long, default_value_t = 4)]
    k: usize,

    /// The number of dimensions n (G <= k^n).
    #[arg(long, default_value_t = 2)]
    n: usize,

    /// The message size M in bytes (o grows 3.15 ns/B above 128 B).
    #[arg(long, default_value_t = 128.0)]
    bytes: f64,

    /// The Mu-torus partition length r (the paper's reading).
    #[arg(long, default_value_t = 4)]
    r: usize,

    /// The Md-torus relay count: rings = ceil(G/k), rings-plus-chain =
    /// ceil(G/k) + k - 2.
    #[arg(long, value_enum, default_value_t = MdFormArg::Rings)]
    md_form: MdFormArg,

    /// The U-torus fraction ((G mod k) + k)/k: as is, or rounded up.
    #[arg(long, value_enum, default_value_t = UTorusFormArg::Fraction)]
    utorus_form: UTorusFormArg,

    /// t_process per algorithm, SA,MD,MU,U,S (default 7,206,201,629,265).
    #[arg(long, value_name = "SA,MD,MU,U,S")]
    t_process: Option<String>,

    /// The unit of the t_process values.
    #[arg(long, value_enum, default_value_t = UnitArg::Us)]
    t_process_unit: UnitArg,

    /// Per-link propagation L_p, ns.
    #[arg(long, default_value_t = 14.0)]
    lp_ns: f64,

    /// Same-ring forwarding L_f, ns.
    #[arg(long, default_value_t = 60.0)]
    lf_ns: f64,

    /// Dimension-switching L_s, ns.
    #[arg(long, default_value_t = 670.0)]
    ls_ns: f64,

    /// Print the JSON on one line instead of indented.
    #[arg(long)]
    compact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MdFormArg {
    Rings,
    RingsPlusChain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum UTorusFormArg {
    Fraction,
    Ceiling,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum UnitArg {
    Us,
    Ns,
}

fn plan_after_help() -> String {
    format!(
        "Fabrics:\n{FABRICS_HELP}\n\nAlgorithms:\n{ALGORITHMS_HELP}\n\nNodes:\n{NODES_HELP}\n\n\
         Example (digest 004 §7.5):\n  mcsim plan --fabric torus:5x5:uni --algo utorus \
         --source 4,3 --dests '0,0;1,1;2,1;0,3;1,3;4,4'\n\n\
         Example (digest 004 §7.11, M_u-torus(4) with path worms):\n  mcsim plan --fabric \
         torus:6x6:uni --algo mtorus-u:4 --source 3,2 \\\n    \
         --dests '0,5;4,5;3,4;5,4;4,3;1,2;2,1;5,1;1,0'\n\n\
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

/// Print `value` as JSON on stdout.
fn print_json<T: serde::Serialize>(value: &T, compact: bool) -> ExitCode {
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

fn run_sci(args: &SciArgs) -> ExitCode {
    use mcast_algorithms::path::sci_model::{MdForm, SciParams, TimeUnit, UTorusForm};
    use mcast_emulator::model_sci;
    let parsed = (|| -> Result<model_sci::SciRequest, McsimError> {
        let mut params = SciParams {
            k: args.k,
            n: args.n,
            bytes: args.bytes,
            mu_r: args.r,
            l_p_ns: args.lp_ns,
            l_f_ns: args.lf_ns,
            l_s_ns: args.ls_ns,
            md_form: match args.md_form {
                MdFormArg::Rings => MdForm::Rings,
                MdFormArg::RingsPlusChain => MdForm::RingsPlusChain,
            },
            utorus_form: match args.utorus_form {
                UTorusFormArg::Fraction => UTorusForm::Fraction,
                UTorusFormArg::Ceiling => UTorusForm::Ceiling,
            },
            t_process_unit: match args.t_process_unit {
                UnitArg::Us => TimeUnit::Us,
                UnitArg::Ns => TimeUnit::Ns,
            },
            ..SciParams::testbed()
        };
        if let Some(t) = &args.t_process {
            params.t_process = model_sci::parse_t_process(t)?;
        }
        Ok(model_sci::SciRequest {
            params,
            groups: model_sci::parse_groups(&args.group)?,
            algorithms: model_sci::parse_algorithms(&args.algo)?,
        })
    })();
    let result = parsed.and_then(|req| model_sci::evaluate(&req));
    match result {
        Ok(j) => print_json(&j, args.compact),
        Err(e @ McsimError::Input(_)) => fail(&format!("error: {e}"), 2),
        Err(e @ McsimError::Internal(_)) => fail(&format!("error: {e}"), 1),
    }
}

fn run_min_model(args: &MinModelArgs) -> ExitCode {
    use mcast_algorithms::min::{throughput, CopyCase};
    let case = match args.case {
        CaseArg::A => CopyCase::RandomStart,
        CaseArg::B => CopyCase::Early,
    };
    match throughput(args.n, args.f, args.m, args.load, case) {
        Ok(t) => {
            let mut v = match serde_json::to_value(&t) {
                Ok(v) => v,
                Err(e) => return fail(&format!("error: cannot serialise the output: {e}"), 1),
            };
            if let Some(o) = v.as_object_mut() {
                o.insert("model".to_string(), serde_json::Value::from("min"));
            }
            print_json(&v, args.compact)
        }
        Err(e) => fail(&format!("error: {e}"), 2),
    }
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
        Command::Model(m) => match &m.kind {
            ModelKind::Sci(args) => run_sci(args),
            ModelKind::Min(args) => run_min_model(args),
        },
    }
}
