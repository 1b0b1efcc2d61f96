//! Hosts for a multi-host job: hostfiles, `--host` lists and the rank map,
//! with Open MPI's and MPICH Hydra's conventions.
//!
//! Pure: text in, hosts out; hosts in, a host index per rank out. Nothing here
//! reads a file, resolves a name or starts a process.
//!
//! # Hostfile ([`parse_hostfile`])
//!
//! One host per line, Open MPI style, with Hydra's `host:N` accepted too:
//!
//! ```text
//! # This is an example hostfile.  Comments begin with #
//! foo.example.com                  # 1 slot (see "Default slots" below)
//! bar.example.com slots=2
//! yow.example.com slots=4 max_slots=8
//! host1:2                          # Hydra: 2 slots
//! ```
//!
//! * `#` starts a comment, on a line of its own or after a host; blank lines
//!   and leading/trailing whitespace are ignored; `slots = 2` (spaces around
//!   `=`) is read as `slots=2`, as Open MPI's lexer does.
//! * Keywords: `slots=N` and `max_slots=N` (also spelt `max-slots`). Any other
//!   keyword is an error (Open MPI's `count`, `cpu`, `username`, `port`, ...
//!   included: mclaunch has no use for them, and a silently ignored keyword
//!   hides typos). N is a positive decimal integer (`slots=0` is refused).
//! * `max_slots` is **kept** ([`HostSlots::max_slots`]) and honoured by
//!   [`map_ranks`] as a hard cap when oversubscribing, as Open MPI does. It
//!   must be at least `slots`; given alone, it also sets `slots` (Open MPI:
//!   `host max_slots=4` is a host with 4 slots).
//! * A count given both ways (`h:2 slots=3`) or a keyword given twice on one
//!   line is an error.
//! * A host listed again adds its slots to the first mention (`a slots=2` and
//!   `a slots=3` on two lines is `a` with 5 slots); hosts keep the order of
//!   their first mention. `max_slots` of a merged host is the sum of the
//!   lines' `max_slots` if every line gives one, else unbounded.
//! * A name with more than one `:` is taken whole (an IPv6 literal such as
//!   `fe80::1`), so `host:N` applies only to names with a single `:`.
//!
//! Errors name the line and its text: `hostfile line 3: "h2 slots=x": slots
//! must be a positive integer`.
//!
//! # Default slots
//!
//! A host given without a count has **1 slot**, and
//! [`HostSlots::explicit_slots`] is `false`. That is Hydra's rule, Open MPI's
//! rule for `--host`, and Open MPI's rule for hostfiles before 4.x; Open MPI
//! 4+ (PRRTE) gives such a hostfile host as many slots as it has processor
//! cores, which mclaunch cannot know without reaching the host. A caller
//! that can learn the core count may replace `slots` where `explicit_slots`
//! is `false`.
//!
//! # `--host` ([`parse_host_list`])
//!
//! `h1:2,h2:2,h3` (Open MPI's `--host`, Hydra's `-hosts`): a host without
//! `:N` has 1 slot; a host named twice adds up (`a,a` is `a` with 2 slots,
//! `a:2,a` is `a` with 3).
//!
//! # The rank map ([`map_ranks`])
//!
//! Open MPI maps in two steps (ORTE's `rmaps_rr_mappers.c` and
//! `orte_rmaps_base_compute_vpids`, PRRTE's `rmaps_rr_mappers.c` and
//! `rmaps_base_ranking.c`): first how many ranks each host gets, then which
//! ranks they are. mclaunch does the same.
//!
//! * `np` defaults to the total number of slots.
//! * Within the slots, [`MapBy::Slot`] fills each host's slots in host order,
//!   and [`MapBy::Node`] deals one rank per host per round, skipping hosts
//!   whose slots are full.
//! * More ranks than slots is an error unless `oversubscribe`. Then the
//!   ranks beyond the slots are dealt one per host per round, starting again
//!   at the first host, skipping hosts at their `max_slots` (an error if
//!   every host is at its `max_slots`). Open MPI's documentation describes
//!   this ("loop through the list of nodes again and try to schedule one
//!   more process to each node"); its by-slot code computes the same counts
//!   (the extra ranks split evenly, the first hosts one more).
//! * Ranks are then numbered: by slot, each host's ranks are consecutive
//!   (host 0 gets ranks 0..c0, host 1 the next c1, ...); by node, one rank
//!   per host per round, skipping hosts that have all theirs.
//!
//! So with `a slots=2`, `b slots=2`, `-n 6 --oversubscribe`: by slot, a gets
//! 3 ranks and b 3, numbered `a a a b b b`; by node, `a b a b a b`. (Open
//! MPI 5's scheduling page shows an oversubscribed by-slot run as
//! `a a b b a a b b`; its code, which is what mclaunch follows, numbers each
//! host's ranks consecutively.)

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// Most ranks [`map_ranks`] will place (the map is a vector of this length).
pub const MAX_RANKS: u32 = 1 << 20;

/// A host and how many ranks it may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSlots {
    /// The host name (or address) as written.
    pub name: String,
    /// Ranks the host runs before it counts as oversubscribed (at least 1).
    pub slots: u32,
    /// Whether the count was written (`slots=`, `:N`, `max_slots=`, or the
    /// host named more than once), rather than the default of 1.
    pub explicit_slots: bool,
    /// Open MPI's `max_slots`: the most ranks the host may run even when
    /// oversubscribing; `None` is unbounded.
    pub max_slots: Option<u32>,
}

/// What is wrong with one hostfile line or `--host` item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A count (`slots=`, `max_slots=`, `:N`) that is not a positive integer.
    #[error("{0} must be a positive integer")]
    BadCount(&'static str),
    /// A `key=value` whose key is not `slots` or `max_slots`.
    #[error("unknown keyword {0:?} (expected slots=N or max_slots=N)")]
    UnknownKeyword(String),
    /// A word after the host name that is not `key=value`.
    #[error("unexpected {0:?} after the host name (expected slots=N or max_slots=N)")]
    Unexpected(String),
    /// The same count given twice on one line or item.
    #[error("{0} given twice")]
    Repeated(&'static str),
    /// `max_slots` below `slots`.
    #[error("max_slots={max} is below slots={slots}")]
    MaxBelowSlots {
        /// The slots.
        slots: u32,
        /// The max_slots.
        max: u32,
    },
    /// No host name (`:2`, `slots=2` alone, an empty `--host` item).
    #[error("no host name")]
    NoName,
    /// A host's merged slots exceed `u32::MAX`.
    #[error("too many slots for host {0:?}")]
    Overflow(String),
}

/// Why hosts could not be parsed or ranks not placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostsError {
    /// A hostfile line is malformed (`line` counts from 1).
    #[error("hostfile line {line}: {text:?}: {problem}")]
    Hostfile {
        /// The line number, from 1.
        line: usize,
        /// The line, trimmed.
        text: String,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A `--host` item is malformed.
    #[error("--host item {item:?}: {problem}")]
    HostList {
        /// The item, trimmed.
        item: String,
        /// What is wrong with it.
        problem: Problem,
    },
    /// No hosts to map ranks onto.
    #[error("no hosts given")]
    NoHosts,
    /// `-n 0`.
    #[error("no ranks asked for (-n must be at least 1)")]
    NoRanks,
    /// More ranks than [`MAX_RANKS`].
    #[error("{0} ranks asked for; at most {MAX_RANKS} are supported")]
    TooManyRanks(u64),
    /// More ranks than slots without `--oversubscribe`.
    #[error(
        "{np} ranks asked for but the hosts have {slots} slots; add --oversubscribe \
         to run more ranks than slots, or give the hosts more slots"
    )]
    NotEnoughSlots {
        /// Ranks asked for.
        np: u32,
        /// Slots on all hosts.
        slots: u64,
    },
    /// More ranks than the hosts' `max_slots` allow, even oversubscribed.
    #[error("{np} ranks asked for but the hosts' max_slots allow at most {max}")]
    OverMaxSlots {
        /// Ranks asked for.
        np: u32,
        /// The sum of max_slots.
        max: u64,
    },
    /// An unknown `--map-by` value.
    #[error("unknown mapping {0:?}: expected \"slot\" or \"node\"")]
    MapBy(String),
}

/// How ranks are spread over hosts (`--map-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MapBy {
    /// Fill each host's slots before the next host (Open MPI's default).
    #[default]
    Slot,
    /// One rank per host in turn, skipping full hosts.
    Node,
}

impl FromStr for MapBy {
    type Err = HostsError;
    /// `slot` or `node`, in any case.
    fn from_str(s: &str) -> Result<Self, HostsError> {
        match s.to_ascii_lowercase().as_str() {
            "slot" => Ok(MapBy::Slot),
            "node" => Ok(MapBy::Node),
            _ => Err(HostsError::MapBy(s.to_string())),
        }
    }
}

impl fmt::Display for MapBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MapBy::Slot => "slot",
            MapBy::Node => "node",
        })
    }
}

/// One parsed mention of a host, before merging.
struct Mention {
    name: String,
    slots: Option<u32>,
    max_slots: Option<u32>,
}

/// A positive decimal count (digits only: no sign, no spaces).
fn count(text: &str, what: &'static str) -> Result<u32, Problem> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::BadCount(what));
    }
    match text.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Problem::BadCount(what)),
    }
}

/// `name` or `name:N` (one `:` only; more is an IPv6 literal, taken whole).
fn name_and_count(word: &str) -> Result<(String, Option<u32>), Problem> {
    let (name, n) = match word.split_once(':') {
        Some((name, n)) if !n.contains(':') => (name, Some(count(n, "the :N slot count")?)),
        _ => (word, None),
    };
    if name.is_empty() {
        return Err(Problem::NoName);
    }
    Ok((name.to_string(), n))
}

/// `text` with the whitespace around each `=` removed.
fn join_equals(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '=' {
            while out.ends_with(char::is_whitespace) {
                out.pop();
            }
            out.push('=');
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One hostfile line without its comment, trimmed and not empty.
fn parse_line(line: &str) -> Result<Mention, Problem> {
    let joined = join_equals(line);
    let mut words = joined.split_whitespace();
    let first = words.next().ok_or(Problem::NoName)?;
    if first.contains('=') {
        return Err(Problem::NoName);
    }
    let (name, colon) = name_and_count(first)?;
    let mut slots = colon;
    let mut max_slots = None;
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(Problem::Unexpected(word.to_string()));
        };
        match key {
            "slots" => {
                if slots.is_some() {
                    return Err(Problem::Repeated("slots"));
                }
                slots = Some(count(value, "slots")?);
            }
            "max_slots" | "max-slots" => {
                if max_slots.is_some() {
                    return Err(Problem::Repeated("max_slots"));
                }
                max_slots = Some(count(value, "max_slots")?);
            }
            other => return Err(Problem::UnknownKeyword(other.to_string())),
        }
    }
    if let (Some(s), Some(m)) = (slots, max_slots) {
        if m < s {
            return Err(Problem::MaxBelowSlots { slots: s, max: m });
        }
    }
    Ok(Mention {
        name,
        slots: slots.or(max_slots),
        max_slots,
    })
}

/// Merges mentions of the same host, keeping the order of first mentions.
/// `err` turns a problem with mention `i` into the caller's error.
fn merge(
    mentions: Vec<Mention>,
    err: impl Fn(usize, Problem) -> HostsError,
) -> Result<Vec<HostSlots>, HostsError> {
    let mut hosts: Vec<HostSlots> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, m) in mentions.into_iter().enumerate() {
        let slots = m.slots.unwrap_or(1);
        match index.get(&m.name) {
            None => {
                index.insert(m.name.clone(), hosts.len());
                hosts.push(HostSlots {
                    name: m.name,
                    slots,
                    explicit_slots: m.slots.is_some(),
                    max_slots: m.max_slots,
                });
            }
            Some(&h) => {
                let host = &mut hosts[h];
                let overflow = || err(i, Problem::Overflow(host.name.clone()));
                host.slots = host.slots.checked_add(slots).ok_or_else(overflow)?;
                host.explicit_slots = true;
                host.max_slots = match (host.max_slots, m.max_slots) {
                    (Some(a), Some(b)) => Some(a.checked_add(b).ok_or_else(overflow)?),
                    _ => None,
                };
            }
        }
    }
    Ok(hosts)
}

/// Parses a hostfile (see the module documentation for the syntax).
///
/// A file with no hosts gives an empty list, not an error; [`map_ranks`]
/// refuses an empty list.
pub fn parse_hostfile(text: &str) -> Result<Vec<HostSlots>, HostsError> {
    let mut mentions = Vec::new();
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let code = raw.split('#').next().unwrap_or("").trim();
        if code.is_empty() {
            continue;
        }
        let err = |problem| HostsError::Hostfile {
            line: i + 1,
            text: raw.trim().to_string(),
            problem,
        };
        mentions.push(parse_line(code).map_err(err)?);
        lines.push((i + 1, raw.trim().to_string()));
    }
    merge(mentions, |m, problem| HostsError::Hostfile {
        line: lines[m].0,
        text: lines[m].1.clone(),
        problem,
    })
}

/// Parses an Open MPI `--host` list: `h1:2,h2:2,h3`.
pub fn parse_host_list(arg: &str) -> Result<Vec<HostSlots>, HostsError> {
    let items: Vec<&str> = arg.split(',').map(str::trim).collect();
    let mut mentions = Vec::new();
    for item in &items {
        let err = |problem| HostsError::HostList {
            item: item.to_string(),
            problem,
        };
        if item.chars().any(|c| c.is_whitespace() || c == '=') {
            return Err(err(Problem::Unexpected(item.to_string())));
        }
        let (name, slots) = name_and_count(item).map_err(err)?;
        mentions.push(Mention {
            name,
            slots,
            max_slots: None,
        });
    }
    merge(mentions, |m, problem| HostsError::HostList {
        item: items[m].to_string(),
        problem,
    })
}

/// Deals `n` ranks one per host per round over the hosts whose count is
/// below their cap (`None`: no cap), adding to `counts`. Returns how many
/// could not be placed because every host reached its cap.
fn deal(counts: &mut [u64], caps: &[Option<u64>], mut n: u64) -> u64 {
    let open = |h: usize, counts: &[u64]| caps[h].is_none_or(|c| counts[h] < c);
    let mut ring: Vec<usize> = (0..counts.len()).filter(|&h| open(h, counts)).collect();
    while n > 0 && !ring.is_empty() {
        // Whole rounds at once: every open host can take `r` more.
        let room = ring
            .iter()
            .filter_map(|&h| caps[h].map(|c| c - counts[h]))
            .min()
            .unwrap_or(u64::MAX);
        let r = (n / ring.len() as u64).min(room);
        if r > 0 {
            for &h in &ring {
                counts[h] += r;
            }
            n -= r * ring.len() as u64;
        } else {
            // A last partial round, or a round that fills some host.
            for &h in &ring {
                if n == 0 {
                    break;
                }
                counts[h] += 1;
                n -= 1;
            }
        }
        ring.retain(|&h| open(h, counts));
    }
    n
}

/// Places `np` ranks (default: all slots) on `hosts`; element `r` of the
/// result is the index in `hosts` of rank `r`'s host. See the module
/// documentation for the rules.
pub fn map_ranks(
    hosts: &[HostSlots],
    np: Option<u32>,
    map_by: MapBy,
    oversubscribe: bool,
) -> Result<Vec<usize>, HostsError> {
    if hosts.is_empty() {
        return Err(HostsError::NoHosts);
    }
    let total: u64 = hosts.iter().map(|h| u64::from(h.slots)).sum();
    let np64 = np.map_or(total, u64::from);
    if np64 == 0 {
        return Err(HostsError::NoRanks);
    }
    if np64 > u64::from(MAX_RANKS) {
        return Err(HostsError::TooManyRanks(np64));
    }
    let np = np64 as u32;
    if np64 > total && !oversubscribe {
        return Err(HostsError::NotEnoughSlots { np, slots: total });
    }
    // How many ranks each host gets.
    let mut counts = vec![0u64; hosts.len()];
    let within = np64.min(total);
    match map_by {
        MapBy::Slot => {
            let mut left = within;
            for (c, h) in counts.iter_mut().zip(hosts) {
                *c = left.min(u64::from(h.slots));
                left -= *c;
            }
        }
        MapBy::Node => {
            let caps: Vec<Option<u64>> = hosts.iter().map(|h| Some(u64::from(h.slots))).collect();
            deal(&mut counts, &caps, within);
        }
    }
    if np64 > total {
        let caps: Vec<Option<u64>> = hosts.iter().map(|h| h.max_slots.map(u64::from)).collect();
        if deal(&mut counts, &caps, np64 - total) > 0 {
            let max = caps.iter().map(|c| c.unwrap_or(0)).sum();
            return Err(HostsError::OverMaxSlots { np, max });
        }
    }
    // Which ranks they are.
    let mut map = Vec::with_capacity(np as usize);
    match map_by {
        MapBy::Slot => {
            for (h, &c) in counts.iter().enumerate() {
                map.extend(std::iter::repeat_n(h, c as usize));
            }
        }
        MapBy::Node => {
            let mut ring: Vec<usize> = (0..hosts.len()).filter(|&h| counts[h] > 0).collect();
            while !ring.is_empty() {
                for &h in &ring {
                    map.push(h);
                    counts[h] -= 1;
                }
                ring.retain(|&h| counts[h] > 0);
            }
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, slots: u32, explicit: bool) -> HostSlots {
        HostSlots {
            name: name.into(),
            slots,
            explicit_slots: explicit,
            max_slots: None,
        }
    }

    fn hosts(spec: &[u32]) -> Vec<HostSlots> {
        spec.iter()
            .enumerate()
            .map(|(i, &s)| h(&format!("h{i}"), s, true))
            .collect()
    }

    fn line_err(text: &str) -> (usize, Problem) {
        match parse_hostfile(text) {
            Err(HostsError::Hostfile { line, problem, .. }) => (line, problem),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn open_mpi_example_hostfile() {
        // The mpirun(1) / FAQ example.
        let text = "# This is an example hostfile.  Comments begin with #
#
# The following node is a single processor machine:
foo.example.com

# The following node is a dual-processor machine:
bar.example.com slots=2

# The following node is a quad-processor machine, and we absolutely
# want to disallow over-subscribing it:
yow.example.com slots=4 max-slots=4
";
        let got = parse_hostfile(text).unwrap();
        assert_eq!(
            got,
            [
                h("foo.example.com", 1, false),
                h("bar.example.com", 2, true),
                HostSlots {
                    max_slots: Some(4),
                    ..h("yow.example.com", 4, true)
                },
            ]
        );
    }

    #[test]
    fn hydra_example_hostfile() {
        let text = "donner:2     # The first 2 procs are scheduled to run here
foo:3        # The next 3 procs run on this host
shakey:2     # The last 2 procs run on this host
";
        let got = parse_hostfile(text).unwrap();
        assert_eq!(
            got,
            [
                h("donner", 2, true),
                h("foo", 3, true),
                h("shakey", 2, true)
            ]
        );
        assert_eq!(
            map_ranks(&got, None, MapBy::Slot, false).unwrap(),
            [0, 0, 1, 1, 1, 2, 2]
        );
    }

    #[test]
    fn whitespace_comments_and_spaced_equals() {
        let text =
            "\n   \t\n  a   slots = 3   # trailing\n#only a comment\n\tb:2\t\n c max_slots=5\n";
        let got = parse_hostfile(text).unwrap();
        assert_eq!(got[0], h("a", 3, true));
        assert_eq!(got[1], h("b", 2, true));
        // max_slots alone sets slots too, as in Open MPI.
        assert_eq!(
            got[2],
            HostSlots {
                max_slots: Some(5),
                ..h("c", 5, true)
            }
        );
        assert_eq!(parse_hostfile("# nothing\n\n").unwrap(), []);
        assert_eq!(parse_hostfile("").unwrap(), []);
    }

    #[test]
    fn repeated_hosts_add_up_in_first_mention_order() {
        let text = "a slots=2\nb\na slots=3\nb\nc\n";
        let got = parse_hostfile(text).unwrap();
        assert_eq!(got, [h("a", 5, true), h("b", 2, true), h("c", 1, false)]);
        // max_slots adds up only if every line gives one.
        let got = parse_hostfile("a max_slots=2\na max_slots=3\nb max_slots=2\nb\n").unwrap();
        assert_eq!(got[0].max_slots, Some(5));
        assert_eq!(got[1].max_slots, None);
    }

    #[test]
    fn ipv6_literals_are_names() {
        let got = parse_hostfile("fe80::1 slots=2\n::1\n10.0.0.1:4\n").unwrap();
        assert_eq!(
            got,
            [
                h("fe80::1", 2, true),
                h("::1", 1, false),
                h("10.0.0.1", 4, true)
            ]
        );
    }

    #[test]
    fn errors_name_the_line_and_its_text() {
        let e = parse_hostfile("h1\n# comment\nh2 slots=x\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"hostfile line 3: "h2 slots=x": slots must be a positive integer"#
        );
        let e = parse_hostfile("a\n\n  b slots=2 color=red  # why\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"hostfile line 3: "b slots=2 color=red  # why": unknown keyword "color" (expected slots=N or max_slots=N)"#
        );
    }

    #[test]
    fn malformed_lines() {
        let bad = |text: &str, problem: Problem| {
            assert_eq!(line_err(&format!("ok\n{text}\n")), (2, problem), "{text:?}");
        };
        bad("a slots=0", Problem::BadCount("slots"));
        bad("a slots=", Problem::BadCount("slots"));
        bad("a slots=-1", Problem::BadCount("slots"));
        bad("a slots=+1", Problem::BadCount("slots"));
        bad("a slots=99999999999", Problem::BadCount("slots"));
        bad("a max_slots=0", Problem::BadCount("max_slots"));
        bad("a:0", Problem::BadCount("the :N slot count"));
        bad("a:", Problem::BadCount("the :N slot count"));
        bad("a:x", Problem::BadCount("the :N slot count"));
        bad(":2", Problem::NoName);
        bad("slots=2", Problem::NoName);
        bad("a:2 slots=3", Problem::Repeated("slots"));
        bad("a slots=2 slots=3", Problem::Repeated("slots"));
        bad("a max_slots=2 max-slots=3", Problem::Repeated("max_slots"));
        bad(
            "a slots=3 max_slots=2",
            Problem::MaxBelowSlots { slots: 3, max: 2 },
        );
        bad("a count=2", Problem::UnknownKeyword("count".into()));
        bad("a b", Problem::Unexpected("b".into()));
        bad("a slots 2", Problem::Unexpected("slots".into()));
    }

    #[test]
    fn merged_slots_overflow_is_an_error() {
        let text = format!("a slots={}\na slots=1\n", u32::MAX);
        assert_eq!(line_err(&text), (2, Problem::Overflow("a".into())));
    }

    #[test]
    fn host_lists() {
        assert_eq!(
            parse_host_list("h1:2,h2:2,h3").unwrap(),
            [h("h1", 2, true), h("h2", 2, true), h("h3", 1, false)]
        );
        assert_eq!(parse_host_list("a,a").unwrap(), [h("a", 2, true)]);
        assert_eq!(
            parse_host_list("a:2,b,a").unwrap(),
            [h("a", 3, true), h("b", 1, false)]
        );
        assert_eq!(
            parse_host_list(" a , b ").unwrap(),
            [h("a", 1, false), h("b", 1, false)]
        );
        assert_eq!(
            parse_host_list("fe80::1").unwrap(),
            [h("fe80::1", 1, false)]
        );
        let bad = |arg: &str, item: &str, problem: Problem| {
            assert_eq!(
                parse_host_list(arg),
                Err(HostsError::HostList {
                    item: item.into(),
                    problem
                }),
                "{arg:?}"
            );
        };
        bad("", "", Problem::NoName);
        bad("a,,b", "", Problem::NoName);
        bad("a,", "", Problem::NoName);
        bad("a:", "a:", Problem::BadCount("the :N slot count"));
        bad("a:0", "a:0", Problem::BadCount("the :N slot count"));
        bad("b,a:x", "a:x", Problem::BadCount("the :N slot count"));
        bad("a b", "a b", Problem::Unexpected("a b".into()));
        bad(
            "a slots=2",
            "a slots=2",
            Problem::Unexpected("a slots=2".into()),
        );
        let e = parse_host_list("a,b:two").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"--host item "b:two": the :N slot count must be a positive integer"#
        );
    }

    #[test]
    fn map_by_parses() {
        assert_eq!("slot".parse::<MapBy>().unwrap(), MapBy::Slot);
        assert_eq!("NODE".parse::<MapBy>().unwrap(), MapBy::Node);
        let e = "core".parse::<MapBy>().unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"unknown mapping "core": expected "slot" or "node""#
        );
        assert_eq!(MapBy::default(), MapBy::Slot);
        assert_eq!(MapBy::Node.to_string(), "node");
    }

    #[test]
    fn np_defaults_to_all_slots() {
        let hs = hosts(&[2, 1, 3]);
        assert_eq!(
            map_ranks(&hs, None, MapBy::Slot, false).unwrap(),
            [0, 0, 1, 2, 2, 2]
        );
        assert_eq!(
            map_ranks(&hs, None, MapBy::Node, false).unwrap(),
            [0, 1, 2, 0, 2, 2]
        );
    }

    #[test]
    fn fewer_ranks_than_slots() {
        let hs = hosts(&[2, 1, 3]);
        assert_eq!(
            map_ranks(&hs, Some(3), MapBy::Slot, false).unwrap(),
            [0, 0, 1]
        );
        assert_eq!(
            map_ranks(&hs, Some(4), MapBy::Node, false).unwrap(),
            [0, 1, 2, 0]
        );
        assert_eq!(map_ranks(&hs, Some(1), MapBy::Node, false).unwrap(), [0]);
    }

    #[test]
    fn oversubscribing_is_refused_without_the_flag() {
        let hs = hosts(&[2, 2]);
        let e = map_ranks(&hs, Some(5), MapBy::Slot, false).unwrap_err();
        assert_eq!(e, HostsError::NotEnoughSlots { np: 5, slots: 4 });
        assert!(e
            .to_string()
            .starts_with("5 ranks asked for but the hosts have 4 slots; add --oversubscribe"));
        assert_eq!(
            map_ranks(&hs, Some(5), MapBy::Node, false),
            Err(HostsError::NotEnoughSlots { np: 5, slots: 4 })
        );
    }

    #[test]
    fn oversubscribing_deals_the_extra_ranks_round_robin() {
        let hs = hosts(&[2, 2]);
        // 2 extra ranks: one more on each host; by slot each host's ranks
        // are consecutive, by node they alternate.
        assert_eq!(
            map_ranks(&hs, Some(6), MapBy::Slot, true).unwrap(),
            [0, 0, 0, 1, 1, 1]
        );
        assert_eq!(
            map_ranks(&hs, Some(6), MapBy::Node, true).unwrap(),
            [0, 1, 0, 1, 0, 1]
        );
        // Uneven: slots 1 and 3, 3 extra: h0 gets 2 more, h1 1 more.
        let hs = hosts(&[1, 3]);
        assert_eq!(
            map_ranks(&hs, Some(7), MapBy::Slot, true).unwrap(),
            [0, 0, 0, 1, 1, 1, 1]
        );
        assert_eq!(
            map_ranks(&hs, Some(7), MapBy::Node, true).unwrap(),
            [0, 1, 0, 1, 0, 1, 1]
        );
        // The flag changes nothing while the slots suffice.
        assert_eq!(
            map_ranks(&hs, Some(3), MapBy::Slot, true).unwrap(),
            [0, 1, 1]
        );
    }

    #[test]
    fn max_slots_caps_oversubscription() {
        let mut hs = hosts(&[2, 2, 1]);
        hs[0].max_slots = Some(2);
        hs[2].max_slots = Some(3);
        // 4 extra: h0 is at its max; h1 and h2 share them.
        let map = map_ranks(&hs, Some(9), MapBy::Slot, true).unwrap();
        assert_eq!(map, [0, 0, 1, 1, 1, 1, 2, 2, 2]);
        hs[1].max_slots = Some(2);
        assert_eq!(
            map_ranks(&hs, Some(8), MapBy::Node, true),
            Err(HostsError::OverMaxSlots { np: 8, max: 7 })
        );
        assert_eq!(map_ranks(&hs, Some(7), MapBy::Node, true).unwrap().len(), 7);
    }

    #[test]
    fn degenerate_requests() {
        assert_eq!(
            map_ranks(&[], None, MapBy::Slot, true),
            Err(HostsError::NoHosts)
        );
        assert_eq!(
            map_ranks(&hosts(&[1]), Some(0), MapBy::Slot, true),
            Err(HostsError::NoRanks)
        );
        assert_eq!(
            map_ranks(&hosts(&[1]), Some(MAX_RANKS + 1), MapBy::Slot, true),
            Err(HostsError::TooManyRanks(u64::from(MAX_RANKS) + 1))
        );
        let big = hosts(&[u32::MAX, u32::MAX]);
        assert_eq!(
            map_ranks(&big, None, MapBy::Slot, false),
            Err(HostsError::TooManyRanks(2 * u64::from(u32::MAX)))
        );
        // A large oversubscription is computed in whole rounds, not rank by rank.
        let map = map_ranks(&hosts(&[1, 1]), Some(MAX_RANKS), MapBy::Node, true).unwrap();
        assert_eq!(map.len(), MAX_RANKS as usize);
    }

    /// Every small case: the right number of ranks, slots respected when
    /// they suffice, by-slot ranks consecutive per host, and both policies
    /// giving the hosts the same counts once oversubscribed.
    #[test]
    fn small_cases_are_consistent() {
        let specs: &[&[u32]] = &[&[1], &[3], &[1, 1], &[2, 1], &[1, 3, 2], &[4, 1, 1, 2]];
        for spec in specs {
            let hs = hosts(spec);
            let total: u32 = spec.iter().sum();
            for np in 1..=total + 5 {
                let slot = map_ranks(&hs, Some(np), MapBy::Slot, true).unwrap();
                let node = map_ranks(&hs, Some(np), MapBy::Node, true).unwrap();
                let count = |m: &[usize]| {
                    let mut c = vec![0u32; spec.len()];
                    m.iter().for_each(|&h| c[h] += 1);
                    c
                };
                assert_eq!(slot.len(), np as usize);
                assert_eq!(node.len(), np as usize);
                assert!(slot.windows(2).all(|w| w[0] <= w[1]), "{spec:?} {np}");
                if np <= total {
                    for m in [&slot, &node] {
                        let c = count(m);
                        assert!(c.iter().zip(*spec).all(|(c, s)| c <= s), "{spec:?} {np}");
                    }
                    assert_eq!(map_ranks(&hs, Some(np), MapBy::Node, false).unwrap(), node);
                } else {
                    assert_eq!(count(&slot), count(&node), "{spec:?} {np}");
                    let c = count(&slot);
                    let extra: Vec<u32> = c.iter().zip(*spec).map(|(c, s)| c - s).collect();
                    let (lo, hi) = (extra.iter().min().unwrap(), extra.iter().max().unwrap());
                    assert!(hi - lo <= 1, "{spec:?} {np}: {extra:?}");
                }
            }
        }
    }
}
