//! The runtime's layering (ARCHITECTURE.md, "Layers (invariants)"), checked
//! from the source text: every `crate::` path in `runtime/src/**/*.rs`
//! outside `#[cfg(test)] mod tests` is an edge from the module it is written
//! in to the top-level module it names. A folder module (`wire/`, `net/`, ...)
//! is one module; `fablink` counts as part of `net` (the socket driver and
//! its fabric link import each other, and both are owned by the driver's
//! rework). `crate::Name` resolves through `lib.rs`'s `pub use` lines.
//!
//! Checked here: no import cycle; the leaves import nothing from the crate;
//! `wire` imports only leaves, and each lower layer only what is below it;
//! the engine imports neither tokio nor config; the pure modules do no I/O;
//! the inbox knows no sockets; nothing imports `comm` (the top); no file is
//! over 600 lines (the driver files are exempt while they are reworked); and
//! `mcast-algorithms` does no I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Modules that import nothing from the crate.
const LEAVES: &[&str] = &[
    "bufpool",
    "error",
    "fasthash",
    "hostlist",
    "pmi2",
    "quic",
    "shmfile",
    "sync",
    "tree_kind",
];
/// Modules exempt from the size limit (the driver, while it is reworked).
const SIZE_EXEMPT: &[&str] = &[];
/// Largest number of lines a source file may have.
const MAX_LINES: usize = 600;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, with its path relative to `dir`.
fn rust_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = fs::read_to_string(&p).unwrap();
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), text));
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a file belongs to (`net/reader.rs` → `net`), or
/// `None` for `lib.rs`.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let m = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (m != "lib").then(|| group(&m))
}

/// The layer a top-level module counts as: `fablink` is part of `net`.
fn group(m: &str) -> String {
    match m {
        "fablink" => "net".into(),
        _ => m.into(),
    }
}

/// The code of a file without comments and without its unit tests (a
/// `#[cfg(test)]` item at the end of the file, or a `tests.rs` file).
fn code_of(rel: &Path, text: &str) -> String {
    if rel.file_name().is_some_and(|f| f == "tests.rs") {
        return String::new();
    }
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod tests"))
        {
            let next = lines.peek().unwrap().trim_end();
            if next.ends_with(';') {
                lines.next();
                continue;
            }
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Names `lib.rs` re-exports at the crate root, with the module they come from.
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let (module, items) = rest.split_once("::").expect("pub use module::..");
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let item = item.trim();
            let name = item.rsplit(" as ").next().unwrap().trim();
            if !name.is_empty() {
                names.insert(name.to_string(), module.to_string());
            }
        }
    }
    names
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segments after every `crate::` in `code`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::X, B, c::{..}}`: the first segment of each item.
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        out.push(ident(&group[j..]).to_string());
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.push(ident(rest).to_string());
        }
    }
    out
}

struct Crate {
    /// Module → modules it imports.
    edges: BTreeMap<String, BTreeSet<String>>,
    /// Module → its code (all its files, tests and comments removed).
    code: BTreeMap<String, String>,
    files: Vec<(PathBuf, String)>,
}

fn runtime() -> Crate {
    let files = rust_files(&src_dir());
    let lib = &files
        .iter()
        .find(|(p, _)| p == Path::new("lib.rs"))
        .unwrap()
        .1;
    let roots = root_names(lib);
    let modules: BTreeSet<String> = files.iter().filter_map(|(p, _)| module_of(p)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut code: BTreeMap<String, String> = BTreeMap::new();
    for (rel, text) in &files {
        let Some(m) = module_of(rel) else { continue };
        let c = code_of(rel, text);
        edges.entry(m.clone()).or_default();
        for seg in crate_paths(&c) {
            let to = if modules.contains(&group(&seg)) {
                group(&seg)
            } else if let Some(r) = roots.get(&seg) {
                group(r)
            } else {
                panic!(
                    "{}: crate::{seg} names no module or root item",
                    rel.display()
                );
            };
            if to != m {
                edges.entry(m.clone()).or_default().insert(to);
            }
        }
        code.entry(m).or_default().push_str(&c);
    }
    Crate { edges, code, files }
}

/// A cycle in `edges`, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // 0 unvisited, 1 on the stack, 2 done.
    fn dfs(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for n in edges.get(m).into_iter().flatten() {
            match state.get(n.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == n).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(n.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = dfs(n, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in edges.keys() {
        if state.get(m.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = dfs(m, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn imports<'a>(c: &'a Crate, m: &str) -> &'a BTreeSet<String> {
    c.edges.get(m).unwrap_or_else(|| panic!("no module {m}"))
}

#[test]
fn the_parser_sees_imports() {
    let p = crate_paths(
        "use crate::a::X;\nuse crate::{b::Y, Error,\n c::{d, e}};\nlet x = crate::f::g();\nmcast_crate::h",
    );
    assert_eq!(p, ["a", "b", "Error", "c", "f"]);
    let c = runtime();
    assert!(imports(&c, "comm").contains("engine"));
    assert!(imports(&c, "wire").contains("tree_kind"));
}

#[test]
fn no_import_cycles() {
    let c = runtime();
    if let Some(cycle) = find_cycle(&c.edges) {
        let graph: Vec<String> = c
            .edges
            .iter()
            .map(|(m, to)| format!("{m} -> {to:?}"))
            .collect();
        panic!("import cycle: {}\n{}", cycle.join(" -> "), graph.join("\n"));
    }
}

#[test]
fn leaves_import_nothing_from_the_crate() {
    let c = runtime();
    for leaf in LEAVES {
        assert!(
            imports(&c, leaf).is_empty(),
            "{leaf} imports {:?}",
            imports(&c, leaf)
        );
    }
}

#[test]
fn wire_imports_only_leaves() {
    let c = runtime();
    for m in imports(&c, "wire") {
        assert!(LEAVES.contains(&m.as_str()), "wire imports {m}");
    }
}

#[test]
fn the_engine_is_sans_io() {
    let c = runtime();
    let engine = imports(&c, "engine");
    for m in [
        "config",
        "net",
        "inbox",
        "shm",
        "ring",
        "drive",
        "outq",
        "bootstrap",
        "comm",
    ] {
        assert!(!engine.contains(m), "the engine imports {m}");
    }
    let code = &c.code["engine"];
    for word in [
        "tokio",
        "std::net",
        "std::fs",
        "std::thread",
        "std::time::Instant",
    ] {
        assert!(!code.contains(word), "the engine uses {word}");
    }
}

#[test]
fn the_inbox_knows_no_sockets() {
    let c = runtime();
    let inbox = imports(&c, "inbox");
    for m in ["net", "outq", "shm", "ring", "bootstrap", "config", "comm"] {
        assert!(!inbox.contains(m), "the inbox imports {m}");
    }
    let code = &c.code["inbox"];
    for word in ["tokio::net", "std::net", "TcpStream", "UnixStream"] {
        assert!(!code.contains(word), "the inbox uses {word}");
    }
}

/// The lower layers, each with everything it may import besides the leaves.
const BELOW: &[(&str, &[&str])] = &[
    ("wire", &[]),
    ("fabric", &["wire"]),
    ("worms", &["fabric", "wire"]),
    ("algorithm", &["worms"]),
    ("control", &["wire", "worms"]),
    ("engine", &["wire"]),
    ("shm", &["wire"]),
    // Shared-memory rings and their doorbells: bytes and futexes, no sockets.
    ("ring", &["wire"]),
    ("drive", &[]),
    // Reads the OS's interfaces (so it is no leaf), but imports only leaves.
    ("netif", &[]),
    // Where a rank starts: affinity system calls on the calling thread.
    ("placement", &[]),
    // The rendezvous server (sockets and threads: driver level, not a
    // leaf), shared by mclaunch and plain srun's task 0: only its protocol.
    ("rendezvous", &["bootstrap"]),
];

#[test]
fn lower_layers_import_only_what_is_below_them() {
    let c = runtime();
    for (m, allowed) in BELOW {
        for to in imports(&c, m) {
            assert!(
                LEAVES.contains(&to.as_str()) || allowed.contains(&to.as_str()),
                "{m} imports {to}, which is not below it (ARCHITECTURE.md, Layers)"
            );
        }
    }
}

#[test]
fn the_pure_modules_do_no_io() {
    let c = runtime();
    for m in [
        "tree_kind",
        "wire",
        "worms",
        "algorithm",
        "control",
        "engine",
    ] {
        for word in [
            "tokio",
            "std::net",
            "std::fs",
            "std::thread",
            "std::process",
        ] {
            assert!(!c.code[m].contains(word), "{m} uses {word}");
        }
    }
}

#[test]
fn nothing_imports_comm() {
    let c = runtime();
    for (m, to) in &c.edges {
        assert!(
            !to.contains("comm"),
            "{m} imports comm (the API is the top layer)"
        );
    }
}

#[test]
fn files_are_small() {
    let c = runtime();
    let mut big = Vec::new();
    for (rel, text) in &c.files {
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let exempt = SIZE_EXEMPT.contains(&first.trim_end_matches(".rs"));
        let n = text.lines().count();
        if n > MAX_LINES && !exempt {
            big.push(format!("{} ({n} lines)", rel.display()));
        }
    }
    assert!(big.is_empty(), "over {MAX_LINES} lines: {big:?}");
}

#[test]
fn algorithms_do_no_io() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../algorithms/src");
    for (rel, text) in rust_files(&dir) {
        let code = code_of(&rel, &text);
        for word in [
            "std::fs",
            "std::net",
            "std::io",
            "std::process",
            "std::env",
            "std::thread",
            "tokio",
            "println!",
            "eprintln!",
        ] {
            assert!(
                !code.contains(word),
                "algorithms/src/{} uses {word}",
                rel.display()
            );
        }
    }
}
