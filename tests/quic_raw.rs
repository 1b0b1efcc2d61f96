//! `mcquic-raw` (the link stacks alone, `bench/compare-quic/raw.py`) moves
//! what it says over each stack, and refuses a bundle it cannot read.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{bin, run_bounded_with_input, text};

const LIMIT: Duration = Duration::from_secs(60);

/// A server on loopback, its port and the client's bundle (hex).
fn serve(mode: &str) -> (Child, String, String) {
    let mut server = Command::new(bin("mcquic-raw"))
        .args([
            "serve",
            "--mode",
            mode,
            "--bind",
            "127.0.0.1:0",
            "--timeout",
            "30",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn mcquic-raw serve");
    let mut line = String::new();
    let out = server.stdout.take().expect("stdout");
    // The server bounds itself (--timeout), so this read ends.
    BufReader::new(out)
        .read_line(&mut line)
        .expect("READY line");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 3, "{mode}: READY line {line:?}");
    assert_eq!(words[0], "READY");
    (server, words[1].to_string(), words[2].to_string())
}

/// Run `send` with `bundle` on its standard input; (success, stdout as
/// JSON if it is, stderr).
fn send(mode: &str, port: &str, bundle: &str, bytes: u64) -> (bool, serde_json::Value, String) {
    let mut cmd = Command::new(bin("mcquic-raw"));
    cmd.args(["send", "--mode", mode, "--to", &format!("127.0.0.1:{port}")])
        .args(["--bytes", &bytes.to_string(), "--chunk", "1048576"]);
    let input = format!("{bundle}\n");
    let out = run_bounded_with_input(cmd, Some(input.as_bytes()), LIMIT);
    let (so, se) = text(&out);
    let json = serde_json::from_str(&so).unwrap_or(serde_json::Value::Null);
    (out.status.success(), json, se)
}

/// Field `key` of `send`'s report, a number.
fn field(report: &serde_json::Value, key: &str) -> f64 {
    report[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {report}"))
}

#[test]
fn every_stack_moves_the_bytes_it_reports() {
    const BYTES: u64 = 24 << 20;
    for mode in ["tcp", "tls", "quic"] {
        let (mut server, port, bundle) = serve(mode);
        let (ok, out, err) = send(mode, &port, &bundle, BYTES);
        assert!(ok, "{mode}: send failed: {err}");
        // The server read every announced byte before it answered.
        assert!(
            server.wait().expect("server").success(),
            "{mode}: server failed"
        );
        assert_eq!(field(&out, "bytes"), BYTES as f64, "{mode}: {out}");
        assert!(field(&out, "mb_per_s") > 0.0, "{mode}: {out}");
        assert!(field(&out, "t1") > field(&out, "t0"), "{mode}: {out}");
    }
}

#[test]
fn a_bundle_that_is_not_one_is_refused_with_a_reason() {
    let (mut server, port, _) = serve("quic");
    let (ok, _, err) = send("quic", &port, "00ff", 1);
    assert!(!ok, "a bad bundle was taken");
    assert!(
        err.to_lowercase().contains("bundle"),
        "no reason given: {err}"
    );
    let _ = server.kill();
    let _ = server.wait();
}
