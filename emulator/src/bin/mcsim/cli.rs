//! The command line: subcommands and their arguments (clap).

use clap::{Args, Parser, Subcommand, ValueEnum};
use mcast_emulator::plan::{PortChoice, ALGORITHMS_HELP, FABRICS_HELP, NODES_HELP};

/// `mcsim`: plan and simulate mcast multicasts on logical fabrics.
#[derive(Debug, Parser)]
#[command(
    name = "mcsim",
    version,
    about = "Plan and simulate mcast multicasts on logical fabrics",
    propagate_version = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
            virtual cut-through, or wormhole with --set switching=wormhole; VCs, credits, \
            replication) and the cost model's host and NI \
            overheads. NI-based trees (separate, chain, binomial, kbinomial[:k], utorus, ucube, \
            maxport, combine, wsort) run the real smart-NI engine; ssr-greedy, ssr-lg, \
            path-greedy, path-lg and tree-worm run switch-replicated worms on irregular fabrics; \
            storus, mtorus-d and mtorus-u:R run path worms with intermediate reception (R_UTPR, \
            p/h VC classes) on unidirectional tori; min-two-pass[:S] runs the two-pass region \
            multicast on min:N fabrics; host:<tree> is software multicast over a conventional \
            NI: every relay's host receives the whole message, then pays t_hs per copy it \
            sends (<tree>: any planner on direct topologies, e.g. host:utorus, host:mdtorus, \
            host:mutorus:4:length, host:storus for the S-torus worm as a relay chain; \
            host:binomial, host:chain, host:flat elsewhere); its JSON lists every copy's \
            transfer times. \
            Every run is checked: each destination receives each packet exactly once. Output: \
            completion (cycles, last destination's host), mean_completion, completion_us, \
            per_destination, injected, network counters.",
        after_help = "Examples:\n  mcsim run --fabric torus:8x8 --algo utorus --dests random:20 --packets 4 --seed 1\n  \
            mcsim run --fabric torus:16x16:uni --algo mtorus-u:8 --dests random:64 --preset high-startup\n  \
            mcsim run --fabric irregular:switches=8,ports=8,nodes=32,seed=7 --algo tree-worm --dests random:15 --json\n  \
            mcsim run --fabric crossbar:16 --algo kbinomial:2 --dests all --packets 6 --preset unitstep\n  \
            mcsim run --fabric torus:4x4:uni --algo host:mdtorus --dests random:9 --set t_hs=208000\n\n\
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
    /// Rerun a paper's evaluation: CSV and SVG per figure, a verdict per claim.
    #[command(
        long_about = "Rerun a paper's experiments on the simulator and decide each of its \
            claims: holds, differs, or not checkable (with what the simulator lacks). Writes \
            DIR/<paper>/<figure>.csv (every sample: series, x, draw, value), <figure>.svg \
            (means with 95% confidence intervals), claims.md and verdicts.csv; --report FILE \
            writes the markdown report linking them. Points run in parallel on --jobs threads.",
        after_help = "Examples:\n  mcsim repro --paper 000 --quick --out /tmp/repro\n  \
            mcsim repro --paper 000 --out docs/repro --report REPRODUCTION.md"
    )]
    Repro(crate::repro::ReproArgs),
    /// Draw a CSV of points (series,x,y[,ci]) as an SVG line chart.
    #[command(
        long_about = "Draw a CSV of points as an SVG line chart with the plotting module \
            `mcsim repro` uses (plotters): one line per series in order of first appearance, \
            error bars from an optional ci column, --log-x (base 2) and --log-y (base 10) \
            axes. The benchmark harnesses draw their figures with it.",
        after_help = "Example:\n  mcsim plot --csv latency.csv --out latency.svg --log-x --log-y \
            --title 'Broadcast latency' --x-label 'message size (bytes)' --y-label 'latency (µs)'"
    )]
    Plot(crate::chart::PlotArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CostArgs {
    /// Start from a cost preset (irregular, ncube2, high-startup, low-startup, unitstep).
    #[arg(long, value_name = "NAME")]
    pub(crate) preset: Option<String>,
    /// A BookSim-style config file of `key = value;` lines.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<std::path::PathBuf>,
    /// Set one cost knob (repeatable), e.g. --set num_vcs=4.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Print the resulting cost model (as a config file) on stderr.
    #[arg(long)]
    pub(crate) print_cost: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The fabric: torus:AxB (add :uni for unidirectional), mesh:AxB, hypercube:N,
    /// irregular:..., min:N (add :omega for the omega wiring), crossbar:N.
    #[arg(long, value_name = "SPEC")]
    pub(crate) fabric: String,
    /// The algorithm (see the long help).
    #[arg(long, value_name = "NAME")]
    pub(crate) algo: String,
    /// random:K (K distinct random hosts) or all.
    #[arg(long, value_name = "random:K|all", default_value = "all")]
    pub(crate) dests: String,
    /// Packets in the message.
    #[arg(long, value_name = "M", default_value_t = 1, value_parser = parse_packets)]
    pub(crate) packets: usize,
    /// Seed for the random destinations.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// The source host id.
    #[arg(long, default_value_t = 0)]
    pub(crate) source: usize,
    /// NI forwarding: fpfs (default) or fcfs.
    #[arg(long, default_value = "fpfs")]
    pub(crate) forwarding: String,
    /// Print JSON instead of a summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print wall-clock time and packet-hop events per second on stderr.
    #[arg(long)]
    pub(crate) timing: bool,
    #[command(flatten)]
    pub(crate) cost: CostArgs,
}

#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// The fabric.
    #[arg(long, value_name = "SPEC")]
    pub(crate) fabric: String,
    /// uniform or multicast:D.
    #[arg(long, default_value = "uniform")]
    pub(crate) traffic: String,
    /// Offered load(s), flits/cycle/host, comma-separated.
    #[arg(long, value_name = "R[,R...]")]
    pub(crate) rate: String,
    /// Measured cycles.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) cycles: u64,
    /// Warm-up cycles.
    #[arg(long, default_value_t = 1_000)]
    pub(crate) warmup: u64,
    /// Longest drain (default: --cycles).
    #[arg(long)]
    pub(crate) drain: Option<u64>,
    /// RNG seed.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Carry multicast:D with hosts and NIs that relay: tree-worm,
    /// path-greedy, path-lg, ssr-greedy, ssr-lg (irregular fabrics),
    /// ni:<tree> (NI-based, e.g. ni:kbinomial), dp, mp, cp, qg[:TD]
    /// (meshes). The hosts and NIs pay t_hs, t_hr, t_ns, t_nr and DMA;
    /// --rate is then message flits generated per cycle per host.
    #[arg(long, value_name = "S")]
    pub(crate) scheme: Option<String>,
    /// With --scheme: packets per message.
    #[arg(long, default_value_t = 1, requires = "scheme")]
    pub(crate) packets: usize,
    /// With --scheme: the share of messages that are multicasts (the rest
    /// are unicasts to one random host).
    #[arg(long, default_value_t = 1.0, requires = "scheme")]
    pub(crate) multicast_share: f64,
    /// With --scheme: the source's preparation time per multicast, cycles
    /// (default: the scheme's; DP 2, MP 2, CP 4, QG 16, others 0).
    #[arg(long, requires = "scheme")]
    pub(crate) prep: Option<u64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print wall-clock time and packet-hop events per second on stderr.
    #[arg(long)]
    pub(crate) timing: bool,
    #[command(flatten)]
    pub(crate) cost: CostArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    #[command(subcommand)]
    pub(crate) kind: ModelKind,
}

/// The analytic models. Each prints one JSON document.
#[derive(Debug, Subcommand)]
pub(crate) enum ModelKind {
    /// The SCI-torus paper's small-message latency models [Oral 2003, §5]:
    /// separate addressing, U-torus, S-torus, Md-torus and Mu-torus.
    #[command(
        long_about = "The SCI-torus paper's small-message latency models (Oral & George; \
            [Oral 2003, §5]): t = 2o + h_i L_i for the tree and path algorithms (h_i relays on \
            the deepest path, L_i = 2o + t_process), (G-1)(2o + t_process) for separate \
            addressing. Defaults: the paper's 4x4 SCI testbed profile at 128 B (k=4, n=2, \
            L_p=14 ns, L_f=60 ns, L_s=670 ns, o = 1994 + 3.15 (M-128) ns, t_process = \
            SA 7, Md 206, Mu 201, U 629, S 265 us, Mu partition length r=4). Coefficients \
            lost in the paper's OCR are our candidates, selectable with --md-form \
            and --utorus-form. Output: {model, params, o_us, l_i_us, rows: [{group, \
            latency_us, relays}]}, latencies in us.",
        after_help = "Examples:\n  mcsim model sci --group 4-16\n  \
            mcsim model sci --k 8 --group 64 --r 8 --algo mutorus,mdtorus\n  \
            mcsim model sci --group 16 --bytes 512 --utorus-form ceiling"
    )]
    Sci(SciArgs),
    /// The MIN paper's throughput model [Park 1996, §4.1, Eqs 1–2].
    #[command(
        long_about = "The throughput of the unbuffered wrap-around MIN under the two-pass \
            multicast [Park 1996, §4.1, Eqs 1–2]: per stage i = n-1..0, \
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
pub(crate) struct MinModelArgs {
    /// The number of stages n (2^n nodes), 1..=31.
    #[arg(long)]
    pub(crate) n: u32,

    /// The multicast fanout f (1..=2^n).
    #[arg(long)]
    pub(crate) f: u64,

    /// The offered load L (copies per input per slot).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) load: f64,

    /// The fraction m of packets that are multicasts (0..=1).
    #[arg(long, default_value_t = 0.5)]
    pub(crate) m: f64,

    /// The copy-rate case: a = random start address, b = copies as early as
    /// possible.
    #[arg(long, value_enum, default_value_t = CaseArg::A)]
    pub(crate) case: CaseArg,

    /// Print the JSON on one line instead of indented.
    #[arg(long)]
    pub(crate) compact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CaseArg {
    A,
    B,
}

#[derive(Debug, Args)]
pub(crate) struct SciArgs {
    /// Group sizes G (source included): G or A-B.
    #[arg(long, value_name = "G|A-B")]
    pub(crate) group: String,

    /// Algorithms: all, or a comma-separated list of separate, utorus,
    /// storus, mdtorus, mutorus.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub(crate) algo: String,

    /// The torus radix k.
    #[arg(long, default_value_t = 4)]
    pub(crate) k: usize,

    /// The number of dimensions n (G <= k^n).
    #[arg(long, default_value_t = 2)]
    pub(crate) n: usize,

    /// The message size M in bytes (o grows 3.15 ns/B above 128 B).
    #[arg(long, default_value_t = 128.0)]
    pub(crate) bytes: f64,

    /// The Mu-torus partition length r (the paper's reading).
    #[arg(long, default_value_t = 4)]
    pub(crate) r: usize,

    /// The Md-torus relay count: rings = ceil(G/k), rings-plus-chain =
    /// ceil(G/k) + k - 2.
    #[arg(long, value_enum, default_value_t = MdFormArg::Rings)]
    pub(crate) md_form: MdFormArg,

    /// The U-torus fraction ((G mod k) + k)/k: as is, or rounded up.
    #[arg(long, value_enum, default_value_t = UTorusFormArg::Fraction)]
    pub(crate) utorus_form: UTorusFormArg,

    /// t_process per algorithm, SA,MD,MU,U,S (default 7,206,201,629,265).
    #[arg(long, value_name = "SA,MD,MU,U,S")]
    pub(crate) t_process: Option<String>,

    /// The unit of the t_process values.
    #[arg(long, value_enum, default_value_t = UnitArg::Us)]
    pub(crate) t_process_unit: UnitArg,

    /// Per-link propagation L_p, ns.
    #[arg(long, default_value_t = 14.0)]
    pub(crate) lp_ns: f64,

    /// Same-ring forwarding L_f, ns.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) lf_ns: f64,

    /// Dimension-switching L_s, ns.
    #[arg(long, default_value_t = 670.0)]
    pub(crate) ls_ns: f64,

    /// Print the JSON on one line instead of indented.
    #[arg(long)]
    pub(crate) compact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MdFormArg {
    Rings,
    RingsPlusChain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum UTorusFormArg {
    Fraction,
    Ceiling,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum UnitArg {
    Us,
    Ns,
}

pub(crate) fn plan_after_help() -> String {
    format!(
        "Fabrics:\n{FABRICS_HELP}\n\nAlgorithms:\n{ALGORITHMS_HELP}\n\nNodes:\n{NODES_HELP}\n\n\
         Example [Robinson 1994, §4.3–4.4, Figs 4.4–4.5]:\n  mcsim plan --fabric torus:5x5:uni --algo utorus \
         --source 4,3 --dests '0,0;1,1;2,1;0,3;1,3;4,4'\n\n\
         Example ([Robinson 1994, ch. 6, Fig 5.1, derived], M_u-torus(4) with path worms):\n  mcsim plan --fabric \
         torus:6x6:uni --algo mtorus-u:4 --source 3,2 \\\n    \
         --dests '0,5;4,5;3,4;5,4;4,3;1,2;2,1;5,1;1,0'\n\n\
         Exit status: 0 ok; 2 bad request (one line on stderr); 1 a plan failed an oracle."
    )
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// The fabric, e.g. torus:5x5, torus:5x5:uni, mesh:4x4, hypercube:4 or
    /// irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=7.
    #[arg(long, value_name = "SPEC")]
    pub(crate) fabric: String,

    /// The algorithm, e.g. utorus, ucube, kbinomial:3, ssr-greedy (list below).
    #[arg(long, value_name = "NAME")]
    pub(crate) algo: String,

    /// The source node: 4,3 (torus, mesh), 0101 (hypercube), 17 (irregular).
    #[arg(long, value_name = "NODE")]
    pub(crate) source: String,

    /// The destinations, separated by ';' (quote them in a shell).
    #[arg(long, value_name = "NODE[;NODE...]", allow_hyphen_values = true)]
    pub(crate) dests: String,

    /// The message length in packets (picks the optimal k of kbinomial).
    #[arg(long, value_name = "M", default_value_t = 1, value_parser = parse_packets)]
    pub(crate) packets: usize,

    /// The step model: one-port, or all-port (Model B, in-order issue;
    /// all-a = Model A, per-channel counting).
    #[arg(long, value_enum, value_name = "MODEL", default_value_t = PortArg::One)]
    pub(crate) port_model: PortArg,

    /// Print the JSON on one line instead of indented.
    #[arg(long)]
    pub(crate) compact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PortArg {
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
pub(crate) fn parse_packets(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("a message has at least 1 packet".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("expected a number of packets ({e})")),
    }
}
