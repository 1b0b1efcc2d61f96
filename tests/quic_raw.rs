//! `mcquic-raw` (the link stacks alone, `bench/compare-quic/raw.py`) moves
//! what it says over each stack, and refuses a bundle it cannot read.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::bin;

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

/// Run `send` with `bundle` on its standard input; (success, stdout, stderr).
fn send(mode: &str, port: &str, bundle: &str, bytes: u64) -> (bool, String, String) {
    let mut child = Command::new(bin("mcquic-raw"))
        .args(["send", "--mode", mode, "--to", &format!("127.0.0.1:{port}")])
        .args(["--bytes", &bytes.to_string(), "--chunk", "1048576"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcquic-raw send");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{bundle}").expect("write the bundle");
    drop(stdin);
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(LIMIT) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("mcquic-raw send --mode {mode} did not finish within {LIMIT:?}");
        }
    };
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The number after `"key": ` in a one-line JSON object.
fn field(json: &str, key: &str) -> f64 {
    let at = json.find(&format!("\"{key}\": ")).expect(key) + key.len() + 4;
    let rest = &json[at..];
    let end = rest.find([',', '}']).expect("end of value");
    rest[..end].trim().parse().expect("a number")
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
