//! `switching = wormhole` end to end through the `mcsim` binary: the knob
//! from `--set`, the fabric spec and `--print-cost`; VCT still refusing
//! buffers smaller than a packet; the JSON naming the mode; and the
//! deadlock exit status naming blocked and held channels.

use serde_json::Value;

mod common;
use common::mcsim;

#[test]
fn wormhole_from_the_command_line() {
    let run = |fabric: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--fabric",
            fabric,
            "--algo",
            "storus",
            "--dests",
            "random:6",
            "--packets",
            "3",
            "--preset",
            "low-startup",
            "--json",
            "--print-cost",
        ];
        args.extend_from_slice(extra);
        mcsim(&args)
    };
    // VCT (the default) refuses 2-flit buffers for 8-flit packets.
    let (code, _, err) = run("torus:4x4:uni", &["--set", "vc_buf_flits=2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("switching = wormhole"), "{err}");
    // Wormhole takes them, from --set or from the fabric spec.
    for (fabric, extra) in [
        (
            "torus:4x4:uni",
            &["--set", "switching=wormhole", "--set", "vc_buf_flits=2"][..],
        ),
        ("torus:4x4:uni@switching=wormhole,vc_buf_flits=2", &[][..]),
    ] {
        let (code, out, err) = run(fabric, extra);
        assert_eq!(code, Some(0), "{err}");
        assert!(err.contains("switching = wormhole;"), "{err}");
        let v: Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(v["destinations"].as_array().unwrap().len(), 6);
        assert!(v["completion"].as_u64().unwrap() > 0);
    }
}

#[test]
fn load_json_names_the_mode_and_deadlock_exits_3() {
    let load = |extra: &[&str]| {
        let mut args = vec![
            "load",
            "--fabric",
            "torus:4:uni",
            "--rate",
            "1.0",
            "--cycles",
            "2000",
            "--warmup",
            "0",
            "--json",
            "--set",
            "switching=wormhole",
            "--set",
            "packet_flits=32",
            "--set",
            "vc_buf_flits=2",
            "--set",
            "watchdog_cycles=500",
        ];
        args.extend_from_slice(extra);
        mcsim(&args)
    };
    // One VC, no dateline: the ring deadlocks.
    let (code, _, err) = load(&["--set", "num_vcs=1", "--set", "dateline=0"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("deadlock") && err.contains("channels held by stalled worms"),
        "{err}"
    );
    // The dateline classes: it drains, and the JSON says wormhole.
    let (code, out, err) = load(&["--set", "num_vcs=2"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["cost"]["switching"], "wormhole");
}
