//! Slurm hostlist expansion: `SLURM_JOB_NODELIST` / `SLURM_STEP_NODELIST`
//! values such as `node[01-04,07],login` into host names.
//!
//! A leaf: pure, imports nothing from the crate.
//!
//! # Syntax (as Slurm's `hostlist_create` reads it)
//!
//! * Commas outside brackets separate hosts: `h[1-3],login` is
//!   `h1 h2 h3 login`.
//! * A bracket group holds comma-separated numbers and ranges `lo-hi`
//!   (`lo <= hi`, decimal). Each number is printed at least as wide as the
//!   `lo` it came from was written, zero-padded, which is Slurm's rule:
//!   `node[01-04,07]` is `node01 .. node04 node07`, `n[8-10]` is `n8 n9 n10`,
//!   `n[08-10]` is `n08 n09 n10`.
//! * Text may follow a group: `a[1-2]-ib` is `a1-ib a2-ib`.
//! * Several groups in one host give every combination, the first group
//!   outermost, as Slurm does: `rack[1-2]-node[1-2]` is `rack1-node1
//!   rack1-node2 rack2-node1 rack2-node2`.
//! * Order and duplicates are kept (`h[1,1]` is `h1 h1`).
//! * Leading and trailing whitespace of the whole value is ignored; whitespace
//!   anywhere else, an empty host (`a,,b`, a trailing comma), an empty group
//!   (`h[]`, `h[1,]`), a non-number (`h[a-b]`), a reversed range (`h[3-1]`),
//!   an unclosed `[`, a stray `]` or a `[` inside a group is an error, with
//!   its byte offset. Nothing panics, whatever the input.
//! * At most [`MAX_NAMES`] names and about [`MAX_BYTES`] bytes of names:
//!   `n[0-999999999]` is an error, found before anything is allocated.
//!
//! # Why not the `hostlist` crate
//!
//! The `hostlist` crate (0.3.1, by Janne Blomqvist; tried with
//! `default-features = false`) builds on this toolchain (it brings nom 6 and,
//! through it, 13 more crates: bitvec, funty, radium, wyz, tap, lexical-core,
//! arrayvec, bitflags, cfg-if, ryu, static_assertions, memchr and
//! version_check) and expands the valid cases
//! above correctly. It was not used because its parser stops at the first
//! thing it cannot read and returns what it read so far, so malformed lists
//! are accepted: `h[1-` gives `["h"]`, as do `h[a-b]` and `h[]`; `n[1-2]x[`
//! gives `["n1x", "n2x"]`; `h[1-3]]x` gives `["h1]x", ...]`; the empty string
//! gives `[""]`. It reverses `h[3-1]` silently instead of refusing it. It
//! panics on numbers past `u32` (`n[99999999999]`: an `expect` on the parse)
//! and on `h[1-4294967295]` (an overflowing `+ 1`). It has no size limit
//! (`n[0-999999999]` tries to allocate a billion strings), and its error is
//! a bare "Invalid hostlist" with no position. The hand-written parser below
//! is about a hundred lines.

use std::fmt;

/// Most names [`expand`] returns.
pub const MAX_NAMES: u64 = 1_000_000;
/// Most bytes of names [`expand`] returns (an upper bound is checked before
/// expanding).
pub const MAX_BYTES: u64 = 64 << 20;

/// What is wrong with a hostlist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The list is empty (or only whitespace).
    Empty,
    /// A host with no name (`a,,b`, a leading or trailing comma).
    EmptyHost,
    /// A `[` with no `]`.
    Unclosed,
    /// A `]` with no `[`.
    StrayClose,
    /// A `[` inside a bracket group.
    Nested,
    /// Whitespace inside the list.
    Whitespace,
    /// An empty item in a bracket group (`h[]`, `h[1,]`, `h[,1]`).
    EmptyRange,
    /// A range item that is not `N` or `N-M` in decimal.
    NotANumber,
    /// A number too large to expand (more than 18 digits).
    TooLong,
    /// `lo-hi` with `lo > hi`.
    Reversed,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Problem::Empty => "empty hostlist",
            Problem::EmptyHost => "empty host name",
            Problem::Unclosed => "'[' is not closed",
            Problem::StrayClose => "']' without '['",
            Problem::Nested => "'[' inside brackets",
            Problem::Whitespace => "whitespace",
            Problem::EmptyRange => "empty range",
            Problem::NotANumber => "a range must be N or N-M in decimal",
            Problem::TooLong => "number too large",
            Problem::Reversed => "range goes down (lo > hi)",
        })
    }
}

/// Why a hostlist could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    /// The list is malformed at byte `at`.
    #[error("hostlist {list:?}: {problem} at byte {at}")]
    Syntax {
        /// The list (shortened to 80 characters).
        list: String,
        /// Byte offset of the problem in the (untrimmed) list.
        at: usize,
        /// What is wrong.
        problem: Problem,
    },
    /// The list expands to more than [`MAX_NAMES`] names or [`MAX_BYTES`].
    #[error("hostlist {list:?} expands to too many names (over {names} names or {bytes} bytes; at most {MAX_NAMES} names and {MAX_BYTES} bytes)")]
    TooLarge {
        /// The list (shortened to 80 characters).
        list: String,
        /// Names it would expand to (saturating).
        names: u64,
        /// Upper bound of the bytes of names (saturating).
        bytes: u64,
    },
}

/// One number or `lo-hi` range of a bracket group.
#[derive(Debug, Clone, Copy)]
struct Range {
    lo: u64,
    hi: u64,
    /// Digits `lo` was written with: the minimum width, zero-padded.
    width: usize,
}

/// A piece of a host: literal text or a bracket group.
#[derive(Debug)]
enum Part<'a> {
    Text(&'a str),
    Group(Vec<Range>),
}

impl Part<'_> {
    /// How many strings the part stands for.
    fn count(&self) -> u64 {
        match self {
            Part::Text(_) => 1,
            Part::Group(rs) => rs
                .iter()
                .fold(0u64, |n, r| n.saturating_add(r.hi - r.lo + 1)),
        }
    }

    /// The longest string the part stands for.
    fn max_len(&self) -> u64 {
        match self {
            Part::Text(t) => t.len() as u64,
            Part::Group(rs) => rs
                .iter()
                .map(|r| r.width.max(digits(r.hi)) as u64)
                .max()
                .unwrap_or(0),
        }
    }

    /// The strings the part stands for, in order.
    fn strings(&self) -> Vec<String> {
        match self {
            Part::Text(t) => vec![t.to_string()],
            Part::Group(rs) => rs
                .iter()
                .flat_map(|r| (r.lo..=r.hi).map(move |n| format!("{n:0w$}", w = r.width)))
                .collect(),
        }
    }
}

fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// A number of at most 18 decimal digits (so `hi - lo + 1` cannot overflow).
fn number(text: &str) -> Result<u64, Problem> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::NotANumber);
    }
    if text.len() > 18 {
        return Err(Problem::TooLong);
    }
    text.parse().map_err(|_| Problem::TooLong)
}

/// One bracket group's contents (between `[` and `]`), starting at byte `at`.
fn group(body: &str, at: usize) -> Result<Vec<Range>, (usize, Problem)> {
    let mut ranges = Vec::new();
    let mut offset = at;
    for item in body.split(',') {
        let err = |p| (offset, p);
        if item.is_empty() {
            return Err(err(Problem::EmptyRange));
        }
        let (lo_text, hi_text) = item.split_once('-').unwrap_or((item, item));
        let lo = number(lo_text).map_err(err)?;
        let hi = number(hi_text).map_err(err)?;
        if lo > hi {
            return Err(err(Problem::Reversed));
        }
        ranges.push(Range {
            lo,
            hi,
            width: lo_text.len(),
        });
        offset += item.len() + 1;
    }
    Ok(ranges)
}

/// Splits `list` into hosts, each a sequence of parts; byte offsets are into
/// `list`, which starts at byte `base` of the caller's string.
fn parse(list: &str, base: usize) -> Result<Vec<Vec<Part<'_>>>, (usize, Problem)> {
    let mut hosts = Vec::new();
    let mut parts = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    let bytes = list.as_bytes();
    while i <= bytes.len() {
        match bytes.get(i) {
            None | Some(b',') => {
                if text_start < i {
                    parts.push(Part::Text(&list[text_start..i]));
                }
                if parts.is_empty() {
                    return Err((base + i, Problem::EmptyHost));
                }
                hosts.push(std::mem::take(&mut parts));
                text_start = i + 1;
            }
            Some(b'[') => {
                if text_start < i {
                    parts.push(Part::Text(&list[text_start..i]));
                }
                let open = i;
                let close = list[open + 1..]
                    .find([']', '['])
                    .map(|j| open + 1 + j)
                    .ok_or((base + open, Problem::Unclosed))?;
                if bytes[close] == b'[' {
                    return Err((base + close, Problem::Nested));
                }
                parts.push(Part::Group(group(&list[open + 1..close], base + open + 1)?));
                i = close;
                text_start = close + 1;
            }
            Some(b']') => return Err((base + i, Problem::StrayClose)),
            Some(b) if b.is_ascii_whitespace() => return Err((base + i, Problem::Whitespace)),
            Some(_) => {}
        }
        i += 1;
    }
    Ok(hosts)
}

/// `list` for an error message: at most 80 characters.
fn shown(list: &str) -> String {
    if list.chars().count() <= 80 {
        list.to_string()
    } else {
        let mut s: String = list.chars().take(77).collect();
        s.push_str("...");
        s
    }
}

/// Expands a Slurm hostlist (see the module documentation) into host names,
/// in order.
pub fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    let syntax = |(at, problem)| HostlistError::Syntax {
        list: shown(list),
        at,
        problem,
    };
    let trimmed = list.trim();
    if trimmed.is_empty() {
        return Err(syntax((0, Problem::Empty)));
    }
    let base = list.len() - list.trim_start().len();
    let hosts = parse(trimmed, base).map_err(syntax)?;
    // Sizes first, with saturating arithmetic: nothing big is allocated for
    // a list that is refused.
    let (mut names, mut bytes) = (0u64, 0u64);
    for parts in &hosts {
        let n = parts.iter().fold(1u64, |n, p| n.saturating_mul(p.count()));
        let len: u64 = parts.iter().map(Part::max_len).sum();
        names = names.saturating_add(n);
        bytes = bytes.saturating_add(n.saturating_mul(len));
    }
    if names > MAX_NAMES || bytes > MAX_BYTES {
        return Err(HostlistError::TooLarge {
            list: shown(list),
            names,
            bytes,
        });
    }
    let mut out = Vec::with_capacity(names as usize);
    for parts in &hosts {
        let mut names = vec![String::new()];
        for part in parts {
            let strings = part.strings();
            names = names
                .iter()
                .flat_map(|prefix| strings.iter().map(move |s| format!("{prefix}{s}")))
                .collect();
        }
        out.extend(names);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(list: &str) -> Vec<String> {
        expand(list).unwrap_or_else(|e| panic!("{list:?}: {e}"))
    }

    fn bad(list: &str) -> (usize, Problem) {
        match expand(list) {
            Err(HostlistError::Syntax { at, problem, .. }) => (at, problem),
            other => panic!("{list:?}: {other:?}"),
        }
    }

    #[test]
    fn plain_names() {
        assert_eq!(ok("h1"), ["h1"]);
        assert_eq!(ok("a,b.example.com,c-1"), ["a", "b.example.com", "c-1"]);
        assert_eq!(ok("  h1\n"), ["h1"]);
    }

    #[test]
    fn ranges_keep_zero_padding() {
        assert_eq!(
            ok("node[01-04,07]"),
            ["node01", "node02", "node03", "node04", "node07"]
        );
        assert_eq!(ok("n[8-10]"), ["n8", "n9", "n10"]);
        assert_eq!(ok("n[08-10]"), ["n08", "n09", "n10"]);
        assert_eq!(ok("n[098-101]"), ["n098", "n099", "n100", "n101"]);
        assert_eq!(ok("n[0]"), ["n0"]);
        assert_eq!(ok("n[5,1,1]"), ["n5", "n1", "n1"]);
    }

    #[test]
    fn suffixes_and_several_hosts() {
        assert_eq!(ok("a[1-2]-ib,b3"), ["a1-ib", "a2-ib", "b3"]);
        assert_eq!(ok("h[1-3],login"), ["h1", "h2", "h3", "login"]);
        assert_eq!(ok("[1-2]x"), ["1x", "2x"]);
        assert_eq!(
            ok("login,h[1-2].cluster,gpu[7]"),
            ["login", "h1.cluster", "h2.cluster", "gpu7"]
        );
    }

    #[test]
    fn several_groups_multiply() {
        assert_eq!(
            ok("rack[1-2]-node[1-2]"),
            ["rack1-node1", "rack1-node2", "rack2-node1", "rack2-node2"]
        );
        assert_eq!(ok("r[1-2][3-4]"), ["r13", "r14", "r23", "r24"]);
        assert_eq!(ok("a[1-2]b,c[9-10]d[0]"), ["a1b", "a2b", "c9d0", "c10d0"]);
    }

    #[test]
    fn malformed_lists_are_errors() {
        assert_eq!(bad(""), (0, Problem::Empty));
        assert_eq!(bad("  \t"), (0, Problem::Empty));
        assert_eq!(bad("h[1-"), (1, Problem::Unclosed));
        assert_eq!(bad("h[3-1]"), (2, Problem::Reversed));
        assert_eq!(bad("h[a-b]"), (2, Problem::NotANumber));
        assert_eq!(bad("h[]"), (2, Problem::EmptyRange));
        assert_eq!(bad("h[1,]"), (4, Problem::EmptyRange));
        assert_eq!(bad("h[,1]"), (2, Problem::EmptyRange));
        assert_eq!(bad("h[1-2-3]"), (2, Problem::NotANumber));
        assert_eq!(bad("h[-1]"), (2, Problem::NotANumber));
        assert_eq!(bad("h[1-]"), (2, Problem::NotANumber));
        assert_eq!(bad("h]"), (1, Problem::StrayClose));
        assert_eq!(bad("h[1-3]]x"), (6, Problem::StrayClose));
        assert_eq!(bad("n[1-2]x["), (7, Problem::Unclosed));
        assert_eq!(bad("h[1[2]]"), (3, Problem::Nested));
        assert_eq!(bad("a,,b"), (2, Problem::EmptyHost));
        assert_eq!(bad(",a"), (0, Problem::EmptyHost));
        assert_eq!(bad("a,"), (2, Problem::EmptyHost));
        assert_eq!(bad("a b"), (1, Problem::Whitespace));
        assert_eq!(bad("  a, b"), (4, Problem::Whitespace));
        assert_eq!(bad("n[99999999999999999999]"), (2, Problem::TooLong));
        assert_eq!(bad("h[1- 2]"), (2, Problem::NotANumber));
    }

    #[test]
    fn errors_read_well() {
        let e = expand("node[01-04,x]").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"hostlist "node[01-04,x]": a range must be N or N-M in decimal at byte 11"#
        );
        let long = format!("{},h]", "a".repeat(200));
        let e = expand(&long).unwrap_err().to_string();
        assert!(e.len() < 150, "{e}");
    }

    #[test]
    fn huge_expansions_are_refused_before_allocating() {
        for list in [
            "n[0-999999999]",
            "n[0-999999999999999999]",
            "a[0-999999999999999999][0-999999999999999999][0-999999999999999999]",
            "a[1-1000][1-1001]",
        ] {
            assert!(
                matches!(expand(list), Err(HostlistError::TooLarge { .. })),
                "{list}"
            );
        }
        // Many short names are fine up to the limit; long ones hit the byte cap.
        assert_eq!(ok("n[1-1000000]").len(), 1_000_000);
        let long = format!("{}[1-100000]", "x".repeat(1000));
        assert!(matches!(expand(&long), Err(HostlistError::TooLarge { .. })));
    }

    proptest::proptest! {
        #[test]
        fn random_strings_never_panic(s in "[a-c0-9\\[\\],\\- ]{0,40}") {
            if let Ok(names) = expand(&s) {
                proptest::prop_assert!(!names.is_empty());
                for n in &names {
                    proptest::prop_assert!(!n.is_empty());
                    proptest::prop_assert!(!n.contains(['[', ']', ',', ' ']));
                }
            }
        }

        #[test]
        fn any_string_never_panics(s in "\\PC{0,60}") {
            let _ = expand(&s);
        }

        #[test]
        fn ranges_expand_to_their_numbers(lo in 0u64..1000, len in 0u64..50, pad in 0usize..4) {
            let hi = lo + len;
            let list = format!("n[{lo:0w$}-{hi}]", w = pad);
            let names = expand(&list).unwrap();
            proptest::prop_assert_eq!(names.len() as u64, len + 1);
            for (i, name) in names.iter().enumerate() {
                let num = &name[1..];
                proptest::prop_assert_eq!(num.parse::<u64>().unwrap(), lo + i as u64);
                proptest::prop_assert!(num.len() >= pad);
            }
        }
    }
}
