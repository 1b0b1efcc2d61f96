//! The claims of [Robinson 1994]'s evaluations (§3.5 and §6.6), decided
//! from the measured figures.

use mcast_algorithms::ceil_log2;

use super::experiments::{CUBE, LENGTHS, TORUS, UNICAST};
use crate::repro::{Claim, FigureResult, Results};

const SRC: &str = "Robinson 1994";

fn claim(id: u32, statement: &str, section: &str, figures: &[&str]) -> Claim {
    Claim::pending(id, statement, format!("[{SRC}, {section}]"), figures)
}

/// `a` is below `b` at x by more than their two 95% intervals combined.
fn below(f: &FigureResult, a: &str, b: &str, x: f64) -> bool {
    match (f.stat(a, x), f.stat(b, x)) {
        (Some(u), Some(v)) => v.mean - u.mean > u.ci95.hypot(v.ci95),
        _ => false,
    }
}

/// The series with the lowest mean at x.
fn best(f: &FigureResult, x: f64) -> String {
    f.series()
        .into_iter()
        .min_by(|a, b| f.mean(a, x).total_cmp(&f.mean(b, x)))
        .unwrap_or_default()
}

/// Claim 1: the new algorithms reduce steps and smooth U-cube's staircase.
pub fn c1(r: &Results) -> Claim {
    let c = claim(
        1,
        "Maxport, Combine and W-sort reduce the steps of U-cube and smooth out its \
         staircase (U-cube takes exactly ⌈log2(m+1)⌉ steps).",
        "§3.5, Figs 3.10–3.11",
        &["fig3.10", "fig3.11"],
    );
    let (Some(a), Some(b)) = (r.get("fig3.10"), r.get("fig3.11")) else {
        return c;
    };
    let mut exact = true;
    let (mut fewer, mut points) = (0, 0);
    let mut above = Vec::new();
    let mut sums = [0.0f64; 4];
    for f in [a, b] {
        for x in f.xs("U-cube") {
            let m = x as usize;
            exact &= f
                .values("U-cube", x)
                .iter()
                .all(|&s| s as usize == ceil_log2(m + 1));
            for (i, (name, _)) in CUBE.iter().enumerate() {
                sums[i] += f.mean(name, x);
                if i > 0 && f.mean(name, x) > f.mean("U-cube", x) + 1e-9 {
                    above.push(format!("{name} at m = {m}"));
                }
            }
            points += 1;
            fewer += usize::from(f.mean("W-sort", x) < f.mean("U-cube", x) - 1e-9);
        }
    }
    let lower_on_average = sums[1..].iter().all(|&s| s <= sums[0]);
    Claim::decide(
        c,
        format!(
            "U-cube = ⌈log2(m+1)⌉ in every set: {exact}; summed over every m, each of the \
             others takes fewer steps than U-cube: {lower_on_average}; W-sort below U-cube \
             at {fewer} of {points} points; above U-cube's mean: {}",
            if above.is_empty() {
                "none".to_string()
            } else {
                above.join(", ")
            }
        ),
        exact && lower_on_average && fewer > points / 2,
        "U-cube's binomial split takes ⌈log2(m+1)⌉ steps whatever the set; all-port \
         algorithms start several unicasts a step, and lose only a fraction of a step \
         at the bottom of U-cube's staircase (m = 2^k − 1)",
    )
}

/// Claim 2: W-sort is significantly better than the others.
pub fn c2(r: &Results) -> Claim {
    let c = claim(
        2,
        "W-sort takes significantly fewer steps than Maxport and Combine (WeightedSort \
         moves destinations of crowded subcubes towards the root).",
        "§3.5, Figs 3.10–3.11",
        &["fig3.10", "fig3.11"],
    );
    let Some(f) = r.get("fig3.11") else { return c };
    let xs = f.xs("W-sort");
    let never_above = xs.iter().all(|&x| {
        f.mean("W-sort", x) <= f.mean("Maxport", x) + 1e-9
            && f.mean("W-sort", x) <= f.mean("Combine", x) + 1e-9
    });
    let sig = xs
        .iter()
        .filter(|&&x| below(f, "W-sort", "Maxport", x) && below(f, "W-sort", "Combine", x))
        .count();
    let mid = xs[xs.len() / 2];
    Claim::decide(
        c,
        format!(
            "10-cube: W-sort never above Maxport or Combine: {never_above}; significantly \
             below both at {sig} of {} points (m = {mid}: W-sort {:.2}, Maxport {:.2}, \
             Combine {:.2} steps)",
            xs.len(),
            f.mean("W-sort", mid),
            f.mean("Maxport", mid),
            f.mean("Combine", mid)
        ),
        never_above && sig >= 2,
        "migrating destinations of crowded subcubes towards the root shortens the \
         longest chain of steps",
    )
}

/// Claim 3: every curve meets at broadcast (n steps).
pub fn c3(r: &Results) -> Claim {
    let c = claim(
        3,
        "All curves converge at broadcast: every algorithm degenerates to the binomial \
         tree, n steps.",
        "§3.5, Figs 3.10–3.11",
        &["fig3.10", "fig3.11"],
    );
    let (Some(a), Some(b)) = (r.get("fig3.10"), r.get("fig3.11")) else {
        return c;
    };
    let ok = [(a, 6usize), (b, 10)].iter().all(|&(f, n)| {
        let x = ((1 << n) - 1) as f64;
        CUBE.iter().all(|(s, _)| f.mean(s, x) == n as f64)
    });
    Claim::decide(
        c,
        format!(
            "at m = 63 (6-cube): {:?}; at m = 1023 (10-cube): {:?}",
            CUBE.map(|(s, _)| a.mean(s, 63.0)),
            CUBE.map(|(s, _)| b.mean(s, 1023.0))
        ),
        ok,
        "with every node a destination there is one tree: the binomial",
    )
}

/// Claim 4: nCUBE-2 — all-port beats U-cube, no clear winner, U-cube's
/// multicast worse than its broadcast.
pub fn c4(r: &Results) -> Claim {
    let c = claim(
        4,
        "On the nCUBE-2 (5-cube, 4096 B): the all-port algorithms beat U-cube; no clear \
         winner among Maxport, Combine and W-sort (t_S ≈ 107 µs and t_R ≈ 80 µs dominate); \
         U-cube's average delay is higher for some multicasts than for broadcast.",
        "§3.5, Figs 3.12–3.13",
        &["fig3.12", "fig3.13"],
    );
    let Some(f) = r.get("fig3.12") else { return c };
    let xs: Vec<f64> = f.xs("U-cube").into_iter().filter(|&x| x < 31.0).collect();
    let beat = xs
        .iter()
        .filter(|&&x| {
            CUBE[1..]
                .iter()
                .all(|(s, _)| f.mean(s, x) <= f.mean("U-cube", x))
        })
        .count();
    // No clear winner: the three within 10% of each other at most points.
    let close = xs
        .iter()
        .filter(|&&x| {
            let v: Vec<f64> = CUBE[1..].iter().map(|(s, _)| f.mean(s, x)).collect();
            let (lo, hi) = v
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(l, h), &y| (l.min(y), h.max(y)));
            hi <= 1.1 * lo
        })
        .count();
    let bcast = f.mean("U-cube", 31.0);
    let above = xs.iter().filter(|&&x| f.mean("U-cube", x) > bcast).count();
    Claim::decide(
        c,
        format!(
            "m = 1…30: the three at or below U-cube at {beat}/{n}; within 10% of each other \
             at {close}/{n}; U-cube's average delay above its broadcast's ({bcast:.0} µs) at \
             {above}/{n}",
            n = xs.len()
        ),
        beat * 10 >= xs.len() * 8 && close * 10 >= xs.len() * 8 && above > 0,
        "each node sends on all its channels at once, but 107 µs to send and 80 µs to \
         receive each unicast dominate, so the trees differ little",
    )
}

/// Claim 5: on the simulated 10-cube W-sort's advantage is clear.
pub fn c5(r: &Results) -> Claim {
    let c = claim(
        5,
        "In the 10-cube simulation (4096 B) all new algorithms beat U-cube and W-sort's \
         advantage becomes clear, in average and maximum delay.",
        "§3.5, Figs 3.14–3.15",
        &["fig3.14", "fig3.15"],
    );
    let (Some(a), Some(m)) = (r.get("fig3.14"), r.get("fig3.15")) else {
        return c;
    };
    let xs: Vec<f64> = a
        .xs("W-sort")
        .into_iter()
        .filter(|&x| x > 1.0 && x < 1023.0)
        .collect();
    let count = |f: &FigureResult| {
        xs.iter()
            .filter(|&&x| below(f, "W-sort", "Maxport", x) && below(f, "W-sort", "Combine", x))
            .count()
    };
    let beat_u = xs
        .iter()
        .filter(|&&x| {
            CUBE[1..]
                .iter()
                .all(|(s, _)| a.mean(s, x) <= a.mean("U-cube", x))
        })
        .count();
    let (ca, cm) = (count(a), count(m));
    Claim::decide(
        c,
        format!(
            "m = 2…1022: the three at or below U-cube (average) at {beat_u}/{n}; W-sort \
             significantly below Maxport and Combine at {ca}/{n} (average), {cm}/{n} \
             (maximum)",
            n = xs.len()
        ),
        beat_u == xs.len() && ca * 2 >= xs.len() && cm * 2 >= xs.len(),
        "on a deep tree fewer steps pay off: each level costs a send overhead and a \
         4096-byte transfer",
    )
}

/// Mean of `series` at `x` in figure `id`.
fn at(r: &Results, id: &str, series: &str, x: f64) -> f64 {
    r.get(id).map_or(f64::NAN, |f| f.mean(series, x))
}

/// Claims 6 and 7: chapter 6's rankings, high and low startup.
pub fn c6_7(r: &Results) -> Vec<Claim> {
    let m = 512.0;
    let id = |fig: &str, l: u64| format!("fig{fig}-{l}");
    let mut out = Vec::new();
    let c = claim(
        6,
        "High startup (95/75 µs, 64×64): path-based beats unicast-based except for very \
         small messages; M_u(8) beats unicast-based even for small messages; M_u(8) is \
         best at 8 and 512 flits; S-torus is best at 16384 flits.",
        "§6.6, Fig 6.3",
        &["fig6.3-8", "fig6.3-512", "fig6.3-16384"],
    );
    if LENGTHS.iter().all(|&l| r.get(&id("6.3", l)).is_some()) {
        let f = |l| r.get(&id("6.3", l)).expect("checked");
        let b8 = best(f(8), m);
        let b512 = best(f(512), m);
        let b16k = best(f(16384), m);
        let path_beats = TORUS[..4]
            .iter()
            .all(|(s, _)| f(512).mean(s, m) < f(512).mean(UNICAST, m));
        let mu8_small = f(8).mean("Mu-torus(8)", m) < f(8).mean(UNICAST, m);
        out.push(Claim::decide(
            c,
            format!(
                "m = 512: best {b8} (8 flits), {b512} (512), {b16k} (16384); every path \
                 scheme below unicast-based at 512 flits: {path_beats}; M_u(8) below \
                 unicast-based at 8 flits: {mu8_small} ({:.0} vs {:.0} µs)",
                f(8).mean("Mu-torus(8)", m),
                f(8).mean(UNICAST, m)
            ),
            b8 == "Mu-torus(8)"
                && b512 == "Mu-torus(8)"
                && b16k == "S-torus"
                && path_beats
                && mu8_small,
            "a phase costs a send and a receive overhead, a worm's length costs flit time \
             on every destination it passes: few phases win when messages are long",
        ));
    } else {
        out.push(c);
    }
    let c = claim(
        7,
        "Low startup (10/8 µs, 64×64): unicast-based ≈ M_u(8) at 8 flits, worse at 512 and \
         16384 flits; S-torus is best at 16384 flits.",
        "§6.6, Fig 6.4",
        &["fig6.4-8", "fig6.4-512", "fig6.4-16384"],
    );
    if LENGTHS.iter().all(|&l| r.get(&id("6.4", l)).is_some()) {
        let f = |l| r.get(&id("6.4", l)).expect("checked");
        let ratio8 = f(8).mean(UNICAST, m) / f(8).mean("Mu-torus(8)", m);
        let worse = [512, 16384]
            .iter()
            .all(|&l| f(l).mean(UNICAST, m) > 1.2 * f(l).mean("Mu-torus(8)", m));
        let b16k = best(f(16384), m);
        out.push(Claim::decide(
            c,
            format!(
                "m = 512: unicast-based / M_u(8) = {ratio8:.2} at 8 flits; unicast-based more \
                 than 20% above M_u(8) at 512 and 16384: {worse}; best at 16384: {b16k}"
            ),
            (0.8..=1.25).contains(&ratio8) && worse && b16k == "S-torus",
            "with cheap startups the phases cost little until the message is long",
        ));
    } else {
        out.push(c);
    }
    out
}

/// Claim 8: S, M_d and M_u(64) improve on 3D.
pub fn c8(r: &Results) -> Claim {
    let c = claim(
        8,
        "On the 3D torus (16×16×16) S-torus, M_d-torus and M_u-torus(64) improve on \
         the 2D one (64×64): shorter paths in the denser network.",
        "§6.6, Figs 6.5–6.6",
        &["fig6.3-512", "fig6.5-512"],
    );
    if r.get("fig6.3-512").is_none() || r.get("fig6.5-512").is_none() {
        return c;
    }
    let names = ["S-torus", "Md-torus", "Mu-torus(64)"];
    let ratios: Vec<f64> = names
        .iter()
        .map(|s| at(r, "fig6.5-512", s, 512.0) / at(r, "fig6.3-512", s, 512.0))
        .collect();
    Claim::decide(
        c,
        format!(
            "3D / 2D average latency, high startup, 512 flits, m = 512: S {:.2}, M_d {:.2}, \
             M_u(64) {:.2}",
            ratios[0], ratios[1], ratios[2]
        ),
        ratios.iter().all(|&x| x < 1.0),
        "a worm's path through its destinations is shorter when the network's diameter \
         is (45 vs 126 hops)",
    )
}

/// Claim 9: message-length sensitivity grows with the phases.
pub fn c9(r: &Results) -> Claim {
    let c = claim(
        9,
        "Sensitivity to message length grows with the number of phases (Fig 6.7, m = 512): \
         S-torus (1 phase) is least affected, unicast-based (9 phases) most.",
        "§6.6, Fig 6.7",
        &["fig6.7"],
    );
    let Some(f) = r.get("fig6.7") else { return c };
    let growth = |s: &str| f.mean(s, 16384.0) - f.mean(s, 8.0);
    let g: Vec<(&str, f64)> = TORUS.iter().map(|(s, _)| (*s, growth(s))).collect();
    let least = g.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|x| x.0);
    let most = g.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|x| x.0);
    Claim::decide(
        c,
        format!(
            "added latency from 8 to 16384 flits (µs): {}",
            g.iter()
                .map(|(s, v)| format!("{s} {v:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        least == Some("S-torus") && most == Some(UNICAST),
        "each phase re-sends the whole message, so its flit time is paid once per phase",
    )
}

/// Claim 10: link visits, path < unicast, more so in 2D.
pub fn c10(r: &Results) -> Claim {
    let c = claim(
        10,
        "Path-based algorithms use fewer links than unicast-based, especially in 2D.",
        "§6.6, Fig 6.8",
        &["fig6.8-2d", "fig6.8-3d"],
    );
    let (Some(a), Some(b)) = (r.get("fig6.8-2d"), r.get("fig6.8-3d")) else {
        return c;
    };
    let fewer = |f: &FigureResult| {
        f.xs(UNICAST).iter().all(|&x| {
            TORUS[..4]
                .iter()
                .all(|(s, _)| f.mean(s, x) < f.mean(UNICAST, x))
        })
    };
    let ratio = |f: &FigureResult| f.mean(UNICAST, 512.0) / f.mean("S-torus", 512.0);
    Claim::decide(
        c,
        format!(
            "every path scheme below unicast-based at every m: 2D {}, 3D {}; unicast-based / \
             S-torus at m = 512: 2D {:.2}, 3D {:.2}",
            fewer(a),
            fewer(b),
            ratio(a),
            ratio(b)
        ),
        fewer(a) && fewer(b) && ratio(a) > ratio(b),
        "a worm that delivers on its way covers destinations with one path; unicasts \
         each take their own route from a holder",
    )
}
