//! `mcsim plan` end to end: the worked examples of [Robinson 1994, chs. 3–6, worked figures], every
//! algorithm on a fabric it runs on, the irregular worm schemes on a
//! 1024-node network, and the bad-input contract (exit 2, one line).
//!
//! Every run of the binary is bounded by [`LIMIT`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const MCSIM: &str = env!("CARGO_BIN_EXE_mcsim");
/// The most any single `mcsim` process may take.
const LIMIT: Duration = Duration::from_secs(30);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

fn mcsim(args: &[&str]) -> Run {
    let start = Instant::now();
    let mut child = Command::new(MCSIM)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcsim");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).map(|_| s)
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).map(|_| s)
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcsim {args:?} took longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = start.elapsed();
    Run {
        code: status.code(),
        stdout: out_t.join().expect("join").expect("read stdout"),
        stderr: err_t.join().expect("join").expect("read stderr"),
        elapsed,
    }
}

/// Run `mcsim plan ARGS`, require success, and return the parsed plan after
/// the generic checks of [`check_plan`].
fn plan(args: &[&str]) -> Value {
    let mut full = vec!["plan"];
    full.extend_from_slice(args);
    let r = mcsim(&full);
    assert_eq!(
        r.code,
        Some(0),
        "mcsim {full:?} failed: {}",
        r.stderr.trim_end()
    );
    assert!(r.stderr.is_empty(), "stderr: {}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("output is JSON");
    check_plan(&v);
    v
}

fn key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn receivers(send: &Value) -> Vec<String> {
    match &send["to"] {
        Value::Array(a) => a.iter().map(key).collect(),
        v => vec![key(v)],
    }
}

/// Checks every plan must pass, whatever the algorithm.
fn check_plan(p: &Value) {
    for f in [
        "algorithm",
        "fabric",
        "source",
        "destinations",
        "steps",
        "sends",
        "contention",
    ] {
        assert!(p.get(f).is_some(), "missing field {f} in {p}");
    }
    for f in ["stepwise", "depth", "link_type1", "link_type2"] {
        let c = &p["contention"][f];
        assert!(c.is_u64() || c.is_null(), "contention.{f} = {c}");
    }
    let source = key(&p["source"]);
    let dests: Vec<String> = p["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    let dest_set: BTreeSet<&String> = dests.iter().collect();
    assert_eq!(dest_set.len(), dests.len(), "destinations repeat");
    assert!(!dest_set.contains(&source));
    let sends = p["sends"].as_array().unwrap();
    // Every destination exactly once, nobody else, senders received earlier.
    let mut got: HashMap<String, u64> = HashMap::new();
    let mut last_step = 0;
    for s in sends {
        let step = s["step"].as_u64().unwrap();
        assert!(step >= 1 && step >= last_step, "sends are by step");
        last_step = step;
        let from = key(&s["from"]);
        if from != source {
            let t = got.get(&from).copied();
            assert!(
                t.is_some_and(|t| t < step),
                "{from} sends in step {step} but received in {t:?}"
            );
        }
        let to = receivers(s);
        assert!(!to.is_empty());
        let covers: BTreeSet<String> = s["covers"].as_array().unwrap().iter().map(key).collect();
        for r in &to {
            assert!(dest_set.contains(r), "{r} is not a destination");
            assert!(covers.contains(r), "covers of a send to {r} lacks it");
            assert!(got.insert(r.clone(), step).is_none(), "{r} receives twice");
        }
        if s.get("worm").is_some() {
            let mut d: Vec<String> = s["delivers"].as_array().unwrap().iter().map(key).collect();
            d.sort_by_key(|x| x.parse::<u64>().unwrap());
            assert_eq!(d, to, "delivers and to differ");
            assert!(!s["route"].as_array().unwrap().is_empty());
        }
    }
    assert_eq!(got.len(), dests.len(), "some destination never receives");
    assert_eq!(p["steps"].as_u64().unwrap(), last_step);
}

/// The sends as (step, from, to) triples.
fn schedule(p: &Value) -> BTreeSet<(u64, String, String)> {
    p["sends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_u64().unwrap(), key(&s["from"]), key(&s["to"])))
        .collect()
}

fn sched(rows: &[(u64, &str, &str)]) -> BTreeSet<(u64, String, String)> {
    rows.iter()
        .map(|&(t, a, b)| (t, a.to_string(), b.to_string()))
        .collect()
}

/// The `covers` of the send to `to`, as a set.
fn covers_of(p: &Value, to: &str) -> BTreeSet<String> {
    let s = p["sends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| key(&s["to"]) == to)
        .unwrap_or_else(|| panic!("no send to {to}"));
    s["covers"].as_array().unwrap().iter().map(key).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn steps(p: &Value) -> u64 {
    p["steps"].as_u64().unwrap()
}

fn contention(p: &Value, f: &str) -> Option<u64> {
    p["contention"][f].as_u64()
}

// ------------------------------------------------- [Robinson 1994, §3.1, §3.4, Figs 3.1, 3.2, 3.9; §3.3, Fig 3.4; §3.3, Fig 3.6]

const CUBE_71: &str = "0001;0011;0101;0111;1011;1100;1110;1111";

fn cube71(algo: &str, port: &str) -> Value {
    plan(&[
        "--fabric",
        "hypercube:4",
        "--algo",
        algo,
        "--source",
        "0000",
        "--dests",
        CUBE_71,
        "--port-model",
        port,
    ])
}

#[test]
fn thesis_4cube_ucube_one_port() {
    let p = cube71("ucube", "one");
    assert_eq!(steps(&p), 4);
    assert_eq!(
        schedule(&p),
        sched(&[
            (1, "0000", "0111"),
            (2, "0000", "0011"),
            (2, "0111", "1100"),
            (3, "0000", "0001"),
            (3, "0011", "0101"),
            (3, "0111", "1011"),
            (3, "1100", "1110"),
            (4, "1110", "1111"),
        ])
    );
    assert_eq!(p["source"], "0000");
    assert_eq!(p["algorithm"], "ucube");
    assert_eq!(p["fabric"], "hypercube:4");
}

#[test]
fn thesis_4cube_all_port() {
    // Model B (our all-port default) and Model A agree on all four ([Robinson 1994, §3.1, §3.4, Figs 3.1, 3.2, 3.9]).
    for port in ["all", "all-a"] {
        let u = cube71("ucube", port);
        assert_eq!(steps(&u), 4, "ucube {port}");
        assert_eq!(
            schedule(&u),
            sched(&[
                (1, "0000", "0111"),
                (1, "0000", "0011"),
                (1, "0000", "0001"),
                (2, "0011", "0101"),
                (2, "0111", "1100"),
                (3, "0111", "1011"),
                (3, "1100", "1110"),
                (4, "1110", "1111"),
            ])
        );

        let m = cube71("maxport", port);
        assert_eq!(steps(&m), 4, "maxport {port}");
        assert_eq!(
            schedule(&m),
            sched(&[
                (1, "0000", "1011"),
                (1, "0000", "0101"),
                (1, "0000", "0011"),
                (1, "0000", "0001"),
                (2, "0101", "0111"),
                (2, "1011", "1100"),
                (3, "1100", "1110"),
                (4, "1110", "1111"),
            ])
        );
        assert_eq!(
            covers_of(&m, "1011"),
            set(&["1011", "1100", "1110", "1111"])
        );
        assert_eq!(covers_of(&m, "0101"), set(&["0101", "0111"]));
        assert_eq!(covers_of(&m, "1100"), set(&["1100", "1110", "1111"]));

        let c = cube71("combine", port);
        assert_eq!(steps(&c), 3, "combine {port}");
        assert_eq!(
            schedule(&c),
            sched(&[
                (1, "0000", "1011"),
                (1, "0000", "0101"),
                (1, "0000", "0011"),
                (1, "0000", "0001"),
                (2, "0101", "0111"),
                (2, "1011", "1110"),
                (3, "1011", "1100"),
                (3, "1110", "1111"),
            ])
        );

        let w = cube71("wsort", port);
        assert_eq!(steps(&w), 2, "wsort {port}");
        assert_eq!(
            schedule(&w),
            sched(&[
                (1, "0000", "1110"),
                (1, "0000", "0101"),
                (1, "0000", "0011"),
                (1, "0000", "0001"),
                (2, "1110", "1011"),
                (2, "1110", "1100"),
                (2, "1110", "1111"),
                (2, "0101", "0111"),
            ])
        );
        // R_1110 = {1110, 1011, 1100, 1111} (T).
        assert_eq!(
            covers_of(&w, "1110"),
            set(&["1110", "1011", "1100", "1111"])
        );
        for p in [&u, &m, &c, &w] {
            assert_eq!(contention(p, "stepwise"), Some(0));
        }
    }
}

#[test]
fn thesis_4cube_other_source_and_fig_3_6() {
    // [Robinson 1994, §3.3, Fig 3.4]: source 0100, the same relative problem; one-port U-cube, 4 steps.
    let p = plan(&[
        "--fabric",
        "hypercube:4",
        "--algo",
        "ucube",
        "--source",
        "0100",
        "--dests",
        "0001;0011;0101;0111;1000;1010;1011;1111",
    ]);
    assert_eq!(steps(&p), 4);
    assert_eq!(
        schedule(&p),
        sched(&[
            (1, "0100", "0011"),
            (2, "0100", "0111"),
            (2, "0011", "1000"),
            (3, "0100", "0101"),
            (3, "0111", "0001"),
            (3, "0011", "1111"),
            (3, "1000", "1010"),
            (4, "1010", "1011"),
        ])
    );
    // [Robinson 1994, §3.3, Fig 3.6]: Maxport 3 steps (a chain); U-cube and Combine all-port 2 steps.
    let run = |algo: &str| {
        plan(&[
            "--fabric",
            "hypercube:4",
            "--algo",
            algo,
            "--source",
            "0000",
            "--dests",
            "1001;1010;1011",
            "--port-model",
            "all",
        ])
    };
    let m = run("maxport");
    assert_eq!(steps(&m), 3);
    assert_eq!(covers_of(&m, "1001"), set(&["1001", "1010", "1011"]));
    let u = run("ucube");
    assert_eq!(steps(&u), 2);
    assert_eq!(
        schedule(&u),
        sched(&[
            (1, "0000", "1010"),
            (2, "0000", "1001"),
            (2, "1010", "1011"),
        ])
    );
    assert_eq!(schedule(&run("combine")), schedule(&u));
}

// ------------------------------------------------- [Robinson 1994, §4.3–4.4, Figs 4.4–4.5; §4.4, Fig 4.10]

#[test]
fn thesis_5x5_uni_torus_utorus() {
    let p = plan(&[
        "--fabric",
        "torus:5x5:uni",
        "--algo",
        "utorus",
        "--source",
        "4,3",
        "--dests",
        "0,0;1,1;2,1;0,3;1,3;4,4",
    ]);
    assert_eq!(steps(&p), 3); // ceil(log2 7)
    assert_eq!(
        schedule(&p),
        sched(&[
            (1, "4,3", "1,1"),
            (2, "4,3", "0,0"),
            (2, "1,1", "2,1"),
            (3, "4,3", "4,4"),
            (3, "1,1", "1,3"),
            (3, "0,0", "0,3"),
        ])
    );
    assert_eq!(covers_of(&p, "1,1"), set(&["1,1", "1,3", "2,1"]));
    assert_eq!(covers_of(&p, "0,0"), set(&["0,0", "0,3"]));
    // Zero stepwise and zero depth contention (Theorem 4.1).
    assert_eq!(contention(&p, "stepwise"), Some(0));
    assert_eq!(contention(&p, "depth"), Some(0));
    assert_eq!(p["fabric"], "torus:5x5:uni");
    assert_eq!(p["source"], "4,3");
    // Destinations printed in node-id order, in the papers' notation.
    let d: Vec<&str> = p["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(d, ["0,0", "0,3", "1,1", "1,3", "2,1", "4,4"]);
    // The parenthesised form of the papers is accepted too.
    let q = plan(&[
        "--fabric",
        "torus:5x5:uni",
        "--algo",
        "utorus",
        "--source",
        "(4, 3)",
        "--dests",
        "(0,0);(1,1);(2,1);(0,3);(1,3);(4,4)",
    ]);
    assert_eq!(schedule(&q), schedule(&p));
}

#[test]
fn thesis_3d_torus_utorus() {
    // [Robinson 1994, §4.4, Fig 4.10] on a 10x10x10 torus: 4 steps, the source sends 4 messages, no
    // contention under UTR or BTR.
    let dests = "4,9,3;1,9,7;1,0,2;8,5,4;4,8,9;9,0,5;3,5,5;9,0,1;8,0,5;1,6,4";
    for fabric in ["torus:10x10x10:uni", "torus:10x10x10"] {
        let p = plan(&[
            "--fabric", fabric, "--algo", "utorus", "--source", "8,4,5", "--dests", dests,
        ]);
        assert_eq!(steps(&p), 4, "{fabric}");
        let from_source = schedule(&p).iter().filter(|(_, f, _)| f == "8,4,5").count();
        assert_eq!(from_source, 4);
        assert_eq!(
            covers_of(&p, "1,9,7"),
            set(&["1,9,7", "3,5,5", "4,8,9", "4,9,3", "8,0,5"])
        );
        assert_eq!(contention(&p, "stepwise"), Some(0), "{fabric}");
        assert_eq!(contention(&p, "depth"), Some(0), "{fabric}");
    }
}

// ------------------------------------------------- every algorithm

/// A deterministic pseudo-random subset of `0..n` without `skip`.
fn subset(n: usize, count: usize, skip: usize, seed: u64) -> Vec<usize> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut pool: Vec<usize> = (0..n).filter(|&i| i != skip).collect();
    for i in (1..pool.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        pool.swap(i, (x % (i as u64 + 1)) as usize);
    }
    pool.truncate(count);
    pool
}

/// `id` in the papers' notation for a torus/mesh with `radices` (highest
/// first) or a hypercube of `bits` bits.
fn notation(id: usize, radices: &[usize], cube: bool) -> String {
    if cube {
        let n = radices.len();
        (0..n)
            .rev()
            .map(|i| if id >> i & 1 == 1 { '1' } else { '0' })
            .collect()
    } else {
        let mut coords = Vec::new();
        let mut rest = id;
        for &k in radices.iter().rev() {
            coords.push(rest % k);
            rest /= k;
        }
        coords
            .iter()
            .rev()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[test]
fn every_algorithm_on_a_suitable_fabric() {
    let common = [
        "separate",
        "dochain",
        "utorus",
        "kbinomial",
        "kbinomial:1",
        "kbinomial:2",
        "binomial",
    ];
    let cube_only = ["ucube", "maxport", "combine", "wsort"];
    let h_cycle = ["mdtorus", "mutorus:2", "mutorus:3", "mutorus:3:length"];
    // (fabric, radices high first, hypercube?, algorithms)
    let fabrics: Vec<(&str, Vec<usize>, bool, Vec<&str>)> = vec![
        (
            "torus:5x5",
            vec![5, 5],
            false,
            [&common[..], &h_cycle[..]].concat(),
        ),
        (
            "torus:4x4:uni",
            vec![4, 4],
            false,
            [&common[..], &h_cycle[..]].concat(),
        ),
        (
            "torus:3x3x3",
            vec![3, 3, 3],
            false,
            [&common[..], &h_cycle[..]].concat(),
        ),
        ("torus:3x5", vec![3, 5], false, common.to_vec()),
        ("mesh:4x4", vec![4, 4], false, common.to_vec()),
        (
            "hypercube:4",
            vec![2; 4],
            true,
            [&common[..], &cube_only[..]].concat(),
        ),
        (
            "hypercube:5:low-to-high",
            vec![2; 5],
            true,
            [&common[..], &cube_only[..]].concat(),
        ),
    ];
    let mut runs = 0;
    for (fabric, radices, cube, algos) in &fabrics {
        let n: usize = radices.iter().product();
        for (case, &(source, count)) in [(0, n - 1), (n / 2, n / 3), (n - 1, 1)].iter().enumerate()
        {
            let src = notation(source, radices, *cube);
            let dests = subset(n, count, source, case as u64 + 7)
                .into_iter()
                .map(|d| notation(d, radices, *cube))
                .collect::<Vec<_>>()
                .join(";");
            for algo in algos {
                for port in ["one", "all", "all-a"] {
                    let p = plan(&[
                        "--fabric",
                        fabric,
                        "--algo",
                        algo,
                        "--source",
                        &src,
                        "--dests",
                        &dests,
                        "--port-model",
                        port,
                        "--compact",
                    ]);
                    assert_eq!(p["destinations"].as_array().unwrap().len(), count);
                    assert_eq!(p["port_model"], port);
                    for f in ["stepwise", "depth", "link_type1", "link_type2"] {
                        assert!(contention(&p, f).is_some(), "{fabric} {algo}: {f}");
                    }
                    runs += 1;
                }
            }
        }
    }
    assert!(runs > 300);
}

#[test]
fn kbinomial_k_follows_packets() {
    let dests: Vec<String> = (1..64).map(|i| notation(i, &[8, 8], false)).collect();
    let dests = dests.join(";");
    for packets in [1usize, 4, 32, 1000] {
        let ps = packets.to_string();
        let p = plan(&[
            "--fabric",
            "torus:8x8",
            "--algo",
            "kbinomial",
            "--source",
            "0,0",
            "--dests",
            &dests,
            "--packets",
            &ps,
        ]);
        let k = p["k"].as_u64().unwrap() as usize;
        assert_eq!(
            k,
            mcast_algorithms::optimal_k(64, packets),
            "{packets} packets"
        );
        assert_eq!(p["packets"].as_u64().unwrap() as usize, packets);
        assert_eq!(p["algorithm"], "kbinomial");
    }
    let b = plan(&[
        "--fabric",
        "torus:8x8",
        "--algo",
        "binomial",
        "--source",
        "0,0",
        "--dests",
        &dests,
    ]);
    assert_eq!(b["k"], 6);
    assert_eq!(steps(&b), 6);
}

// ------------------------------------------------- irregular fabrics

const BIG: &str = "irregular:switches=128,ports=16,nodes=1024,connectivity=0.8,seed=3";
const IRREGULAR_ALGOS: [&str; 9] = [
    "ssr-greedy",
    "ssr-lg",
    "path-greedy",
    "path-lg",
    "tree-worm",
    "binomial",
    "kbinomial",
    "kbinomial:3",
    "separate",
];

fn hosts(ids: &[usize]) -> String {
    ids.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(";")
}

#[test]
fn irregular_1024_nodes_answer_quickly() {
    let broadcast: Vec<usize> = (0..1024).filter(|&d| d != 5).collect();
    let part = subset(1024, 300, 5, 11);
    for (dests, n) in [(hosts(&broadcast), 1023usize), (hosts(&part), 300)] {
        let mut by_algo: BTreeMap<&str, Value> = BTreeMap::new();
        for algo in IRREGULAR_ALGOS {
            let args = [
                "plan",
                "--fabric",
                BIG,
                "--algo",
                algo,
                "--source",
                "5",
                "--dests",
                &dests,
                "--compact",
            ];
            let r = mcsim(&args);
            assert_eq!(r.code, Some(0), "{algo}: {}", r.stderr);
            assert!(
                r.elapsed < Duration::from_secs(5),
                "{algo} on {n} destinations took {:?}",
                r.elapsed
            );
            let p: Value = serde_json::from_str(&r.stdout).unwrap();
            check_plan(&p);
            assert_eq!(p["fabric"], BIG);
            assert_eq!(p["source"], 5);
            assert_eq!(p["destinations"].as_array().unwrap().len(), n);
            assert!(contention(&p, "stepwise").is_some());
            assert!(p["contention"]["depth"].is_null());
            by_algo.insert(algo, p);
        }
        let worms = |a: &str| by_algo[a]["sends"].as_array().unwrap().len();
        // Path worms never outnumber SSR worms; one tree worm, one phase.
        assert!(worms("path-greedy") <= worms("ssr-greedy"));
        assert_eq!(worms("ssr-greedy"), worms("ssr-lg"));
        assert_eq!(worms("tree-worm"), 1);
        assert_eq!(steps(&by_algo["tree-worm"]), 1);
        assert!(steps(&by_algo["ssr-greedy"]) <= steps(&by_algo["ssr-lg"]));
        assert!(steps(&by_algo["path-greedy"]) <= steps(&by_algo["path-lg"]));
        // The unicast trees have one send per destination.
        for a in ["binomial", "kbinomial", "kbinomial:3", "separate"] {
            assert_eq!(worms(a), n, "{a}");
            for s in by_algo[a]["sends"].as_array().unwrap() {
                assert!(s.get("worm").is_none());
                assert!(!s["route"].as_array().unwrap().is_empty());
            }
        }
        let log2 = (usize::BITS - n.leading_zeros()) as u64; // ceil(log2(n + 1))
        assert_eq!(steps(&by_algo["binomial"]), log2);
        assert_eq!(steps(&by_algo["separate"]), n as u64);
        assert_eq!(by_algo["kbinomial:3"]["k"], 3);
    }
}

#[test]
fn irregular_default_network_every_scheme() {
    // The paper's default network (32 nodes, eight 8-port switches, 0.8),
    // several seeds and roots, several destination-set sizes.
    for (seed, root) in [(0u64, None), (7, None), (7, Some(3)), (42, Some(7))] {
        let mut fabric =
            format!("irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed={seed}");
        if let Some(r) = root {
            fabric.push_str(&format!(",root={r}"));
        }
        for (i, count) in [1usize, 4, 8, 16, 31].into_iter().enumerate() {
            let source = (seed as usize * 5 + i * 3) % 32;
            let dests = hosts(&subset(32, count, source, seed + i as u64));
            for algo in IRREGULAR_ALGOS {
                let p = plan(&[
                    "--fabric",
                    &fabric,
                    "--algo",
                    algo,
                    "--source",
                    &source.to_string(),
                    "--dests",
                    &dests,
                ]);
                assert_eq!(p["fabric"], fabric.as_str());
                for s in p["sends"].as_array().unwrap() {
                    let route = s["route"].as_array().unwrap();
                    assert!(route.iter().all(|x| x.as_u64().is_some_and(|x| x < 8)));
                    if s["worm"] == "tree" {
                        assert!(!s["branches"].as_array().unwrap().is_empty());
                    }
                }
            }
        }
    }
}

#[test]
fn irregular_plans_are_deterministic() {
    let args = [
        "plan",
        "--fabric",
        "irregular:seed=9",
        "--algo",
        "path-lg",
        "--source",
        "3",
        "--dests",
        "1;2;4;8;16;31",
    ];
    let a = mcsim(&args);
    let b = mcsim(&args);
    assert_eq!(a.code, Some(0));
    assert_eq!(a.stdout, b.stdout);
}

// ------------------------------------------------- bad input

#[test]
fn bad_input_exits_2_with_one_line() {
    let t55 = ["--fabric", "torus:5x5"];
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "unknown fabric",
            vec![
                "--fabric", "ring:4", "--algo", "utorus", "--source", "0", "--dests", "1",
            ],
        ),
        (
            "bad fabric option",
            vec![
                "--fabric",
                "torus:5x5:sideways",
                "--algo",
                "utorus",
                "--source",
                "0,0",
                "--dests",
                "1,1",
            ],
        ),
        (
            "bad irregular spec",
            vec![
                "--fabric",
                "irregular:colour=red",
                "--algo",
                "ssr-lg",
                "--source",
                "0",
                "--dests",
                "1",
            ],
        ),
        (
            "impossible irregular spec",
            vec![
                "--fabric",
                "irregular:switches=8,ports=8,nodes=100",
                "--algo",
                "ssr-lg",
                "--source",
                "0",
                "--dests",
                "1",
            ],
        ),
        (
            "unknown algorithm",
            [
                &t55[..],
                &["--algo", "bogus", "--source", "0,0", "--dests", "1,1"],
            ]
            .concat(),
        ),
        (
            "bad algorithm parameter",
            [
                &t55[..],
                &["--algo", "kbinomial:0", "--source", "0,0", "--dests", "1,1"],
            ]
            .concat(),
        ),
        (
            "hypercube algorithm on a torus",
            [
                &t55[..],
                &["--algo", "ucube", "--source", "0,0", "--dests", "1,1"],
            ]
            .concat(),
        ),
        (
            "H-cycle algorithm on a torus with two radices",
            vec![
                "--fabric",
                "torus:4x6",
                "--algo",
                "mdtorus",
                "--source",
                "0,0",
                "--dests",
                "1,1",
            ],
        ),
        (
            "worm scheme on a torus",
            [
                &t55[..],
                &["--algo", "ssr-greedy", "--source", "0,0", "--dests", "1,1"],
            ]
            .concat(),
        ),
        (
            "torus algorithm on an irregular fabric",
            vec![
                "--fabric",
                "irregular",
                "--algo",
                "utorus",
                "--source",
                "0",
                "--dests",
                "1",
            ],
        ),
        (
            "all-port on an irregular fabric",
            vec![
                "--fabric",
                "irregular",
                "--algo",
                "ssr-lg",
                "--source",
                "0",
                "--dests",
                "1",
                "--port-model",
                "all",
            ],
        ),
        (
            "source outside the torus",
            [
                &t55[..],
                &["--algo", "utorus", "--source", "5,0", "--dests", "1,1"],
            ]
            .concat(),
        ),
        (
            "destination with too many coordinates",
            [
                &t55[..],
                &[
                    "--algo",
                    "utorus",
                    "--source",
                    "0,0",
                    "--dests",
                    "1,1;1,2,3",
                ],
            ]
            .concat(),
        ),
        (
            "hypercube node with too many bits",
            vec![
                "--fabric",
                "hypercube:4",
                "--algo",
                "ucube",
                "--source",
                "0000",
                "--dests",
                "10001",
            ],
        ),
        (
            "host outside the irregular fabric",
            vec![
                "--fabric",
                "irregular",
                "--algo",
                "tree-worm",
                "--source",
                "0",
                "--dests",
                "1;32",
            ],
        ),
        (
            "malformed coordinates",
            [
                &t55[..],
                &["--algo", "utorus", "--source", "0,a", "--dests", "1,1"],
            ]
            .concat(),
        ),
        (
            "empty destination item",
            [
                &t55[..],
                &["--algo", "utorus", "--source", "0,0", "--dests", "1,1;"],
            ]
            .concat(),
        ),
        (
            "malformed bit string",
            vec![
                "--fabric",
                "hypercube:4",
                "--algo",
                "ucube",
                "--source",
                "0000",
                "--dests",
                "0021",
            ],
        ),
        (
            "malformed host id",
            vec![
                "--fabric",
                "irregular",
                "--algo",
                "ssr-lg",
                "--source",
                "x",
                "--dests",
                "1",
            ],
        ),
        (
            "source among the destinations (torus)",
            [
                &t55[..],
                &["--algo", "utorus", "--source", "0,0", "--dests", "1,1;0,0"],
            ]
            .concat(),
        ),
        (
            "source among the destinations (irregular)",
            vec![
                "--fabric",
                "irregular",
                "--algo",
                "path-greedy",
                "--source",
                "3",
                "--dests",
                "1;3",
            ],
        ),
        (
            "duplicate destinations (hypercube)",
            vec![
                "--fabric",
                "hypercube:3",
                "--algo",
                "wsort",
                "--source",
                "000",
                "--dests",
                "001;010;001",
            ],
        ),
        (
            "duplicate destinations (irregular)",
            vec![
                "--fabric",
                "irregular",
                "--algo",
                "binomial",
                "--source",
                "0",
                "--dests",
                "1;2;1",
            ],
        ),
        (
            "no destinations",
            [
                &t55[..],
                &["--algo", "utorus", "--source", "0,0", "--dests", ""],
            ]
            .concat(),
        ),
        (
            "missing --dests",
            [&t55[..], &["--algo", "utorus", "--source", "0,0"]].concat(),
        ),
        (
            "zero packets",
            [
                &t55[..],
                &[
                    "--algo",
                    "utorus",
                    "--source",
                    "0,0",
                    "--dests",
                    "1,1",
                    "--packets",
                    "0",
                ],
            ]
            .concat(),
        ),
        (
            "unknown port model",
            [
                &t55[..],
                &[
                    "--algo",
                    "utorus",
                    "--source",
                    "0,0",
                    "--dests",
                    "1,1",
                    "--port-model",
                    "two",
                ],
            ]
            .concat(),
        ),
        (
            "unknown option",
            [
                &t55[..],
                &[
                    "--algo", "utorus", "--source", "0,0", "--dests", "1,1", "--bogus",
                ],
            ]
            .concat(),
        ),
    ];
    for (what, args) in cases {
        let mut full = vec!["plan"];
        full.extend(args);
        let r = mcsim(&full);
        assert_eq!(r.code, Some(2), "{what}: {full:?} -> {}", r.stderr);
        assert!(r.stdout.is_empty(), "{what}: printed {}", r.stdout);
        assert_eq!(
            r.stderr.lines().count(),
            1,
            "{what}: not one line: {:?}",
            r.stderr
        );
        assert!(
            r.stderr.starts_with("mcsim: error: "),
            "{what}: {}",
            r.stderr
        );
    }
    // A subcommand that does not exist (yet).
    let r = mcsim(&["run"]);
    assert_eq!(r.code, Some(2));
    assert_eq!(r.stderr.lines().count(), 1);
}

#[test]
fn help_lists_fabrics_and_algorithms() {
    let r = mcsim(&["plan", "--help"]);
    assert_eq!(r.code, Some(0));
    for word in [
        "torus:",
        ":uni",
        "mesh:",
        "hypercube:",
        "irregular:switches=",
        "separate",
        "dochain",
        "utorus",
        "ucube",
        "maxport",
        "combine",
        "wsort",
        "kbinomial",
        "binomial",
        "mdtorus",
        "mutorus",
        "ssr-greedy",
        "ssr-lg",
        "path-greedy",
        "path-lg",
        "tree-worm",
        "--port-model",
        "--packets",
        "0101",
        "4,3",
    ] {
        assert!(r.stdout.contains(word), "help lacks {word}");
    }
    let top = mcsim(&["--help"]);
    assert_eq!(top.code, Some(0));
    assert!(top.stdout.contains("plan"));
}
