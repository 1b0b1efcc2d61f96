//! `mcsim plan` with the path-based planners (storus, mtorus-d,
//! mtorus-u:R) on unidirectional tori, and `mcsim model sci`, end to end:
//! the worked examples of [Robinson 1994, §5.1, §5.4, Figs 5.1, 5.7; ch. 6, Fig 5.1, derived], generic checks of every
//! printed worm, the bad-input contract (exit 2, one line on stderr), and
//! the SCI model numbers of [Oral 2003, §5.1–5.5, Eqs 8–12, derived].

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const MCSIM: &str = env!("CARGO_BIN_EXE_mcsim");
const LIMIT: Duration = Duration::from_secs(30);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn mcsim(args: &[&str]) -> Run {
    let start = Instant::now();
    let child = Command::new(MCSIM)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcsim");
    let out = child.wait_with_output().expect("wait for mcsim");
    assert!(start.elapsed() < LIMIT, "mcsim {args:?} took too long");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

const FIG_5_1: &str = "0,5;4,5;3,4;5,4;4,3;1,2;2,1;5,1;1,0";

/// Run `mcsim plan ARGS`, require success, check every worm, return the plan.
fn plan(args: &[&str]) -> Value {
    let mut full = vec!["plan"];
    full.extend_from_slice(args);
    let r = mcsim(&full);
    assert_eq!(r.code, Some(0), "mcsim {full:?}: {}", r.stderr);
    assert!(r.stderr.is_empty(), "stderr: {}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON");
    check_worms(&v);
    v
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_str().expect("string node").to_string())
        .collect()
}

/// Every destination is delivered exactly once; every worm's route starts
/// at its sender and passes its receivers in delivery order; vcs has one
/// letter per hop, p's then h's; at most one boundary; link_visits is the
/// sum of the hops; steps = phases = the last step; no same-phase sharing.
fn check_worms(v: &Value) {
    assert_eq!(v["port_model"], "all");
    let dests: BTreeSet<String> = strs(&v["destinations"]).into_iter().collect();
    let mut got = BTreeMap::<String, usize>::new();
    let mut hops = 0;
    let mut last = 0;
    for s in v["sends"].as_array().expect("sends") {
        assert_eq!(s["worm"], "path");
        let route = strs(&s["route"]);
        let delivers = strs(&s["delivers"]);
        assert_eq!(route[0], s["from"].as_str().unwrap());
        let mut pos = 0;
        for d in &delivers {
            let p = route[pos..]
                .iter()
                .position(|x| x == d)
                .unwrap_or_else(|| panic!("{d} not on the route after {pos}"));
            pos += p;
            *got.entry(d.clone()).or_default() += 1;
        }
        assert_eq!(route.last(), delivers.last());
        let vcs = s["vcs"].as_str().unwrap();
        assert_eq!(vcs.len(), route.len() - 1);
        assert!(!vcs.contains("hp"), "p after h: {vcs}");
        let b = s["boundaries"].as_u64().unwrap();
        assert!(b <= 1);
        let mut to = delivers.clone();
        to.sort();
        let mut printed = strs(&s["to"]);
        printed.sort();
        assert_eq!(printed, to);
        hops += route.len() - 1;
        last = last.max(s["step"].as_u64().unwrap());
    }
    assert_eq!(got.keys().cloned().collect::<BTreeSet<_>>(), dests);
    assert!(got.values().all(|&c| c == 1), "delivered twice: {got:?}");
    assert_eq!(v["link_visits"].as_u64().unwrap() as usize, hops);
    assert_eq!(v["phases"], v["steps"]);
    assert_eq!(v["steps"].as_u64().unwrap(), last);
    assert_eq!(v["contention"]["stepwise"], 0);
    assert_eq!(v["contention"]["link_type1"], 0);
}

fn phases_of(v: &Value) -> Vec<Vec<(String, Vec<String>)>> {
    let n = v["phases"].as_u64().unwrap();
    (1..=n)
        .map(|ph| {
            v["sends"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["step"].as_u64() == Some(ph))
                .map(|s| {
                    (
                        s["from"].as_str().unwrap().to_string(),
                        strs(&s["delivers"]),
                    )
                })
                .collect()
        })
        .collect()
}

fn owned(v: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.iter().map(|x| x.to_string()).collect()))
        .collect()
}

/// [Robinson 1994, §5.1, §5.4, Figs 5.1, 5.7]: the S-torus worm of Fig 5.7: 26 hops, one boundary.
#[test]
fn storus_fig_5_7() {
    let v = plan(&[
        "--fabric",
        "torus:6x6:uni",
        "--algo",
        "storus",
        "--source",
        "3,2",
        "--dests",
        FIG_5_1,
    ]);
    assert_eq!(v["algorithm"], "storus");
    assert_eq!(v["phases"], 1);
    assert_eq!(v["link_visits"], 26);
    let s = &v["sends"][0];
    assert_eq!(s["boundaries"], 1);
    assert_eq!(s["vcs"], format!("{}{}", "p".repeat(11), "h".repeat(15)));
    assert_eq!(
        strs(&s["delivers"]),
        ["4,3", "4,5", "5,1", "5,4", "0,5", "1,0", "1,2", "2,1", "3,4"]
    );
    let route = strs(&s["route"]);
    assert_eq!(&route[10..14], ["5,4", "5,5", "0,5", "1,5"]);
    assert_eq!(
        strs(&s["covers"]),
        ["4,3", "4,5", "5,1", "5,4", "0,5", "1,0", "1,2", "2,1", "3,4"]
    );
}

/// [Robinson 1994, ch. 6, Fig 5.1, derived]: the M-torus family on the Fig 5.1 problem.
#[test]
fn m_torus_family_fig_5_1() {
    let md = plan(&[
        "--fabric",
        "torus:6x6:uni",
        "--algo",
        "mtorus-d",
        "--source",
        "3,2",
        "--dests",
        FIG_5_1,
    ]);
    assert_eq!(md["phases"], 2);
    assert_eq!(md["link_visits"], 20 + 2 + 3 + 2);
    assert_eq!(
        phases_of(&md),
        vec![
            owned(&[("3,2", &["4,3", "5,1", "0,5", "1,0", "2,1", "3,4"])]),
            owned(&[("4,3", &["4,5"]), ("5,1", &["5,4"]), ("1,0", &["1,2"])]),
        ]
    );
    let mu4 = plan(&[
        "--fabric",
        "torus:6x6:uni",
        "--algo",
        "mtorus-u:4",
        "--source",
        "3,2",
        "--dests",
        FIG_5_1,
    ]);
    assert_eq!(mu4["algorithm"], "mtorus-u:4");
    assert_eq!(
        phases_of(&mu4),
        vec![
            owned(&[("3,2", &["5,1", "1,0", "2,1"])]),
            owned(&[
                ("3,2", &["4,3", "4,5"]),
                ("5,1", &["5,4", "0,5"]),
                ("1,0", &["1,2"]),
                ("2,1", &["3,4"])
            ]),
        ]
    );
    let mu2 = plan(&[
        "--fabric",
        "torus:6x6:uni",
        "--algo",
        "mtorus-u:2",
        "--source",
        "3,2",
        "--dests",
        FIG_5_1,
    ]);
    assert_eq!(mu2["phases"], 4);
    assert_eq!(mu2["sends"].as_array().unwrap().len(), 9);
    assert_eq!(phases_of(&mu2)[0], owned(&[("3,2", &["0,5"])]));
}

/// A k-ary n-cube: broadcast on torus:4x4x4:uni (S-torus visits N − 1
/// links; M_d at most n phases; M_u(4) ⌈log_4 64⌉ = 3 phases).
#[test]
fn three_d_broadcast() {
    let mut all = Vec::new();
    for a in 0..4 {
        for b in 0..4 {
            for c in 0..4 {
                if (a, b, c) != (1, 2, 3) {
                    all.push(format!("{a},{b},{c}"));
                }
            }
        }
    }
    let dests = all.join(";");
    let base = [
        "--fabric",
        "torus:4x4x4:uni",
        "--source",
        "1,2,3",
        "--dests",
        &dests,
        "--compact",
    ];
    let with = |algo: &str| {
        let mut a = base.to_vec();
        a.extend(["--algo", algo]);
        plan(&a)
    };
    assert_eq!(with("storus")["link_visits"], 63);
    assert!(with("mtorus-d")["phases"].as_u64().unwrap() <= 3);
    assert_eq!(with("mtorus-u:4")["phases"], 3);
    assert_eq!(with("mtorus-u:2")["phases"], 6);
}

/// Existing plans do not grow the new fields.
#[test]
fn other_algorithms_unchanged() {
    let r = mcsim(&[
        "plan",
        "--fabric",
        "torus:5x5:uni",
        "--algo",
        "utorus",
        "--source",
        "4,3",
        "--dests",
        "0,0;1,1;2,1;0,3;1,3;4,4",
    ]);
    assert_eq!(r.code, Some(0));
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v.get("phases").is_none() && v.get("link_visits").is_none());
    assert!(v["sends"][0].get("vcs").is_none());
}

/// Bad requests: exit 2, one line on stderr, nothing on stdout.
#[test]
fn bad_path_requests() {
    let cases: [&[&str]; 8] = [
        &[
            "--fabric",
            "torus:6x6",
            "--algo",
            "storus",
            "--source",
            "3,2",
            "--dests",
            "0,5",
        ],
        &[
            "--fabric",
            "torus:4x6:uni",
            "--algo",
            "mtorus-d",
            "--source",
            "0,0",
            "--dests",
            "0,5",
        ],
        &[
            "--fabric",
            "mesh:6x6",
            "--algo",
            "mtorus-u:4",
            "--source",
            "3,2",
            "--dests",
            "0,5",
        ],
        &[
            "--fabric",
            "irregular",
            "--algo",
            "storus",
            "--source",
            "0",
            "--dests",
            "1",
        ],
        &[
            "--fabric",
            "torus:6x6:uni",
            "--algo",
            "mtorus-u:1",
            "--source",
            "3,2",
            "--dests",
            "0,5",
        ],
        &[
            "--fabric",
            "torus:6x6:uni",
            "--algo",
            "mtorus-x",
            "--source",
            "3,2",
            "--dests",
            "0,5",
        ],
        &[
            "--fabric",
            "torus:6x6:uni",
            "--algo",
            "storus",
            "--source",
            "3,2",
            "--dests",
            "3,2",
        ],
        &[
            "--fabric",
            "torus:6x6:uni",
            "--algo",
            "storus",
            "--source",
            "3,2",
            "--dests",
            "6,0",
        ],
    ];
    for c in cases {
        let mut full = vec!["plan"];
        full.extend_from_slice(c);
        let r = mcsim(&full);
        assert_eq!(r.code, Some(2), "{c:?}: {}", r.stderr);
        assert!(r.stdout.is_empty());
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.starts_with("mcsim: error:"), "{}", r.stderr);
    }
}

fn model(args: &[&str]) -> Value {
    let mut full = vec!["model", "sci"];
    full.extend_from_slice(args);
    let r = mcsim(&full);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    serde_json::from_str(&r.stdout).expect("JSON")
}

fn near(v: &Value, want: f64) {
    let got = v.as_f64().unwrap();
    assert!((got - want).abs() < 0.06, "got {got}, want {want}");
}

/// [Oral 2003, §5.1–5.5, Eqs 8–12, derived] at G = 4, 11 and 16 on the testbed profile.
#[test]
fn model_sci_testbed() {
    let v = model(&["--group", "4-16"]);
    assert_eq!(v["model"], "sci");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 13);
    let at = |g: usize| &rows[g - 4]["latency_us"];
    near(&at(4)["separate"], 33.0);
    near(&at(4)["storus"], 542.0);
    near(&at(4)["utorus"], 1270.0);
    near(&at(4)["mdtorus"], 214.0);
    near(&at(4)["mutorus"], 414.0);
    near(&at(11)["utorus"], 4434.9);
    near(&at(16)["separate"], 164.8);
    near(&at(16)["storus"], 3769.8);
    near(&at(16)["mdtorus"], 843.9);
    near(&at(16)["mutorus"], 1233.9);
    near(&v["o_us"], 1.994);
    let c = model(&[
        "--group",
        "11",
        "--utorus-form",
        "ceiling",
        "--algo",
        "utorus",
    ]);
    near(&c["rows"][0]["latency_us"]["utorus"], 5067.9);
    assert!(c["rows"][0]["latency_us"].get("storus").is_none());
    // [Oral 2003, §5, Eq 10, derived]: r = k is best on 8×8 at G = 64 (14 relays for r = 8).
    let r8 = model(&["--k", "8", "--group", "64", "--r", "8", "--algo", "mutorus"]);
    assert_eq!(r8["rows"][0]["relays"]["mutorus"], 14.0);
}

#[test]
fn model_sci_bad_input() {
    for args in [
        &["--group", "1"][..],
        &["--group", "17"],
        &["--group", "9-4"],
        &["--group", "x"],
        &["--group", "4", "--algo", "nope"],
        &["--group", "4", "--k", "1"],
        &["--group", "4", "--t-process", "1,2"],
        &["--group", "4", "--bytes", "-1000"],
    ] {
        let mut full = vec!["model", "sci"];
        full.extend_from_slice(args);
        let r = mcsim(&full);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty());
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
    }
    let h = mcsim(&["model", "sci", "--help"]);
    assert_eq!(h.code, Some(0));
    assert!(h.stdout.contains("--utorus-form"));
}
