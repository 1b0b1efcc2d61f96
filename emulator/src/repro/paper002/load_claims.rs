//! Paper 002's claims under load (C6–C12), decided from the load figures
//! ([`super::load`]).

use super::super::{Claim, FigureResult, Results, Verdict};
use super::claim;

const FOUR: [&str; 4] = ["DP", "MP", "CP", "QG"];

/// The highest mean accepted throughput of `s` over the offered loads.
fn sat(acc: &FigureResult, s: &str) -> f64 {
    acc.xs(s)
        .into_iter()
        .map(|x| acc.mean(s, x))
        .fold(0.0, f64::max)
}

fn lo(f: &FigureResult, s: &str) -> f64 {
    f.xs(s).first().copied().unwrap_or(f64::NAN)
}

fn hi(f: &FigureResult, s: &str) -> f64 {
    f.xs(s).last().copied().unwrap_or(f64::NAN)
}

/// `legend value` for every series, at `x` (or the saturation throughput
/// when `x` is None).
fn list(f: &FigureResult, series: &[&str], x: Option<f64>, digits: usize) -> String {
    series
        .iter()
        .map(|s| {
            let v = match x {
                Some(x) => f.mean(s, x),
                None => sat(f, s),
            };
            format!("{s} {v:.digits$}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One load setting against "QG best under load": (what we found, holds).
fn setting(r: &Results, id: &str, name: &str, qg: &str) -> Option<(String, bool, bool)> {
    let (lat, acc) = (r.get(id)?, r.get(&format!("{id}-acc"))?);
    let series = ["DP", "MP", "CP", qg];
    let (l, h) = (lo(lat, qg), hi(lat, qg));
    let m = |s: &str, x: f64| lat.mean(s, x);
    let dpmp_first = m("DP", l).max(m("MP", l)) < m(qg, l).min(m("CP", l));
    let mp_le_dp = m("MP", l) <= m("DP", l);
    let qg_sat = series.iter().all(|s| sat(acc, qg) >= sat(acc, s));
    let qg_hi = series.iter().all(|s| m(qg, h) <= m(s, h));
    let qg_over_dpmp = sat(acc, qg) > sat(acc, "DP").max(sat(acc, "MP"));
    let ours = format!(
        "{name}: latency at {l}: {}; saturation throughput: {}; latency at {h}: {}",
        list(lat, &series, Some(l), 0),
        list(acc, &series, None, 3),
        list(lat, &series, Some(h), 0)
    );
    Some((
        ours,
        dpmp_first && mp_le_dp && qg_sat && qg_hi,
        qg_over_dpmp,
    ))
}

/// C8 and C9: multicast-only load sweeps.
fn sweeps(r: &Results) -> Vec<Claim> {
    let mut out = Vec::new();
    for (id, statement, section, figs, qg) in [
        (
            8,
            "Multiple multicasts: at low load DP and MP beat QG and CP (MP slightly better); \
             QG and CP degrade more slowly; at high load, and already at k = 20, QG has the \
             lowest latency and the highest saturation throughput.",
            "§4.2.3, Figs 15–16",
            &[
                ("fig15a", "10×10 k = 10"),
                ("fig15b", "10×10 k = 20"),
                ("fig16a", "16×16 k = 10"),
                ("fig16b", "16×16 k = 20"),
            ][..],
            "QG",
        ),
        (
            9,
            "The same holds with QG's preparation at 45 cycles, and up to 50.",
            "§4.2.3, Figs 17–18",
            &[("fig17", "10×10 k = 10"), ("fig18", "16×16 k = 10")][..],
            "QG (prep 45)",
        ),
    ] {
        let ids: Vec<&str> = figs.iter().map(|f| f.0).collect();
        let c = claim(id, statement, section, &ids);
        let found: Option<Vec<_>> = figs.iter().map(|(f, n)| setting(r, f, n, qg)).collect();
        let Some(found) = found else {
            out.push(c);
            continue;
        };
        let holds = found.iter().all(|f| f.1);
        let over = found.iter().filter(|f| f.2).count();
        let ours = found
            .iter()
            .map(|f| f.0.clone())
            .collect::<Vec<_>>()
            .join(" | ");
        let why = format!(
            "low load orders as the paper says (one start-up for DP and MP); QG out-carries DP \
             and MP in {over} of {} settings (fewer channels per multicast), but column-path \
             saturates last: its XY worms use both directions of every link and leave the \
             source by one short worm per column, while DP, MP and QG worms are confined to \
             the label-monotone subnetworks of R (the only routing of theirs that is \
             deadlock-free with one channel per link) and QG pays two start-ups and two \
             message pipelines per multicast",
            found.len()
        );
        out.push(c.decide(ours, holds, &why));
    }
    out
}

/// C10: mixed traffic.
fn mixed(r: &Results) -> Claim {
    let c = claim(
        10,
        "10% multicast, 90% unicast: light load QG ≈ DP ≈ MP, CP worse; heavy load QG \
         best, CP second, QG's margin over CP growing from k = 10 to 20.",
        "§4.2.4, Figs 19–20",
        &["fig19", "fig20"],
    );
    let get = |id: &str| Some((r.get(id)?, r.get(&format!("{id}-acc"))?));
    let (Some((l10, a10)), Some((l20, a20))) = (get("fig19"), get("fig20")) else {
        return c;
    };
    let mut ok = true;
    let mut parts = Vec::new();
    for (name, lat, acc) in [("k = 10", l10, a10), ("k = 20", l20, a20)] {
        let (l, h) = (lo(lat, "QG"), hi(lat, "QG"));
        let three: Vec<f64> = ["QG", "DP", "MP"].iter().map(|s| lat.mean(s, l)).collect();
        let (mn, mx) = three
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        let light = mx <= 1.15 * mn && lat.mean("CP", l) > mx;
        let order = {
            let mut v = FOUR.to_vec();
            v.sort_by(|a, b| sat(acc, b).total_cmp(&sat(acc, a)));
            v
        };
        let heavy = order[0] == "QG" && order[1] == "CP" && lat.mean("QG", h) <= lat.mean("CP", h);
        ok &= light && heavy;
        parts.push(format!(
            "{name}: latency at {l}: {}; saturation throughput: {} (order {})",
            list(lat, &FOUR, Some(l), 0),
            list(acc, &FOUR, None, 3),
            order.join(" > ")
        ));
    }
    let margin = |acc: &FigureResult| sat(acc, "QG") / sat(acc, "CP");
    ok &= margin(a20) > margin(a10);
    parts.push(format!(
        "QG / CP saturation throughput: {:.2} (k = 10), {:.2} (k = 20)",
        margin(a10),
        margin(a20)
    ));
    c.decide(
        parts.join(" | "),
        ok,
        "with 90% unicasts every scheme carries much more; the unicasts follow the \
         multicast worms' routing function (R, or XY beside CP), and CP's XY worms again \
         leave the most room",
    )
}

/// C6 and C7: jitter under load.
fn jitter(r: &Results) -> Vec<Claim> {
    let c6 = claim(
        6,
        "Jitter: CV_QG < CV_MP < CV_DP < CV_CP at every k; CV_QG ≈ 0.26–0.28 (16×16), \
         0.30–0.34 (32×32), nearly flat in k; the others rise with k and mesh size (mean \
         inter-arrival 250 cycles).",
        "§4.2.2, Tables 4–5",
        &["cv-load-16", "cv-load-32"],
    );
    let c7 = claim(
        7,
        "QG's CV advantage is larger on 32×32 than on 16×16 at the same k.",
        "§4.2.2, Tables 4–5",
        &["cv-load-16", "cv-load-32"],
    );
    let (Some(a), Some(b)) = (r.get("cv-load-16"), r.get("cv-load-32")) else {
        return vec![c6, c7];
    };
    let mut order_ok = true;
    let mut rise_ok = true;
    let mut parts = Vec::new();
    let (mut cells, mut qg_low) = (0, 0);
    for (name, f) in [("16×16", a), ("32×32", b)] {
        let xs = f.xs("QG");
        let mut orders = Vec::new();
        for &x in &xs {
            let mut v = FOUR.to_vec();
            v.sort_by(|p, q| f.mean(p, x).total_cmp(&f.mean(q, x)));
            order_ok &= v == ["QG", "MP", "DP", "CP"];
            cells += 1;
            qg_low += usize::from(v[0] == "QG");
            orders.push(format!("k = {x}: {}", v.join(" < ")));
        }
        let (x0, x1) = (
            xs.first().copied().unwrap_or(0.0),
            xs.last().copied().unwrap_or(0.0),
        );
        let flat = f.mean("QG", x1) <= 1.15 * f.mean("QG", x0);
        let rise = ["MP", "DP", "CP"]
            .iter()
            .all(|s| f.mean(s, x1) > f.mean(s, x0));
        rise_ok &= flat && rise;
        parts.push(format!(
            "{name}: {}; k = {x0}: {}; k = {x1}: {}",
            orders.join(", "),
            list(f, &["QG", "MP", "DP", "CP"], Some(x0), 3),
            list(f, &["QG", "MP", "DP", "CP"], Some(x1), 3)
        ));
    }
    let why6 = format!(
        "QG has the lowest CV in {qg_low} of {cells} cells; QG's worms stay inside compact \
         groups, so with many destinations they are reached at similar times, but with few \
         its two steps spread the arrivals as much as one dual-path sweep (as in the \
         contention-free model). The paper's 250-cycle inter-arrival saturates every scheme \
         here, so the runs use 0.001 (16×16) and 0.0003 (32×32) flits/cycle/node"
    );
    let c6 = c6.decide(parts.join(" | "), order_ok && rise_ok, &why6);
    // C7: (CV_other − CV_QG) / CV_QG, the paper's QG_IMPR, per k.
    let impr =
        |f: &FigureResult, s: &str, x: f64| (f.mean(s, x) - f.mean("QG", x)) / f.mean("QG", x);
    let mut larger = true;
    let mut cells = Vec::new();
    let mut held = Vec::new();
    for s in ["DP", "MP", "CP"] {
        let mut all = true;
        for x in a.xs("QG") {
            let (i16, i32) = (impr(a, s, x), impr(b, s, x));
            all &= i32 > i16;
            cells.push(format!(
                "{s} k = {x}: {:.0}% → {:.0}%",
                100.0 * i16,
                100.0 * i32
            ));
        }
        larger &= all;
        if all {
            held.push(s);
        }
    }
    let why7 = format!(
        "larger at every k against {}: on the larger mesh dual-path and multipath sweep \
         longer paths, so their arrivals spread further while QG's groups keep its worms \
         short; column-path's CV is about 0.5 on both meshes (one worm per column, in \
         rounds)",
        if held.is_empty() {
            "none".to_string()
        } else {
            held.join(" and ")
        }
    );
    let c7 = c7.decide(
        format!("QG's improvement, 16×16 → 32×32: {}", cells.join(", ")),
        larger,
        &why7,
    );
    vec![c6, c7]
}

/// C11: TD under load.
fn threshold(r: &Results) -> Claim {
    let c = claim(
        11,
        "TD = 0.5 beats 0.2 (more groups, preparation, traffic) and 0.8 (large unbalanced \
         groups) overall.",
        "§3, §4.2",
        &["td-load"],
    );
    let (Some(lat), Some(acc)) = (r.get("td-load"), r.get("td-load-acc")) else {
        return c;
    };
    let s = ["QG (TD = 0.2)", "QG (TD = 0.5)", "QG (TD = 0.8)"];
    let l = lo(lat, s[1]);
    let h = hi(acc, s[1]);
    // Beats: higher accepted throughput at the highest load, beyond both
    // confidence intervals.
    let beats = |o: &str| match (acc.stat(s[1], h), acc.stat(o, h)) {
        (Some(a), Some(b)) => a.mean - a.ci95 > b.mean + b.ci95,
        _ => false,
    };
    let (b2, b8) = (beats(s[0]), beats(s[2]));
    let ci = |x: &str| acc.stat(x, h).map_or(0.0, |t| t.ci95);
    c.decide(
        format!(
            "10×10, k = 20: latency at {l}: {}; accepted throughput at {h}: {}",
            list(lat, &s, Some(l), 0),
            s.iter()
                .map(|x| format!("{x} {:.3} ± {:.3}", acc.mean(x, h), ci(x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        b2 && b8,
        &format!(
            "TD = 0.5 carries significantly more than 0.2: {b2}, than 0.8: {b8}; TD sets \
             how far QG splits its groups (0.2: more groups and start-ups at \
             representatives; 0.8: fewer, larger groups with longer worms)"
        ),
    )
}

/// Every claim under load, C6–C12.
pub(super) fn claims(r: &Results) -> Vec<Claim> {
    let mut v = jitter(r);
    v.extend(sweeps(r));
    v.push(mixed(r));
    v.push(threshold(r));
    let mut c12 = claim(
        12,
        "The source is held only during QG's first step, so it is less of a hot spot \
         than in DP, MP and CP.",
        "§4.2.3",
        &[],
    );
    c12.verdict = Verdict::NotCheckable(
        "how long each source's injection channels are held per multicast: the load runs \
         record latencies and throughput, not per-channel hold times"
            .into(),
    );
    c12.why = "the claim is a mechanism, not a curve; Figs 15–18 show its effect".into();
    v.push(c12);
    v
}
