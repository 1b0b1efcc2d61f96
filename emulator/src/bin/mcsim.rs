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
//!
//! Exit status: 0 on success; 2 for a bad command line or request (one line
//! on stderr); 1 when an oracle rejects a plan or a simulation (a bug, one
//! line on stderr); 3 when the simulator's watchdog reports deadlock.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use mcast_emulator::plan::{
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
    /// Simulate one multicast in an idle fabric (discrete-event, switch engines).
    #[command(
        long_about = "Simulate one multicast of --packets packets from --source to the \
            destinations in an otherwise idle fabric, with the switch engines (input-buffered \
            virtual cut-through, VCs, credits, replication) and the cost model's host and NI \
            overheads. NI-based trees (separate, chain, binomial, kbinomial[:k], utorus, ucube, \
            maxport, combine, wsort) run the real smart-NI engine; ssr-greedy, ssr-lg, \
            path-greedy, path-lg and tree-worm run switch-replicated worms on irregular fabrics; \
            storus, mtorus-d and mtorus-u:R run path worms with intermediate reception (R_UTPR, \
            p/h VC classes) on unidirectional tori; min-two-pass[:S] runs the two-pass region \
            multicast on min:N fabrics. \
            Every run is checked: each destination receives each packet exactly once. Output: \
            completion (cycles, last destination's host), mean_completion, completion_us, \
            per_destination, injected, network counters.",
        after_help = "Examples:\n  mcsim run --fabric torus:8x8 --algo utorus --dests random:20 --packets 4 --seed 1\n  \
            mcsim run --fabric torus:16x16:uni --algo mtorus-u:8 --dests random:64 --preset high-startup\n  \
            mcsim run --fabric irregular:switches=8,ports=8,nodes=32,seed=7 --algo tree-worm --dests random:15 --json\n  \
            mcsim run --fabric crossbar:16 --algo kbinomial:2 --dests all --packets 6 --preset unitstep\n\n\
            Cost knobs: --preset irregular|ncube2|high-startup|low-startup|unitstep, --config FILE \
            (BookSim-style `key = value;`), knobs on the fabric spec (SPEC@key=value,key=value), \
            --set key=value (repeatable), applied in that order; --print-cost shows the result."
    )]
    Run(RunArgs),
    /// Run a load point or a sweep (warm-up, measure, drain; BookSim's phases).
    #[command(
        long_about = "Offer --traffic at --rate flits/cycle/host (a comma-separated list \
            sweeps) with a Bernoulli source per host: --warmup cycles unmeasured, --cycles \
            measured, then drain until every measured packet is delivered (at most --drain \
            cycles, else the point is `saturated`). Reports accepted throughput, latency and, \
            on bidirectional tori with equal radices, the fraction of the ideal bound 8b/k. \
            The watchdog reports deadlock (exit 3) when nothing moves for watchdog_cycles.",
        after_help = "Examples:\n  mcsim load --fabric torus:8x8 --traffic uniform --rate 0.2,0.4,0.6,0.8,1.0 \
            --cycles 20000 --warmup 5000 --set num_vcs=4\n  \
            mcsim load --fabric irregular --traffic multicast:3 --rate 0.01 --cycles 100000"
    )]
    Load(LoadArgs),
}

#[derive(Debug, Args)]
struct CostArgs {
    /// Start from a cost preset (irregular, ncube2, high-startup, low-startup, unitstep).
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// A BookSim-style config file of `key = value;` lines.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Set one cost knob (repeatable), e.g. --set num_vcs=4.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Print the resulting cost model (as a config file) on stderr.
    #[arg(long)]
    print_cost: bool,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The fabric: torus:AxB (add :uni for unidirectional), mesh:AxB, hypercube:N,
    /// irregular:..., min:N (add :omega for the omega wiring), crossbar:N.
    #[arg(long, value_name = "SPEC")]
    fabric: String,
    /// The algorithm (see the long help).
    #[arg(long, value_name = "NAME")]
    algo: String,
    /// random:K (K distinct random hosts) or all.
    #[arg(long, value_name = "random:K|all", default_value = "all")]
    dests: String,
    /// Packets in the message.
    #[arg(long, value_name = "M", default_value_t = 1, value_parser = parse_packets)]
    packets: usize,
    /// Seed for the random destinations.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The source host id.
    #[arg(long, default_value_t = 0)]
    source: usize,
    /// NI forwarding: fpfs (default) or fcfs.
    #[arg(long, default_value = "fpfs")]
    forwarding: String,
    /// Print JSON instead of a summary.
    #[arg(long)]
    json: bool,
    /// Print wall-clock time and packet-hop events per second on stderr.
    #[arg(long)]
    timing: bool,
    #[command(flatten)]
    cost: CostArgs,
}

#[derive(Debug, Args)]
struct LoadArgs {
    /// The fabric.
    #[arg(long, value_name = "SPEC")]
    fabric: String,
    /// uniform or multicast:D.
    #[arg(long, default_value = "uniform")]
    traffic: String,
    /// Offered load(s), flits/cycle/host, comma-separated.
    #[arg(long, value_name = "R[,R...]")]
    rate: String,
    /// Measured cycles.
    #[arg(long, default_value_t = 10_000)]
    cycles: u64,
    /// Warm-up cycles.
    #[arg(long, default_value_t = 1_000)]
    warmup: u64,
    /// Longest drain (default: --cycles).
    #[arg(long)]
    drain: Option<u64>,
    /// RNG seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Print wall-clock time and packet-hop events per second on stderr.
    #[arg(long)]
    timing: bool,
    #[command(flatten)]
    cost: CostArgs,
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
    let plan = match plan::plan(&req) {
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
        Command::Run(args) => run_run(args),
        Command::Load(args) => run_load(args),
    }
}

/// The cost model: preset, then --config, then knobs on the fabric spec
/// (`SPEC@key=value,...`), then --set; and the bare fabric spec.
fn build_cost(
    a: &CostArgs,
    fabric: &str,
) -> Result<(mcast_emulator::cost::CostModel, String), String> {
    use mcast_emulator::cost::CostModel;
    let mut c = match &a.preset {
        Some(p) => CostModel::preset(p).map_err(|e| e.to_string())?,
        None => CostModel::default(),
    };
    if let Some(path) = &a.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        c.parse_config(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let spec = mcast_emulator::sim::fabric::split_spec(fabric, &mut c)
        .map_err(|e| e.to_string())?
        .to_string();
    for kv in &a.set {
        c.set_pair(kv).map_err(|e| format!("--set {kv}: {e}"))?;
    }
    c.validate().map_err(|e| e.to_string())?;
    if a.print_cost {
        eprint!("{c}");
    }
    Ok((c, spec))
}

fn sim_fail(e: &mcast_emulator::sim::SimError) -> ExitCode {
    use mcast_emulator::sim::SimError;
    match e {
        SimError::Input(_) | SimError::Cost(_) => fail(&format!("error: {e}"), 2),
        SimError::Deadlock { .. } => fail(&format!("{e}"), 3),
        SimError::Internal(_) => fail(&format!("error: {e}"), 1),
    }
}

fn run_run(args: &RunArgs) -> ExitCode {
    use mcast_emulator::sim::fabric::SimFabric;
    use mcast_emulator::sim::run::{run_with_progress, Dests, RunConfig};
    let (cost, spec) = match build_cost(&args.cost, &args.fabric) {
        Ok(c) => c,
        Err(e) => return fail(&format!("error: {e}"), 2),
    };
    let forwarding = match args.forwarding.as_str() {
        "fpfs" => mcast::Forwarding::Fpfs,
        "fcfs" => mcast::Forwarding::Fcfs,
        o => {
            return fail(
                &format!("error: --forwarding {o}: expected fpfs or fcfs"),
                2,
            )
        }
    };
    let fabric = match SimFabric::parse(&spec, cost.dateline) {
        Ok(f) => f,
        Err(e) => return sim_fail(&e),
    };
    let dests: Dests = match args.dests.parse() {
        Ok(d) => d,
        Err(e) => return sim_fail(&e),
    };
    let cfg = RunConfig {
        algo: args.algo.clone(),
        dests,
        packets: args.packets,
        seed: args.seed,
        source: args.source,
        forwarding,
    };
    let t0 = std::time::Instant::now();
    let c0 = cpu_seconds();
    let mut bar = Bar::new("deliveries");
    let result = run_with_progress(&fabric, &cost, &cfg, &mut |p| bar.update(p));
    drop(bar);
    let r = match result {
        Ok(r) => r,
        Err(e) => return sim_fail(&e),
    };
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    if args.timing {
        eprintln!(
            "mcsim: {} packet-hops, {} events in {:.3} s wall, {:.3} s CPU: \
             {:.2} M packet-hops/s per CPU second",
            r.network.hops,
            r.network.events,
            wall,
            cpu,
            r.network.hops as f64 / cpu / 1e6
        );
    }
    if args.json {
        let mut v = match serde_json::to_value(&r) {
            Ok(v) => v,
            Err(e) => return fail(&format!("error: cannot serialise: {e}"), 1),
        };
        if let Some(o) = v.as_object_mut() {
            o.insert("fabric".into(), spec.trim().into());
            o.insert("cost_preset".into(), cost.preset.clone().into());
            o.insert("cycle_ns".into(), cost.cycle_ns.into());
        }
        return print_json(&v, false);
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{} on {}: {} packet(s) from {} to {} destinations\n\
         completion {} cycles ({:.3} us), mean {:.1} cycles\n\
         injected {} packets, {} packet-hops, {} events",
        r.algorithm,
        spec.trim(),
        r.packets,
        r.source,
        r.destinations.len(),
        r.completion,
        r.completion_us,
        r.mean_completion,
        r.injected,
        r.network.hops,
        r.network.events
    );
    ExitCode::SUCCESS
}

fn run_load(args: &LoadArgs) -> ExitCode {
    use mcast_emulator::sim::fabric::SimFabric;
    use mcast_emulator::sim::load::{run_load_with_progress, LoadConfig, Traffic};
    let (cost, spec) = match build_cost(&args.cost, &args.fabric) {
        Ok(c) => c,
        Err(e) => return fail(&format!("error: {e}"), 2),
    };
    let fabric = match SimFabric::parse(&spec, cost.dateline) {
        Ok(f) => f,
        Err(e) => return sim_fail(&e),
    };
    let traffic: Traffic = match args.traffic.parse() {
        Ok(t) => t,
        Err(e) => return sim_fail(&e),
    };
    let mut rates = Vec::new();
    for r in args.rate.split(',') {
        match r.trim().parse::<f64>() {
            Ok(x) if x > 0.0 && x.is_finite() => rates.push(x),
            _ => return fail(&format!("error: bad --rate `{r}` (positive numbers)"), 2),
        }
    }
    let mut rows = Vec::new();
    let mut stderr_note = Vec::new();
    for &rate in &rates {
        let cfg = LoadConfig {
            rate,
            warmup: args.warmup,
            cycles: args.cycles,
            drain_max: args.drain.unwrap_or(args.cycles),
            traffic,
            seed: args.seed,
        };
        let t0 = std::time::Instant::now();
        let c0 = cpu_seconds();
        let mut bar = Bar::new("cycles");
        let result = run_load_with_progress(&fabric, &cost, &cfg, &mut |p| bar.update(p));
        drop(bar);
        match result {
            Ok(r) => {
                let wall = t0.elapsed().as_secs_f64();
                let cpu = cpu_seconds() - c0;
                if args.timing {
                    stderr_note.push(format!(
                        "rate {rate}: {} packet-hops, {} events in {:.3} s wall, {:.3} s CPU: \
                         {:.2} M packet-hops/s per CPU second",
                        r.stats.hops,
                        r.stats.events,
                        wall,
                        cpu,
                        r.stats.hops as f64 / cpu / 1e6
                    ));
                }
                rows.push(r);
            }
            Err(e) => return sim_fail(&e),
        }
    }
    for n in stderr_note {
        eprintln!("mcsim: {n}");
    }
    if args.json {
        let v = serde_json::json!({
            "fabric": spec.trim(),
            "traffic": args.traffic.trim(),
            "warmup": args.warmup,
            "cycles": args.cycles,
            "seed": args.seed,
            "cost": cost,
            "points": rows,
        });
        return print_json(&v, false);
    }
    let peak = rows
        .iter()
        .max_by(|a, b| a.accepted.total_cmp(&b.accepted))
        .map(|r| (r.offered, r.accepted, r.fraction_of_ideal));
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:>8} {:>9} {:>9} {:>11} {:>9} {:>10}",
        "offered", "accepted", "ideal_frac", "mean_lat", "max_lat", "saturated"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:>8.4} {:>9.4} {:>9} {:>11.1} {:>9} {:>10}",
            r.offered,
            r.accepted,
            r.fraction_of_ideal
                .map(|f| format!("{f:.3}"))
                .unwrap_or_else(|| "-".into()),
            r.mean_latency,
            r.max_latency,
            r.saturated
        );
    }
    if let (Some((offered, accepted, frac)), true) = (peak, rates.len() > 1) {
        let _ = writeln!(
            out,
            "peak accepted {accepted:.4} flits/cycle/host at offered {offered}{}",
            frac.map(|f| format!(" ({f:.3} of the ideal 8b/k)"))
                .unwrap_or_default()
        );
    }
    ExitCode::SUCCESS
}

/// CPU time of this process in seconds (the simulator is single-threaded,
/// so this is its time on one core, whatever else the machine runs).
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the pointer we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// A progress bar on stderr, drawn only on a terminal, fed by the
/// simulator's progress callback; cleared when dropped.
struct Bar {
    unit: &'static str,
    on: bool,
    bar: Option<indicatif::ProgressBar>,
}

impl Bar {
    fn new(unit: &'static str) -> Bar {
        use std::io::IsTerminal;
        Bar {
            unit,
            on: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    fn update(&mut self, p: mcast_emulator::sim::progress::Progress) {
        if !self.on {
            return;
        }
        let unit = self.unit;
        let b = self.bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(p.total);
            b.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} {unit} {{msg}}"
                ))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        b.set_position(p.done);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
