//! `mcsim run` and `mcsim load` end to end through the binary: JSON shape,
//! determinism for a seed, cost knobs from the command line and a config
//! file, the exit status of a deadlock, and bad requests.

use serde_json::Value;

mod common;
use common::mcsim;

fn json(args: &[&str]) -> Value {
    let (code, out, err) = mcsim(args);
    assert_eq!(code, Some(0), "mcsim {args:?}: {err}");
    serde_json::from_str(&out).expect("valid JSON")
}

#[test]
fn run_is_deterministic_and_checked() {
    let args = [
        "run",
        "--fabric",
        "irregular:switches=8,ports=8,nodes=32,seed=7",
        "--algo",
        "tree-worm",
        "--dests",
        "random:15",
        "--seed",
        "3",
        "--json",
    ];
    let a = json(&args);
    let b = json(&args);
    assert_eq!(a, b);
    assert_eq!(a["destinations"].as_array().unwrap().len(), 15);
    assert_eq!(a["injected"], 1);
    // A rough single-packet tree-worm calibration from the defaults of [Sivaram 1998, §6.2, derived]:
    // t_hs + DMA + t_ns + ~(128 + 3/hop) + t_nr + DMA + t_hr ~ 4,300-4,400.
    let c = a["completion"].as_u64().unwrap();
    assert!((4200..=4500).contains(&c), "{c}");
    let other = json(&[
        "run",
        "--fabric",
        "irregular:switches=8,ports=8,nodes=32,seed=7",
        "--algo",
        "tree-worm",
        "--dests",
        "random:15",
        "--seed",
        "4",
        "--json",
    ]);
    assert_ne!(a["destinations"], other["destinations"]);
}

#[test]
fn unitstep_preset_from_the_command_line() {
    let v = json(&[
        "run",
        "--fabric",
        "crossbar:16",
        "--algo",
        "kbinomial:2",
        "--dests",
        "all",
        "--packets",
        "6",
        "--preset",
        "unitstep",
        "--json",
    ]);
    assert_eq!(v["completion"], 15);
    let dir = std::env::temp_dir().join(format!("mcsim-cfg-{}", std::process::id()));
    std::fs::write(
        &dir,
        "// unit steps\npreset = unitstep;\nt_ns = 1; # one more per copy\n",
    )
    .unwrap();
    let v2 = json(&[
        "run",
        "--fabric",
        "crossbar:16",
        "--algo",
        "kbinomial:2",
        "--dests",
        "all",
        "--packets",
        "6",
        "--config",
        dir.to_str().unwrap(),
        "--json",
    ]);
    let _ = std::fs::remove_file(&dir);
    assert!(v2["completion"].as_u64().unwrap() > 15);
}

#[test]
fn load_json_and_deadlock_exit_status() {
    let v = json(&[
        "load",
        "--fabric",
        "torus:4x4",
        "--rate",
        "0.05,0.1",
        "--cycles",
        "2000",
        "--warmup",
        "200",
        "--set",
        "packet_flits=8",
        "--set",
        "vc_buf_flits=8",
        "--json",
    ]);
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(pts[0]["saturated"], false);
    let (code, _, err) = mcsim(&[
        "load",
        "--fabric",
        "torus:8x8",
        "--rate",
        "1.0",
        "--cycles",
        "5000",
        "--warmup",
        "0",
        "--seed",
        "3",
        "--set",
        "packet_flits=8",
        "--set",
        "vc_buf_flits=8",
        "--set",
        "num_vcs=1",
        "--set",
        "dateline=0",
        "--set",
        "watchdog_cycles=3000",
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("deadlock") && err.contains("switch"), "{err}");
}

#[test]
fn knobs_on_the_fabric_spec_equal_set() {
    let a = json(&[
        "run",
        "--fabric",
        "torus:4x4@packet_flits=16,link_delay=3",
        "--algo",
        "kbinomial",
        "--dests",
        "random:5",
        "--json",
    ]);
    let b = json(&[
        "run",
        "--fabric",
        "torus:4x4",
        "--algo",
        "kbinomial",
        "--dests",
        "random:5",
        "--set",
        "packet_flits=16",
        "--set",
        "link_delay=3",
        "--json",
    ]);
    assert_eq!(a, b);
    assert_eq!(a["fabric"], "torus:4x4");
    let c = json(&[
        "run",
        "--fabric",
        "torus:4x4",
        "--algo",
        "kbinomial",
        "--dests",
        "random:5",
        "--json",
    ]);
    assert_ne!(a["completion"], c["completion"]);
}

#[test]
fn bad_requests_exit_2() {
    for args in [
        &[
            "run",
            "--fabric",
            "torus:4x4",
            "--algo",
            "kbinomial",
            "--set",
            "bogus=1",
        ][..],
        &["run", "--fabric", "torus:4x4", "--algo", "tree-worm"][..],
        &["run", "--fabric", "torus:4x4", "--algo", "min-two-pass"][..],
        &[
            "run",
            "--fabric",
            "torus:4x4",
            "--algo",
            "kbinomial",
            "--dests",
            "random:99",
        ][..],
        &["load", "--fabric", "torus:4x4", "--rate", "-1"][..],
        &[
            "load",
            "--fabric",
            "torus:4x4",
            "--rate",
            "0.1",
            "--traffic",
            "bogus",
        ][..],
        &[
            "load",
            "--fabric",
            "torus:4x4",
            "--rate",
            "0.1",
            "--set",
            "num_vcs=1",
        ][..],
    ] {
        let (code, out, err) = mcsim(args);
        assert_eq!(code, Some(2), "{args:?}: {out} {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

/// `inject_ports`: an all-port host's copies leave on separate injection
/// channels at once. Separate addressing of a 2048-flit message to 4 hosts
/// of a crossbar: one port serialises the four copies on the injection
/// link; four ports overlap them, so the last copy arrives about three
/// packet times earlier. Too many ports for the VCs is refused.
#[test]
fn inject_ports_overlap_a_hosts_copies() {
    let run = |ports: &str| {
        let ports = format!("inject_ports={ports}");
        let (code, out, err) = mcsim(&[
            "run",
            "--fabric",
            "crossbar:5",
            "--algo",
            "host:flat",
            "--dests",
            "all",
            "--set",
            "t_hs=0",
            "--set",
            "t_ns=0",
            "--set",
            "dma_mb_s=0",
            "--set",
            "packet_flits=2048",
            "--set",
            "vc_buf_flits=2048",
            "--set",
            "num_vcs=4",
            "--set",
            &ports,
            "--json",
        ]);
        let completion = serde_json::from_str::<Value>(&out)
            .ok()
            .and_then(|v| v["completion"].as_u64());
        (code, completion, err)
    };
    let (c1, one, e1) = run("1");
    let (c4, four, e4) = run("4");
    assert_eq!((c1, c4), (Some(0), Some(0)), "{e1} {e4}");
    let (one, four) = (one.unwrap(), four.unwrap());
    assert!(one >= four + 3 * 2048, "one port {one}, four ports {four}");
    let (c5, _, e5) = run("5");
    assert_eq!(c5, Some(2), "{e5}");
    assert!(e5.contains("inject_ports = 5"), "{e5}");
}
