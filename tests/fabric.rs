//! Fabric mode end to end: `mclaunch --fabric SPEC` starts the emulated
//! switches, every rank talks through them over real sockets, messages carry
//! model latency, and worm algorithms run where the fabric carries them.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{bin, mclaunch, run_bounded, text};

/// `mclaunch --fabric SPEC -n N PROGRAM ARGS`, bounded.
fn launch(fabric: &str, n: usize, program: &str, args: &[&str]) -> (bool, String, String) {
    launch_with(&[], fabric, n, program, args)
}

/// [`launch`] with more mclaunch options.
fn launch_with(
    opts: &[&str],
    fabric: &str,
    n: usize,
    program: &str,
    args: &[&str],
) -> (bool, String, String) {
    let mut cmd = Command::new(mclaunch());
    cmd.args(opts)
        .args(["--fabric", fabric, "-n", &n.to_string(), "--timeout", "240"])
        .arg(bin(program))
        .args(args)
        .env("MCAST_TIMEOUT_SECS", "60");
    let out = run_bounded(cmd, Duration::from_secs(300));
    let (o, e) = text(&out);
    (out.status.success(), o, e)
}

fn selftest(fabric: &str, n: usize, algos: &str) {
    let (ok, out, err) = launch(
        fabric,
        n,
        "mcast-selftest",
        &[
            "--sizes",
            "0,1,P-1,P,P+1,3P+7",
            "--algos",
            algos,
            "--multicast-rounds",
            "12",
        ],
    );
    assert!(ok, "selftest through {fabric} failed:\n{out}\n{err}");
    assert_eq!(out.matches(" ok on host ").count(), n, "{out}\n{err}");
}

#[test]
fn unicast_trees_through_a_torus() {
    selftest("torus:3x3", 6, "auto,chain,binomial,kbinomial:2,utorus");
}

#[test]
fn worms_through_an_irregular_fabric() {
    selftest(
        "irregular:switches=4,ports=6,nodes=12,seed=3",
        7,
        "ssr-greedy,ssr-lg,path-greedy,path-lg,tree-worm,binomial",
    );
}

#[test]
fn path_worms_through_a_unidirectional_torus() {
    selftest("torus:4x4:uni", 8, "storus,mtorus-d,mtorus-u:2,chain");
}

#[test]
fn a_worm_algorithm_outside_a_fabric_is_refused() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["-n", "2", "--timeout", "60"])
        .arg(bin("mcast-selftest"))
        .args(["--algos", "tree-worm", "--sizes", "1"]);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (o, e) = text(&out);
    assert!(!out.status.success(), "{o}\n{e}");
    assert!(e.contains("emulated fabric"), "{e}");
    // And on a fabric that does not carry it.
    let (ok, o, e) = launch(
        "torus:3x3",
        2,
        "mcast-selftest",
        &["--algos", "storus", "--sizes", "1"],
    );
    assert!(!ok, "{o}\n{e}");
    assert!(e.contains("unidirectional torus"), "{e}");
}

/// Every rank's model latency of the job's first bcast (idle fabric) equals
/// `mcsim run`'s completion for that rank: the same engines, the same cost
/// model, once over real sockets and once in the discrete-event simulator.
/// (Direct fabrics only: on irregular ones `mcsim run` orders the chain by
/// the paper's host ordering, the runtime by rank.)
fn model_matches_the_simulator(fabric: &str, n: usize, algo: &str, packets: usize) {
    let size = packets * 128; // the default (irregular) preset's packet
    let (ok, out, err) = launch(
        fabric,
        n,
        "mcast-selftest",
        &["--model-bcast", &format!("{algo}:{size}")],
    );
    assert!(ok, "{out}\n{err}");
    let mut got: Vec<(usize, u64)> = out
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["model", "rank", r, "cycles", c] => Some((r.parse().ok()?, c.parse().ok()?)),
                _ => None,
            }
        })
        .filter(|&(r, _)| r != 0)
        .collect();
    got.sort_unstable();
    assert_eq!(got.len(), n - 1, "{out}");
    let mcsim = bin("mcbench").with_file_name("mcsim");
    let mut cmd = Command::new(&mcsim);
    cmd.args(["run", "--fabric", fabric, "--algo", algo, "--dests", "all"])
        .args(["--packets", &packets.to_string(), "--json"]);
    let sim = run_bounded(cmd, Duration::from_secs(60));
    let (so, se) = text(&sim);
    assert!(sim.status.success(), "{so}\n{se}");
    let v: serde_json::Value = serde_json::from_str(&so).expect("mcsim json");
    let want: Vec<(usize, u64)> = v["per_destination"]
        .as_array()
        .expect("per_destination")
        .iter()
        .map(|p| {
            (
                p[0].as_u64().expect("node") as usize,
                p[1].as_u64().expect("cycle"),
            )
        })
        .filter(|&(d, _)| d < n)
        .collect();
    assert_eq!(got, want, "fabric {fabric}, {algo}, {packets} packets");
}

#[test]
fn model_latency_equals_the_simulator_on_a_crossbar() {
    model_matches_the_simulator("crossbar:4", 4, "chain", 3);
}

#[test]
fn model_latency_equals_the_simulator_on_a_hypercube() {
    model_matches_the_simulator("hypercube:3", 8, "binomial", 1);
}

/// Several packets, several branches sharing links: still exact (the
/// switches and NIs backfill in virtual time, see `mcast::fabric::Timeline`).
#[test]
fn model_latency_equals_the_simulator_on_a_torus() {
    model_matches_the_simulator("torus:4x4", 16, "kbinomial", 4);
}

#[test]
fn mcbench_reports_model_latency_beside_wall_time() {
    let (ok, out, err) = launch(
        "mesh:2x2",
        4,
        "mcbench",
        &["--json", "-m", "1:256", "-i", "3", "-x", "1"],
    );
    assert!(ok, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["fabric"], "mesh:2x2");
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows.len(), 9);
    for r in rows {
        let avg = r["model_avg_us"].as_f64().expect("model_avg_us");
        let max = r["model_max_us"].as_f64().expect("model_max_us");
        assert!(avg > 0.0 && max >= avg, "{r}");
    }
    // Larger messages take longer in the model.
    let m = |i: usize| rows[i]["model_max_us"].as_f64().unwrap_or(0.0);
    assert!(m(8) > m(0), "{out}");
}

#[test]
fn a_dead_rank_is_named_through_the_fabric() {
    let mut cmd = Command::new(mclaunch());
    cmd.args(["--fabric", "crossbar:4", "-n", "4", "--timeout", "60"])
        .args(["--on-failure", "continue"])
        .arg(bin("mcast-selftest"))
        .args(["--crash-rank", "2", "--sizes", "1"]);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let (o, e) = text(&out);
    assert!(!out.status.success(), "{o}\n{e}");
    assert!(
        e.contains("rank 2 was lost") && e.contains("reported by the fabric"),
        "{e}"
    );
}

/// Under `--transport quic` the fabric link's rank meets the rendezvous
/// over TLS too (it reads its identity itself).
#[test]
fn a_fabric_job_in_quic_mode_meets_over_tls() {
    let args = [
        "--sizes",
        "0,1,P+1",
        "--algos",
        "auto",
        "--multicast-rounds",
        "2",
    ];
    let (ok, out, err) = launch_with(
        &["--transport", "quic"],
        "torus:2x2",
        3,
        "mcast-selftest",
        &args,
    );
    assert!(
        ok,
        "selftest through a fabric under QUIC failed:\n{out}\n{err}"
    );
    assert_eq!(out.matches(" ok on host ").count(), 3, "{out}\n{err}");
}
