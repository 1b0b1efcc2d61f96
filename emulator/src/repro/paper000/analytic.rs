//! Claims 1–10 of [Sivaram 1998]: the unit-step model of §4 (exact, so no
//! draws) and the switch-based schemes' correctness (§5), counted over
//! random topologies and destination sets.

use mcast_algorithms::irregular::{Scheme, SplitMix64, SwitchNetwork, UpDownDir, WormTraceOptions};
use mcast_algorithms::{ceil_log2, l1, simulate, ChainTree, Forwarding, Shape};

use std::sync::Arc;

use super::experiments::{Single, Sizes};
use crate::repro::{Claim, FigureMeta, FigureResult, FigureSpec, PointSpec, Results, Verdict};
use crate::sim::spec::SimFabric;
use crate::switch::routing::IrregularRouting;

/// Unit-step completion of a k-binomial tree of `n` nodes, `m` packets.
/// Returns (completion, root's children, peak packets held, whether the
/// root has the most children of any vertex).
fn steps(n: usize, k: usize, m: usize, f: Forwarding) -> Result<(usize, usize, usize), String> {
    steps4(n, k, m, f).map(|s| (s.0, s.1, s.2))
}

fn steps4(
    n: usize,
    k: usize,
    m: usize,
    f: Forwarding,
) -> Result<(usize, usize, usize, bool), String> {
    let t = ChainTree::new(Shape::KBinomial { k }, n).map_err(|e| e.to_string())?;
    let s = simulate(&t, m, f);
    let root = t.children(0).len();
    Ok((
        s.completion(),
        root,
        s.peak_held(),
        root == t.max_children(),
    ))
}

fn claim(id: u32, statement: &str, source: &str) -> Claim {
    Claim {
        id,
        statement: statement.into(),
        source: source.into(),
        ours: String::new(),
        verdict: Verdict::Holds,
        why: String::new(),
        figures: vec![],
    }
}

/// Claim 1 on the simulator: binomial multicasts over n-port crossbars
/// (n = 2…64), on a conventional NI (`host:binomial`: every relay's host
/// receives and re-sends) and on the smart NI. Returns (runs, runs whose
/// completion is the formula's exactly); t_step is the 2-node run's
/// completion less t_hs and t_hr.
fn ni_formulas() -> Result<(usize, usize), String> {
    use crate::cost::FabricCostModel;
    use crate::sim::run::{run_to, Dests, RunConfig};
    let mut cost = FabricCostModel::irregular();
    let (t_hs, t_hr) = (1000u64, 700u64);
    for (k, v) in [
        ("t_hs", t_hs.to_string()),
        ("t_hr", t_hr.to_string()),
        ("t_ns", "200".into()),
        ("t_nr", "150".into()),
        ("dma_mb_s", "0".into()),
    ] {
        cost.set(k, &v).map_err(|e| e.to_string())?;
    }
    let completion = |n: usize, algo: &str| -> Result<u64, String> {
        let fabric = SimFabric::parse(&format!("crossbar:{n}"), true).map_err(|e| e.to_string())?;
        let cfg = RunConfig {
            algo: algo.into(),
            dests: Dests::All,
            packets: 1,
            seed: 0,
            source: 0,
            forwarding: mcast::Forwarding::Fpfs,
        };
        let dests: Vec<usize> = (1..n).collect();
        run_to(&fabric, &cost, &cfg, &dests)
            .map(|r| r.completion)
            .map_err(|e| e.to_string())
    };
    let t_step = completion(2, "host:binomial")? - t_hs - t_hr;
    let (mut runs, mut exact) = (0, 0);
    for n in 2..=64 {
        let l = ceil_log2(n) as u64;
        runs += 2;
        exact += usize::from(completion(n, "host:binomial")? == l * (t_hs + t_step + t_hr));
        exact += usize::from(completion(n, "binomial")? == t_hs + l * t_step + t_hr);
    }
    Ok((runs, exact))
}

/// Claims 1–5, in the unit-step model ([`mcast_algorithms::unitstep`]).
///
/// # Errors
/// A tree that cannot be built (a bug).
pub fn unit_step_claims() -> Result<Vec<Claim>, String> {
    let mut out = Vec::new();
    let mut c = claim(
        1,
        "Conventional-NI binomial latency is ⌈log2 n⌉(t_hs + t_step + t_hr); smart-NI latency \
         is t_hs + ⌈log2 n⌉·t_step + t_hr.",
        "[Sivaram 1998, §4.1, Fig 4]",
    );
    let smart_ok = (2..=256).all(|n| {
        steps(n, ceil_log2(n).max(1), 1, Forwarding::Fpfs).is_ok_and(|s| s.0 == ceil_log2(n))
    });
    let (sims, exact) = ni_formulas()?;
    c.ours = format!(
        "smart NI: a binomial tree of n nodes takes ⌈log2 n⌉ NI steps for every n ≤ 256: \
         {smart_ok}; simulated binomial multicasts on n-port crossbars, n = 2…64, conventional \
         NI (`host:binomial`) and smart NI: both formulas exact in {exact} of {sims}"
    );
    c.verdict = Verdict::from_bool(smart_ok && exact == sims);
    c.why = "a conventional NI makes every relay's host receive (t_hr) and re-send (t_hs), \
             once per level; the smart NI forwards at the NI, so the host costs are paid \
             once (t_step = t_ns + network + t_nr, measured from the 2-node run)"
        .into();
    out.push(c);

    let mut c = claim(
        2,
        "With FPFS an m-packet multicast completes in L1 + (m−1)·δr steps (δr = root's \
         children); 3 packets to 7 destinations on a binomial tree: 9 steps; to 3 \
         destinations: 6 (binomial) vs 5 (linear).",
        "[Sivaram 1998, §4.3.1–4.3.2, Theorems 1–2, Figs 7–8]",
    );
    let (a, _, _) = steps(8, 3, 3, Forwarding::Fpfs)?;
    let (b, _, _) = steps(4, 2, 3, Forwarding::Fpfs)?;
    let (l, _, _) = steps(4, 1, 3, Forwarding::Fpfs)?;
    // Theorems 1–2 are stated for trees whose root has the most children.
    let (mut all, mut trees) = (true, 0);
    for n in 2..=64 {
        for k in 1..=ceil_log2(n) {
            for m in 1..=6 {
                let (done, root, _, top) = steps4(n, k, m, Forwarding::Fpfs)?;
                if top {
                    trees += 1;
                    all &= done == l1(n, k) + (m - 1) * root;
                }
            }
        }
    }
    c.ours = format!(
        "{a} steps; {b} vs {l}; L1 + (m−1)·δr exact in all {trees} cases n ≤ 64, k, m ≤ 6 \
         whose root has the most children: {all}"
    );
    c.verdict = Verdict::from_bool(a == 9 && b == 6 && l == 5 && all);
    c.why = "FPFS pipelines the packets: each follows the previous δr steps behind (the paper \
             limits Theorems 1–2 to trees whose root has the most children, §4.3.2)"
        .into();
    out.push(c);

    let mut c = claim(
        3,
        "The binomial tree is not optimal for multi-packet messages; the optimal tree is the \
         k-binomial tree minimising L1(n,k) + (m−1)k.",
        "[Sivaram 1998, §4.3.3, Theorem 3]",
    );
    let best = |n: usize, m: usize| -> Result<(usize, usize), String> {
        let mut b = (usize::MAX, 0);
        for k in 1..=ceil_log2(n) {
            let s = steps(n, k, m, Forwarding::Fpfs)?.0;
            if s < b.0 {
                b = (s, k);
            }
        }
        Ok(b)
    };
    let (bin2, opt2) = (steps(32, 5, 2, Forwarding::Fpfs)?.0, best(32, 2)?);
    let (_, k1) = best(32, 1)?;
    let (_, k27) = best(32, 27)?;
    c.ours = format!(
        "n = 32: m = 2 binomial {bin2} steps, best k = {} in {}; best k = {k1} at m = 1, {k27} at m = 27",
        opt2.1, opt2.0
    );
    c.verdict = Verdict::from_bool(opt2.0 < bin2 && k1 == 5 && k27 == 1);
    c.why = "each extra packet costs δr steps at the root, so fewer children win as m grows".into();
    out.push(c);

    let mut c = claim(
        4,
        "FPFS holds a packet k·t_ns, FCFS ((k−1)p + 1)·t_ns; FPFS is never slower than FCFS, \
         sometimes faster (n = 16, k = 2, m = 2: 7 vs 8 steps).",
        "[Sivaram 1998, §4.2, Fig 6]",
    );
    let (fp, _, hp) = steps(16, 2, 2, Forwarding::Fpfs)?;
    let (fc, _, hc) = steps(16, 2, 2, Forwarding::Fcfs)?;
    let mut never = true;
    for n in 2..=32 {
        for k in 1..=ceil_log2(n) {
            for m in 1..=6 {
                never &= steps(n, k, m, Forwarding::Fpfs)?.0 <= steps(n, k, m, Forwarding::Fcfs)?.0;
            }
        }
    }
    c.ours = format!(
        "{fp} vs {fc} steps; peak packets held per NI {hp} (FPFS) vs {hc} (FCFS); FPFS ≤ FCFS for every n ≤ 32, k, m ≤ 6: {never}"
    );
    c.verdict = Verdict::from_bool(fp == 7 && fc == 8 && never && hp < hc);
    c.why =
        "FPFS frees each packet after its k copies; FCFS keeps the message until the last child"
            .into();
    out.push(c);

    let mut c = claim(
        5,
        "Unicast-based multicast to n destinations needs at least ⌈log2(n+1)⌉ phases.",
        "[Sivaram 1998, §3.3]",
    );
    let ok = (1..=255).all(|n| {
        (1..=ceil_log2(n + 1).max(1)).map(|k| l1(n + 1, k)).min() == Some(ceil_log2(n + 1))
    });
    c.ours = format!(
        "fewest single-packet steps over every k-binomial tree = ⌈log2(n+1)⌉ for n ≤ 255: {ok}"
    );
    c.verdict = Verdict::from_bool(ok);
    c.why = "the set holding the message at most doubles per phase".into();
    out.push(c);
    Ok(out)
}

const ILLEGAL: &str = "illegal up*/down* branches (SSR, path and tree worms)";
const SSR_W: &str = "SSR worms";
const PATH_W: &str = "path worms";
const PHASES: [(&str, Scheme); 4] = [
    ("phases, SSR Greedy", Scheme::SsrGreedy),
    ("phases, SSR Less-Greedy", Scheme::SsrLessGreedy),
    ("phases, path Greedy", Scheme::PathGreedy),
    ("phases, path Less-Greedy", Scheme::PathLessGreedy),
];
const DUP_RW: &str = "extra tree-worm copies, header rewritten";
const DUP_NO: &str = "extra tree-worm copies, header not rewritten";
const UP_REP: &str = "tree-worm branches that split in the up phase";

/// The network, source and destinations of a draw, as [`Single`] draws them.
fn draw_of(s: &Single, draw: u32) -> Result<(Arc<IrregularRouting>, usize, Vec<usize>), String> {
    let SimFabric::Irregular(irr) = s.fabric(draw)? else {
        return Err("not an irregular fabric".into());
    };
    let mut rng = SplitMix64::new(s.seed ^ (u64::from(draw) << 32) ^ 0x5eed);
    let source = rng.below(s.nodes);
    let others: Vec<usize> = (0..s.nodes).filter(|&x| x != source).collect();
    let mut dests = SplitMix64::new(rng.next_u64()).sample(&others, s.dests);
    dests.sort_unstable();
    Ok((irr, source, dests))
}

/// One correctness count for one draw.
fn count(s: &Single, what: &str, draw: u32) -> Result<f64, String> {
    let (irr, src, dests) = draw_of(s, draw)?;
    let net: &SwitchNetwork = irr.fabric();
    let plan = |sc: Scheme| net.plan(sc, src, &dests).map_err(|e| e.to_string());
    let ud = net.updown();
    let illegal = |b: &[usize]| {
        let dirs: Vec<UpDownDir> = b.windows(2).map(|w| ud.dir(w[0], w[1])).collect();
        dirs.windows(2)
            .any(|d| d[0] == UpDownDir::Down && d[1] == UpDownDir::Up)
    };
    let tree = plan(Scheme::TreeWorm)?;
    let t = tree
        .sends
        .first()
        .ok_or("a tree-worm plan without a send")?;
    let trace = |rewrite| {
        net.trace_with(t.sender, &t.header, WormTraceOptions { pick: 0, rewrite })
            .map_err(|e| e.to_string())
    };
    Ok(match what {
        ILLEGAL => {
            let mut bad = 0;
            for sc in [
                Scheme::SsrLessGreedy,
                Scheme::PathLessGreedy,
                Scheme::TreeWorm,
            ] {
                for send in plan(sc)?.sends {
                    let tr = net
                        .trace(send.sender, &send.header)
                        .map_err(|e| e.to_string())?;
                    bad += tr.branches.iter().filter(|b| illegal(b)).count();
                }
            }
            bad as f64
        }
        SSR_W => plan(Scheme::SsrLessGreedy)?.sends.len() as f64,
        PATH_W => plan(Scheme::PathLessGreedy)?.sends.len() as f64,
        DUP_RW | DUP_NO => {
            let tr = trace(what == DUP_RW)?;
            let mut got = tr.delivered.clone();
            got.sort_unstable();
            got.dedup();
            if got != dests {
                return Err(format!("tree worm reached {got:?}, not {dests:?}"));
            }
            (tr.delivered.len() - dests.len()) as f64
        }
        UP_REP => {
            let tr = trace(true)?;
            let up = &tr.up_path;
            tr.branches.iter().filter(|b| !b.starts_with(up)).count() as f64
        }
        _ => {
            let sc = PHASES
                .iter()
                .find(|p| p.0 == what)
                .ok_or("unknown count")?
                .1;
            plan(sc)?.phases as f64
        }
    })
}

/// The correctness figures: worms, phases, and the oracle counts, against
/// the number of destinations (32 nodes on eight 8-port switches).
pub fn correctness_figures(base: &Single, s: &Sizes) -> Vec<FigureSpec> {
    let mk = |id: &str, title: &str, series: &[&'static str]| {
        let mut points = Vec::new();
        for &name in series {
            for &d in &s.dests {
                let single = Single {
                    dests: d,
                    ..base.clone()
                };
                points.push(PointSpec {
                    series: name.into(),
                    x: d as f64,
                    draws: s.topologies * s.dest_sets,
                    job: Box::new(move |draw| count(&single, name, draw)),
                });
            }
        }
        FigureSpec {
            meta: FigureMeta {
                id: id.into(),
                title: title.into(),
                x_label: "number of destinations".into(),
                y_label: "count per multicast".into(),
            },
            points,
        }
    };
    vec![
        mk("worms", "§5.2.6: worms per multicast", &[SSR_W, PATH_W]),
        mk(
            "phases",
            "§5.2.5: phases per multicast",
            &[PHASES[0].0, PHASES[1].0, PHASES[2].0, PHASES[3].0],
        ),
        mk(
            "oracle",
            "§5.2.4, §5.3: route and delivery oracles",
            &[ILLEGAL, DUP_RW, DUP_NO, UP_REP],
        ),
    ]
}

/// Per draw, is `a ≤ b` everywhere in `f`?
fn everywhere_le(f: &FigureResult, a: &str, b: &str) -> (usize, usize) {
    let (mut ok, mut n) = (0, 0);
    for x in f.xs(a) {
        for (u, v) in f.values(a, x).iter().zip(f.values(b, x)) {
            n += 1;
            ok += usize::from(*u <= v);
        }
    }
    (ok, n)
}

fn sum(f: &FigureResult, series: &str) -> f64 {
    f.samples
        .iter()
        .filter(|s| s.series == series)
        .map(|s| s.value)
        .sum()
}

/// Claims 6–10 from the correctness figures.
pub fn switch_claims(r: &Results) -> Vec<Claim> {
    let (Some(w), Some(p), Some(o)) = (r.get("worms"), r.get("phases"), r.get("oracle")) else {
        return Vec::new();
    };
    let n = o.samples.iter().filter(|s| s.series == ILLEGAL).count();
    let mut out = Vec::new();
    let mut c = claim(
        6,
        "Path worms over switches on a POC follow legal up*/down* paths.",
        "[Sivaram 1998, §5.2.4, Theorems 4–5]",
    );
    let bad = sum(o, ILLEGAL);
    c.ours = format!("{bad} illegal branches in {n} multicasts × (SSR, path, tree) worms, traced switch by switch");
    c.verdict = Verdict::from_bool(bad == 0.0);
    c.why = "POC order plus piece-wise minimal UD routing never turns up after down".into();
    c.figures = vec!["oracle".into()];
    out.push(c);

    let mut c = claim(
        7,
        "#path worms ≤ #SSR worms for any destination set.",
        "[Sivaram 1998, §5.2.6]",
    );
    let (ok, tot) = everywhere_le(w, PATH_W, SSR_W);
    c.ours = format!("path ≤ SSR in {ok} of {tot} multicasts");
    c.verdict = Verdict::from_bool(ok == tot);
    c.why = "a path worm can drop at every switch an SSR worm covers, and more".into();
    c.figures = vec!["worms".into()];
    out.push(c);

    let mut c = claim(
        8,
        "Greedy uses the fewest steps for a worm list; Less-Greedy may use more.",
        "[Sivaram 1998, §5.2.5, Figs 15–16]",
    );
    let (a, t1) = everywhere_le(p, PHASES[0].0, PHASES[1].0);
    let (b, t2) = everywhere_le(p, PHASES[2].0, PHASES[3].0);
    c.ours = format!(
        "Greedy ≤ Less-Greedy phases in {} of {} multicasts",
        a + b,
        t1 + t2
    );
    c.verdict = Verdict::from_bool(a + b == t1 + t2);
    c.why =
        "Greedy lets every holder start a worm each step; LG holds back to cut contention".into();
    c.figures = vec!["phases".into()];
    out.push(c);

    let mut c = claim(9, "A tree worm with restricted strings and header rewrite delivers exactly one copy per destination; without the rewrite, multiple down paths yield duplicates.", "[Sivaram 1998, §5.3.2, Fig 17]");
    let (rw, no) = (sum(o, DUP_RW), sum(o, DUP_NO));
    c.ours = format!("extra copies over {n} multicasts: {rw} with rewrite, {no} without");
    c.verdict = Verdict::from_bool(rw == 0.0 && no > 0.0);
    c.why = "the rewrite ANDs each copy's header with its port's exclusive string".into();
    c.figures = vec!["oracle".into()];
    out.push(c);

    let mut c = claim(10, "A tree worm's up phase ends where total reachability covers the header (at worst the root); no replication in the up phase.", "[Sivaram 1998, §5.3.3]");
    let up = sum(o, UP_REP);
    c.ours =
        format!("{up} branches split off in the up phase over {n} multicasts; every one delivered");
    c.verdict = Verdict::from_bool(up == 0.0);
    c.why =
        "the up/down bit keeps the worm whole until a switch reaches every destination downwards"
            .into();
    c.figures = vec!["oracle".into()];
    out.push(c);
    out
}
