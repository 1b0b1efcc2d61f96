//! `mcsim run` and `mcsim load`: the discrete-event simulator.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::*;
use crate::progress::Bar;
use crate::{fail, print_json};

/// The cost model: preset, then --config, then knobs on the fabric spec
/// (`SPEC@key=value,...`), then --set; and the bare fabric spec.
fn build_cost(
    a: &CostArgs,
    fabric: &str,
) -> Result<(mcast_emulator::cost::FabricCostModel, String), String> {
    use mcast_emulator::cost::FabricCostModel;
    let mut c = match &a.preset {
        Some(p) => FabricCostModel::preset(p).map_err(|e| e.to_string())?,
        None => FabricCostModel::default(),
    };
    if let Some(path) = &a.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        c.parse_config(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let spec = mcast_emulator::sim::spec::split_spec(fabric, &mut c)
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

fn sim_fail(e: &mcast_emulator::sim::SimulatorError) -> ExitCode {
    use mcast_emulator::sim::SimulatorError;
    match e {
        SimulatorError::Input(_) | SimulatorError::Cost(_) => fail(&format!("error: {e}"), 2),
        SimulatorError::Deadlock { .. } => fail(&format!("{e}"), 3),
        SimulatorError::Internal(_) => fail(&format!("error: {e}"), 1),
    }
}

pub(crate) fn run_run(args: &RunArgs) -> ExitCode {
    use mcast_emulator::sim::run::{run_with_progress, Dests, RunConfig};
    use mcast_emulator::sim::spec::SimFabric;
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

pub(crate) fn run_load(args: &LoadArgs) -> ExitCode {
    use mcast_emulator::sim::load::{
        run_host_load, run_load_with_progress, HostLoad, LoadConfig, LoadScheme, Traffic,
    };
    use mcast_emulator::sim::spec::SimFabric;
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
    let hosts = match &args.scheme {
        None => None,
        Some(s) => match s.parse::<LoadScheme>() {
            Ok(scheme) => Some(HostLoad {
                scheme,
                packets: args.packets,
                multicast_share: args.multicast_share,
                prep: args.prep,
            }),
            Err(e) => return sim_fail(&e),
        },
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
        let result = match &hosts {
            Some(h) => run_host_load(&fabric, &cost, &cfg, h, &mut |p| bar.update(p)),
            None => run_load_with_progress(&fabric, &cost, &cfg, &mut |p| bar.update(p)),
        };
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
        let mut v = serde_json::json!({
            "fabric": spec.trim(),
            "traffic": args.traffic.trim(),
            "warmup": args.warmup,
            "cycles": args.cycles,
            "seed": args.seed,
            "cost": cost,
            "points": rows,
        });
        if let (Some(s), Some(o)) = (&args.scheme, v.as_object_mut()) {
            o.insert("scheme".into(), serde_json::json!(s.trim()));
            o.insert("packets".into(), serde_json::json!(args.packets));
            o.insert(
                "multicast_share".into(),
                serde_json::json!(args.multicast_share),
            );
        }
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
