//! Which local address a rank listens on: interface selection for `MCAST_IF`
//! and `mclaunch --if LIST`.
//!
//! Not a leaf (it reads the OS's interfaces and opens a UDP socket in
//! [`route_source`]), but it imports nothing from the crate but leaves
//! (checked by `runtime/tests/layers.rs`). Everything except
//! [`list_interfaces`] and [`route_source`] is pure and unit-tested on
//! made-up interface lists.
//!
//! # Selectors ([`IfSelector`])
//!
//! A comma-separated list of items, each an interface name (`eth0`) or a
//! CIDR block (`10.0.0.0/8`, `192.168.1.0/24`, `fd00::/64`), optionally
//! prefixed with `^` to exclude it. This is Open MPI's `btl_tcp_if_include`
//! and `btl_tcp_if_exclude` in one list:
//!
//! * an interface address is **included** if the list has no inclusions, or
//!   if its interface's name or its address matches an inclusion;
//! * it is then **dropped** if its name or address matches an exclusion.
//!
//! So `^docker0` is every address but docker0's, `10.0.0.0/8` every address
//! in 10/8, and `eth0,^10.0.0.5/32` eth0's addresses but 10.0.0.5. A `^`
//! in front of the **first** item negates the whole list, as in Open MPI's
//! component lists (`--mca btl ^tcp,self`) and the way the issue writes it:
//! `^docker0,lo` excludes both docker0 and lo. A `^` in front of a later
//! item excludes that item only, so a list that includes and excludes
//! names its inclusions first (`eth0,^10.0.0.5/32`).
//!
//! Names match exactly. A CIDR's host bits are ignored (`10.1.2.3/16` is
//! `10.1.0.0/16`), a bare address is a one-address block (`/32`, `/128`),
//! and a block matches only addresses of its own family.
//!
//! # The address to listen on ([`pick_bind`])
//!
//! 1. With a selector: the first selected address that is not loopback,
//!    IPv4 before IPv6; a loopback address only if nothing else is selected
//!    (IPv4 first again). No address selected is an error that lists the
//!    interfaces and their addresses.
//! 2. Else, with the address the kernel routes from toward the rendezvous
//!    (the caller's [`route_source`] of the rendezvous address): that
//!    address, unless it is loopback or unspecified.
//! 3. Else `127.0.0.1`.
//!
//! [`route_source`] is kept out of [`pick_bind`] so that the rules stay pure.
//!
//! # Listing interfaces
//!
//! [`list_interfaces`] uses the `if-addrs` crate (maintained, `getifaddrs`
//! on Unix, `GetAdaptersAddresses` on Windows, no dependencies here beyond
//! `libc`) rather than `libc::getifaddrs` by hand, which would be unsafe
//! pointer walking for no gain. Without its `link-local` feature it omits
//! IPv6 link-local addresses (`fe80::/10`), which need a scope id to bind
//! and are never what a rank should listen on.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::str::FromStr;

/// One address of one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfAddr {
    /// The interface's name (`eth0`, `lo`, ...).
    pub name: String,
    /// One of its addresses (an interface with several has several entries).
    pub addr: IpAddr,
}

/// A CIDR block: an address and a prefix length, host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The block of `addr` with `prefix` leading bits, or `None` if the
    /// prefix is longer than the address (32 for IPv4, 128 for IPv6).
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Cidr> {
        let network = match addr {
            IpAddr::V4(a) if prefix <= 32 => {
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask32(prefix)))
            }
            IpAddr::V6(a) if prefix <= 128 => {
                IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask128(prefix)))
            }
            _ => return None,
        };
        Some(Cidr { network, prefix })
    }

    /// The network address (host bits cleared).
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `addr` is in the block (never across families).
    pub fn contains(&self, addr: &IpAddr) -> bool {
        match (self.network, addr) {
            (IpAddr::V4(n), IpAddr::V4(a)) => u32::from(*a) & mask32(self.prefix) == u32::from(n),
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                u128::from(*a) & mask128(self.prefix) == u128::from(n)
            }
            _ => false,
        }
    }
}

fn mask32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask128(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl FromStr for Cidr {
    type Err = NetifError;
    /// `ADDR/LEN`, or a bare `ADDR` (`/32` or `/128`).
    fn from_str(s: &str) -> Result<Cidr, NetifError> {
        let bad = |problem| NetifError::BadItem {
            item: s.to_string(),
            problem,
        };
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad(ItemProblem::BadAddress))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p
                .parse::<u8>()
                .map_err(|_| bad(ItemProblem::BadPrefix(max)))?,
            Some(_) => return Err(bad(ItemProblem::BadPrefix(max))),
        };
        Cidr::new(addr, prefix).ok_or_else(|| bad(ItemProblem::BadPrefix(max)))
    }
}

/// One item of a selector: an interface name or a CIDR block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfRule {
    /// An interface name, matched exactly.
    Name(String),
    /// The addresses in a block.
    Cidr(Cidr),
}

impl IfRule {
    /// Whether the rule matches this interface address.
    pub fn matches(&self, ifa: &IfAddr) -> bool {
        match self {
            IfRule::Name(n) => ifa.name == *n,
            IfRule::Cidr(c) => c.contains(&ifa.addr),
        }
    }
}

impl fmt::Display for IfRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IfRule::Name(n) => f.write_str(n),
            IfRule::Cidr(c) => c.fmt(f),
        }
    }
}

impl FromStr for IfRule {
    type Err = NetifError;
    /// A CIDR if it has a `/` or parses as an address, else a name.
    fn from_str(s: &str) -> Result<IfRule, NetifError> {
        if s.contains('/') || s.parse::<IpAddr>().is_ok() {
            return s.parse().map(IfRule::Cidr);
        }
        let problem = if s.is_empty() {
            ItemProblem::Empty
        } else if s.chars().any(|c| c.is_whitespace() || c == '^') {
            ItemProblem::BadName
        } else {
            return Ok(IfRule::Name(s.to_string()));
        };
        let item = s.to_string();
        Err(NetifError::BadItem { item, problem })
    }
}

/// Which interface addresses a rank may use (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfSelector {
    include: Vec<IfRule>,
    exclude: Vec<IfRule>,
}

impl IfSelector {
    /// The inclusions (empty: everything is included).
    pub fn include(&self) -> &[IfRule] {
        &self.include
    }

    /// The exclusions.
    pub fn exclude(&self) -> &[IfRule] {
        &self.exclude
    }

    /// Whether the selector keeps this interface address.
    pub fn accepts(&self, ifa: &IfAddr) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| r.matches(ifa)))
            && !self.exclude.iter().any(|r| r.matches(ifa))
    }

    /// The interface addresses the selector keeps, in their order.
    pub fn select<'a>(&self, ifs: &'a [IfAddr]) -> Vec<&'a IfAddr> {
        ifs.iter().filter(|i| self.accepts(i)).collect()
    }
}

impl fmt::Display for IfSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inc = self.include.iter().map(|r| r.to_string());
        let exc = self.exclude.iter().map(|r| format!("^{r}"));
        let items: Vec<String> = inc.chain(exc).collect();
        f.write_str(&items.join(","))
    }
}

impl FromStr for IfSelector {
    type Err = NetifError;
    /// `item[,item]...`, each `[^]NAME` or `[^]CIDR`; whitespace around items
    /// is ignored.
    fn from_str(s: &str) -> Result<IfSelector, NetifError> {
        if s.trim().is_empty() {
            return Err(NetifError::EmptySelector);
        }
        let mut sel = IfSelector {
            include: Vec::new(),
            exclude: Vec::new(),
        };
        let all_excluded = s.trim_start().starts_with('^');
        for item in s.split(',').map(str::trim) {
            let (list, rule) = match item.strip_prefix('^') {
                Some(rest) => (&mut sel.exclude, rest.trim()),
                None if all_excluded => (&mut sel.exclude, item),
                None => (&mut sel.include, item),
            };
            let rule = rule.parse::<IfRule>().map_err(|e| match e {
                NetifError::BadItem { problem, .. } => NetifError::BadItem {
                    item: item.to_string(),
                    problem,
                },
                e => e,
            })?;
            list.push(rule);
        }
        Ok(sel)
    }
}

/// This host's name, as the kernel has it (`?` if it cannot say).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "?".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// What is wrong with one selector item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemProblem {
    /// Nothing between two commas (or after `^`).
    #[error("empty item")]
    Empty,
    /// A name with whitespace or a `^` inside.
    #[error("not an interface name")]
    BadName,
    /// The part before `/` is not an IP address.
    #[error("not an IP address or CIDR block")]
    BadAddress,
    /// The prefix length is not a number up to the maximum given.
    #[error("the prefix length must be a number from 0 to {0}")]
    BadPrefix(u8),
}

/// Why no address could be chosen or the interfaces not listed.
#[derive(Debug, thiserror::Error)]
pub enum NetifError {
    /// A selector item is malformed.
    #[error("interface selector item {item:?}: {problem}")]
    BadItem {
        /// The item as written.
        item: String,
        /// What is wrong with it.
        problem: ItemProblem,
    },
    /// The selector is empty.
    #[error("empty interface selector (expected names or CIDR blocks, e.g. eth0,^10.1.0.0/16)")]
    EmptySelector,
    /// The selector matches no address of this host.
    #[error("interface selector {selector:?} matches no address here; interfaces: {available}")]
    NoMatch {
        /// The selector.
        selector: String,
        /// The interfaces and their addresses (`lo 127.0.0.1, eth0 10.0.0.5`).
        available: String,
    },
    /// The OS would not list the interfaces.
    #[error("cannot list the network interfaces")]
    List(#[source] io::Error),
}

/// This host's interface addresses (IPv6 link-local ones left out), in the
/// order the OS gives them.
pub fn list_interfaces() -> Result<Vec<IfAddr>, NetifError> {
    let ifs = if_addrs::get_if_addrs().map_err(NetifError::List)?;
    Ok(ifs
        .into_iter()
        .map(|i| IfAddr {
            addr: i.ip(),
            name: i.name,
        })
        .collect())
}

/// Whether `addr` is a loopback address (`127.0.0.0/8`, `::1`, or an
/// IPv4-mapped `::ffff:127.x.y.z`).
pub fn is_loopback(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.is_loopback(),
        IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// The local address the kernel would send from toward `toward`: a UDP
/// socket bound to the unspecified address and connected to `toward`
/// (port 9, discard). Connecting a UDP socket only picks a route; no packet
/// is sent.
pub fn route_source(toward: IpAddr) -> io::Result<IpAddr> {
    let any: SocketAddr = match toward {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(any)?;
    socket.connect((toward, 9))?;
    Ok(socket.local_addr()?.ip())
}

/// The address a rank listens on (see the module documentation for the
/// rules). `routed` is [`route_source`] of the rendezvous address, when the
/// caller has one.
pub fn pick_bind(
    selector: Option<&IfSelector>,
    ifs: &[IfAddr],
    routed: Option<IpAddr>,
) -> Result<IpAddr, NetifError> {
    if let Some(sel) = selector {
        // First by (loopback, IPv6): non-loopback IPv4 first.
        return sel
            .select(ifs)
            .into_iter()
            .min_by_key(|i| (is_loopback(&i.addr), i.addr.is_ipv6()))
            .map(|i| i.addr)
            .ok_or_else(|| NetifError::NoMatch {
                selector: sel.to_string(),
                available: describe(ifs),
            });
    }
    match routed {
        Some(a) if !is_loopback(&a) && !a.is_unspecified() => Ok(a),
        _ => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
    }
}

/// `lo 127.0.0.1 ::1, eth0 10.0.0.5`: each interface once, with its addresses.
fn describe(ifs: &[IfAddr]) -> String {
    if ifs.is_empty() {
        return "none".into();
    }
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for i in ifs {
        match out.iter_mut().find(|(n, _)| *n == i.name) {
            Some((_, addrs)) => addrs.push(i.addr.to_string()),
            None => out.push((i.name.clone(), vec![i.addr.to_string()])),
        }
    }
    let parts: Vec<String> = out
        .into_iter()
        .map(|(n, a)| format!("{n} {}", a.join(" ")))
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests;
