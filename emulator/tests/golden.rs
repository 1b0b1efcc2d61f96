//! Saved simulator outputs: `mcsim run`, `load`, `plan` and `model` must print
//! exactly what they printed when these files were made. Refactors of the
//! emulator and of the runtime's engine must keep them byte-identical; a
//! deliberate change of the model regenerates them with
//! `MCAST_BLESS=1 cargo test -p mcast-emulator --test golden` and says why in
//! its commit.

use std::path::PathBuf;
use std::process::Command;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The cases: `name | arguments` lines of `cases.txt` (`#` comments).
fn cases() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(golden_dir().join("cases.txt")).expect("cases.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, args) = l.split_once('|').expect("a case is `name | arguments`");
            let args = args.split_whitespace().map(str::to_string).collect();
            (name.trim().to_string(), args)
        })
        .collect()
}

#[test]
fn simulator_outputs_are_unchanged() {
    let bless = std::env::var_os("MCAST_BLESS").is_some();
    let mut differ = Vec::new();
    let cases = cases();
    assert!(cases.len() >= 20, "the case list lost its cases");
    for (name, args) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_mcsim"))
            .args(&args)
            .output()
            .expect("run mcsim");
        assert!(
            out.status.success(),
            "{name}: mcsim {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        let path = golden_dir().join(format!("{name}.out"));
        if bless {
            std::fs::write(&path, &out.stdout).expect("write golden output");
            continue;
        }
        let saved = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if saved != out.stdout {
            eprintln!(
                "--- {name}: mcsim {}\n--- saved\n{}\n--- now\n{}",
                args.join(" "),
                String::from_utf8_lossy(&saved),
                String::from_utf8_lossy(&out.stdout)
            );
            differ.push(name);
        }
    }
    assert!(differ.is_empty(), "outputs changed: {differ:?}");
}
