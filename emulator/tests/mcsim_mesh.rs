//! `mcsim plan` for the Qualified Groups paper's mesh schemes and the
//! two-pass MIN multicast, and `mcsim model min`, end to end through the
//! binary.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use serde_json::Value;

const MCSIM: &str = env!("CARGO_BIN_EXE_mcsim");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn mcsim(args: &[&str]) -> Run {
    let out = Command::new(MCSIM)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run mcsim");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json(args: &[&str]) -> Value {
    let r = mcsim(args);
    assert_eq!(r.code, Some(0), "mcsim {args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).expect("valid JSON")
}

fn bad(args: &[&str]) -> String {
    let r = mcsim(args);
    assert_eq!(r.code, Some(2), "mcsim {args:?} should fail: {}", r.stdout);
    assert!(r.stdout.is_empty());
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
    r.stderr
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| match x {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Every destination is delivered exactly once over all sends' `delivers`
/// (mesh worms) and nobody else.
fn delivered_once(plan: &Value) {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for s in plan["sends"].as_array().unwrap() {
        for d in strs(&s["delivers"]) {
            *count.entry(d).or_default() += 1;
        }
    }
    let dests = strs(&plan["destinations"]);
    assert_eq!(count.len(), dests.len());
    for d in dests {
        assert_eq!(count.get(&d), Some(&1), "{d}");
    }
}

/// Example B [Al-Dubai 2009, §3, §4.1, derived] in mcsim notation (coordinates highest dimension
/// first, so a point (x, y) of the tests is "y,x").
const B_SOURCE: &str = "4,2";
const B_DESTS: &str = "4,0;2,1;3,1;5,2;4,4;2,5;3,5;1,6;2,6";

#[test]
fn qg_and_baselines_on_example_b() {
    for (algo, phases, visits, sends) in [
        ("qg", 2, 19, 6),
        ("qg:0.5", 2, 19, 6),
        ("dual-path", 1, 26, 2),
        ("multipath", 1, 17, 4),
        ("column-path", 2, 20, 6),
    ] {
        let p = json(&[
            "plan", "--fabric", "mesh:8x8", "--algo", algo, "--source", B_SOURCE, "--dests",
            B_DESTS,
        ]);
        assert_eq!(p["steps"], phases, "{algo}");
        assert_eq!(p["phases"], phases, "{algo}");
        assert_eq!(p["link_visits"], visits, "{algo}");
        assert_eq!(p["sends"].as_array().unwrap().len(), sends, "{algo}");
        assert_eq!(p["port_model"], "all");
        // CP's worms of one round share the source row's channels; the others
        // are channel-disjoint within a phase here.
        let shared = if algo == "column-path" { 2 } else { 0 };
        assert_eq!(p["contention"]["stepwise"], shared, "{algo}");
        for s in p["sends"].as_array().unwrap() {
            assert_eq!(s["worm"], "path");
            let route = strs(&s["route"]);
            assert_eq!(route[0], s["from"].as_str().unwrap());
            // Delivery order follows the route.
            let mut at = 0;
            for d in strs(&s["delivers"]) {
                at += route[at..]
                    .iter()
                    .position(|r| *r == d)
                    .expect("delivered on the route");
            }
            assert_eq!(route.last(), strs(&s["delivers"]).last());
        }
        delivered_once(&p);
    }
    let qg = json(&[
        "plan", "--fabric", "mesh:8x8", "--algo", "qg", "--source", B_SOURCE, "--dests", B_DESTS,
    ]);
    assert_eq!(qg["algorithm"], "qg:0.5");
    // Step 1 reaches the five representatives.
    let mut reps: Vec<String> = qg["sends"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == 1)
        .flat_map(|s| strs(&s["delivers"]))
        .collect();
    reps.sort();
    assert_eq!(reps, ["2,6", "3,1", "3,5", "4,4", "5,2"]);
}

#[test]
fn qg_on_a_3d_mesh_and_errors() {
    let p = json(&[
        "plan",
        "--fabric",
        "mesh:4x4x4",
        "--algo",
        "qg:0.2",
        "--source",
        "3,0,0",
        "--dests",
        "0,2,0;1,0,1;1,1,1;0,2,1;2,3,1;0,1,2;3,0,3;0,2,3;2,2,3;0,3,3",
    ]);
    assert!(p["steps"].as_u64().unwrap() <= 2);
    delivered_once(&p);
    let e = bad(&[
        "plan",
        "--fabric",
        "mesh:4x4x4",
        "--algo",
        "multipath",
        "--source",
        "0,0,0",
        "--dests",
        "1,1,1",
    ]);
    assert!(e.contains("2-D"), "{e}");
    let e = bad(&[
        "plan",
        "--fabric",
        "torus:4x4",
        "--algo",
        "qg",
        "--source",
        "0,0",
        "--dests",
        "1,1",
    ]);
    assert!(e.contains("mesh"), "{e}");
    let e = bad(&[
        "plan", "--fabric", "mesh:4x4", "--algo", "qg:1.5", "--source", "0,0", "--dests", "1,1",
    ]);
    assert!(e.contains("TD"), "{e}");
    bad(&[
        "plan", "--fabric", "mesh:4x4", "--algo", "qg", "--source", "0,0", "--dests", "0,0",
    ]);
    bad(&[
        "plan",
        "--fabric",
        "mesh:4x4",
        "--algo",
        "min-two-pass",
        "--source",
        "0,0",
        "--dests",
        "1,1",
    ]);
}

/// [Park 1996, §3.1, Fig 3].
#[test]
fn min_two_pass_fig3() {
    let p = json(&[
        "plan",
        "--fabric",
        "min:4",
        "--algo",
        "min-two-pass:4",
        "--source",
        "5",
        "--dests",
        "0;3;6;11;13",
    ]);
    assert_eq!(p["algorithm"], "min-two-pass:4");
    assert_eq!(p["fabric"], "min:4");
    assert_eq!(
        (p["steps"].as_u64(), p["phases"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(p["link_visits"], 38);
    let sends = p["sends"].as_array().unwrap();
    assert_eq!(sends.len(), 6);
    assert_eq!(sends[0]["worm"], "region");
    assert_eq!(strs(&sends[0]["delivers"]), ["4", "5", "6", "7", "8"]);
    assert_eq!(
        sends[0]["branches"][4],
        serde_json::json!([0b1011, 0b1010, 0b1010, 0b1000])
    );
    let pass2: Vec<(u64, u64)> = sends[1..]
        .iter()
        .map(|s| (s["from"].as_u64().unwrap(), s["to"].as_u64().unwrap()))
        .collect();
    assert_eq!(pass2, [(4, 0), (5, 3), (6, 6), (7, 11), (8, 13)]);
    // 7 → 11: out-links 1111, 1110, 1011, 1011.
    assert_eq!(sends[4]["branches"][0], serde_json::json!([15, 14, 11, 11]));
    assert_eq!(p["contention"]["stepwise"], 0);
    assert_eq!(p["contention"]["link_type1"], 0);
    // Without S, a seeded start; the omega wiring works too.
    for fabric in ["min:7", "min:7:omega"] {
        let p = json(&[
            "plan",
            "--fabric",
            fabric,
            "--algo",
            "min-two-pass",
            "--source",
            "0",
            "--dests",
            "5;17;99;100;127",
        ]);
        assert_eq!(p["steps"], 2);
        assert!(p["algorithm"]
            .as_str()
            .unwrap()
            .starts_with("min-two-pass:"));
        let got: Vec<u64> = p["sends"].as_array().unwrap()[1..]
            .iter()
            .map(|s| s["to"].as_u64().unwrap())
            .collect();
        assert_eq!(got, [5, 17, 99, 100, 127]);
    }
    bad(&[
        "plan",
        "--fabric",
        "min:4",
        "--algo",
        "min-two-pass:14",
        "--source",
        "5",
        "--dests",
        "0;3;6",
    ]);
    bad(&[
        "plan",
        "--fabric",
        "min:4",
        "--algo",
        "min-two-pass",
        "--source",
        "5",
        "--dests",
        "16",
    ]);
    bad(&[
        "plan", "--fabric", "min:4", "--algo", "qg", "--source", "5", "--dests", "1",
    ]);
    bad(&[
        "plan",
        "--fabric",
        "min:0",
        "--algo",
        "min-two-pass",
        "--source",
        "0",
        "--dests",
        "1",
    ]);
    bad(&[
        "plan",
        "--fabric",
        "min:4:butterfly",
        "--algo",
        "min-two-pass",
        "--source",
        "0",
        "--dests",
        "1",
    ]);
    bad(&[
        "plan",
        "--fabric",
        "min:4",
        "--algo",
        "min-two-pass:x",
        "--source",
        "0",
        "--dests",
        "1",
    ]);
}

#[test]
fn model_min() {
    let m = json(&["model", "min", "--n", "7", "--f", "1", "--load", "1.0"]);
    assert_eq!(m["model"], "min");
    assert!((m["eta"].as_f64().unwrap() - 0.3271).abs() < 5e-5);
    assert_eq!(m["stages"].as_array().unwrap().len(), 7);
    let m = json(&[
        "model", "min", "--n", "7", "--f", "4", "--m", "0.5", "--load", "1.0",
    ]);
    assert!((m["eta"].as_f64().unwrap() - 0.1790).abs() < 5e-5);
    let m = json(&[
        "model",
        "min",
        "--n",
        "7",
        "--f",
        "4",
        "--m",
        "0.5",
        "--case",
        "b",
        "--compact",
    ]);
    assert!((m["eta"].as_f64().unwrap() - 0.1365).abs() < 5e-5);
    bad(&["model", "min", "--n", "3", "--f", "9"]);
    bad(&[
        "model", "min", "--n", "7", "--f", "4", "--m", "0.5", "--load", "3",
    ]);
    // The help lists the new names.
    let h = mcsim(&["plan", "--help"]);
    for name in [
        "qg[:TD]",
        "dual-path",
        "multipath",
        "column-path",
        "min-two-pass",
        "min:N",
    ] {
        assert!(h.stdout.contains(name), "help lacks {name}");
    }
}
