//! `--hostfile` / `--host`, or the hosts of a Slurm allocation
//! ([`crate::slurm`]): from the command line to a [`HostPlan`]: the hosts
//! and their slots ([`crate::hosts`]), which rank runs where, which hosts
//! are this machine, the launch agent, the mclaunch binary the remote hosts
//! run as proxy, and the address the rendezvous binds.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use mcast::netif::{self, IfSelector};

use crate::error::LaunchError;
use crate::hosts::{self, HostSlots, MapBy};
use crate::spec::{HostPlan, LaunchAgent, PlannedHost};

/// Environment variable for the launch agent (`--launch-agent`).
pub const ENV_LAUNCH_AGENT: &str = "MCAST_LAUNCH_AGENT";

/// The host options of the command line.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// `--hostfile FILE`.
    pub hostfile: Option<PathBuf>,
    /// `--host h1:2,h2`.
    pub host: Option<String>,
    /// `--map-by`.
    pub map_by: MapBy,
    /// `--oversubscribe`.
    pub oversubscribe: bool,
    /// `--launch-agent CMD`.
    pub launch_agent: Option<String>,
    /// `--prefix DIR`.
    pub prefix: Option<PathBuf>,
    /// `--if LIST`, else `MCAST_IF`.
    pub iface: Option<String>,
    /// The hosts of the Slurm allocation mclaunch runs in
    /// ([`crate::slurm::allocation`]); used when no host is named, and
    /// then the proxies are started with srun.
    pub allocation: Option<Vec<HostSlots>>,
}

impl HostOptions {
    /// Whether any host was named, or an allocation gives them.
    pub fn any(&self) -> bool {
        self.named() || self.allocation.is_some()
    }

    /// Whether `--hostfile` or `--host` named hosts (they win over an
    /// allocation).
    fn named(&self) -> bool {
        self.hostfile.is_some() || self.host.is_some()
    }
}

/// Read the hosts named by the options.
fn read_hosts(o: &HostOptions) -> Result<Vec<HostSlots>, LaunchError> {
    match (&o.hostfile, &o.host) {
        (Some(_), Some(_)) => Err(LaunchError::Usage(
            "give --hostfile or --host, not both".into(),
        )),
        (Some(f), None) => {
            let text = std::fs::read_to_string(f).map_err(|e| {
                LaunchError::Usage(format!("cannot read hostfile {}: {e}", f.display()))
            })?;
            hosts::parse_hostfile(&text)
                .map_err(|e| LaunchError::Usage(format!("{}: {e}", f.display())))
        }
        (None, Some(h)) => {
            hosts::parse_host_list(h).map_err(|e| LaunchError::Usage(format!("--host {h}: {e}")))
        }
        (None, None) => o
            .allocation
            .clone()
            .ok_or_else(|| LaunchError::Usage("no hosts given".into())),
    }
}

/// The addresses `name` resolves to (IPv4 first).
fn resolve(name: &str) -> Result<Vec<IpAddr>, LaunchError> {
    let mut addrs: Vec<IpAddr> = (name, 0)
        .to_socket_addrs()
        .map_err(|e| LaunchError::Usage(format!("unknown host {name:?}: {e}")))?
        .map(|a| a.ip())
        .collect();
    addrs.sort_by_key(|a| !a.is_ipv4());
    addrs.dedup();
    if addrs.is_empty() {
        return Err(LaunchError::Usage(format!(
            "unknown host {name:?}: no address"
        )));
    }
    Ok(addrs)
}

/// Whether `name` (with `addrs`) is this machine: `localhost`, this host's
/// name, a loopback address, or an address of one of its interfaces.
fn is_this_machine(name: &str, addrs: &[IpAddr], mine: &[netif::IfAddr]) -> bool {
    let me = netif::hostname();
    name == "localhost"
        || name == me
        || me.split('.').next() == Some(name)
        || addrs
            .iter()
            .all(|a| netif::is_loopback(a) || mine.iter().any(|i| i.addr == *a))
}

/// The launch agent: the option, else `MCAST_LAUNCH_AGENT` (split at
/// whitespace, as Open MPI splits `plm_rsh_agent`), else srun for the hosts
/// of an allocation, else `ssh`.
fn agent(
    o: &HostOptions,
    lookup: &impl Fn(&str) -> Option<OsString>,
) -> Result<LaunchAgent, LaunchError> {
    let cmd = match &o.launch_agent {
        Some(a) => a.clone(),
        None => match lookup(ENV_LAUNCH_AGENT) {
            Some(v) => v.to_string_lossy().into_owned(),
            None if o.allocation.is_some() && !o.named() => return Ok(LaunchAgent::Srun),
            None => "ssh".into(),
        },
    };
    let words: Vec<String> = cmd.split_whitespace().map(String::from).collect();
    if words.is_empty() {
        return Err(LaunchError::Usage("the launch agent is empty".into()));
    }
    Ok(LaunchAgent::Shell(words))
}

/// The mclaunch binary remote hosts run: `DIR/bin/mclaunch` with `--prefix
/// DIR`, else this very binary's path (a shared file system, as Open MPI
/// assumes).
fn proxy_program(prefix: Option<&Path>) -> Result<String, LaunchError> {
    let p = match prefix {
        Some(d) => d.join("bin").join("mclaunch"),
        None => std::env::current_exe()
            .map_err(|e| LaunchError::setup("cannot find mclaunch's own path", e))?,
    };
    p.to_str()
        .map(String::from)
        .ok_or_else(|| LaunchError::Usage(format!("the path {} is not UTF-8", p.display())))
}

/// Resolve the host options into the number of ranks and the plan.
pub fn plan(
    o: &HostOptions,
    np: Option<u32>,
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Result<(u32, HostPlan), LaunchError> {
    let slots = read_hosts(o)?;
    let rank_host = hosts::map_ranks(&slots, np, o.map_by, o.oversubscribe)
        .map_err(|e| LaunchError::Usage(e.to_string()))?;
    let mine = netif::list_interfaces().unwrap_or_default();
    let mut planned = Vec::new();
    let mut first_remote = None;
    for h in &slots {
        let addrs = resolve(&h.name)?;
        let local = is_this_machine(&h.name, &addrs, &mine);
        if !local && first_remote.is_none() {
            first_remote = Some(addrs[0]);
        }
        planned.push(PlannedHost {
            name: h.name.clone(),
            local,
        });
    }
    let selector = match &o.iface {
        Some(list) => Some(
            list.parse::<IfSelector>()
                .map_err(|e| LaunchError::Usage(format!("--if {list}: {e}")))?,
        ),
        None => None,
    };
    let bind = match first_remote {
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(toward) => {
            let route = netif::route_source(toward).ok();
            netif::pick_bind(selector.as_ref(), &mine, route)
                .map_err(|e| LaunchError::Usage(format!("no address for the rendezvous: {e}")))?
        }
    };
    let plan = HostPlan {
        hosts: planned,
        rank_host,
        agent: agent(o, &lookup)?,
        proxy_program: proxy_program(o.prefix.as_deref())?,
        bind,
    };
    Ok((plan.rank_host.len() as u32, plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc() -> Option<Vec<HostSlots>> {
        Some(vec![HostSlots {
            name: "h1".into(),
            slots: 2,
            explicit_slots: true,
            max_slots: None,
        }])
    }

    #[test]
    fn srun_starts_the_proxies_of_an_allocation_unless_told_otherwise() {
        let none = |_: &str| None;
        let env = |k: &str| (k == ENV_LAUNCH_AGENT).then(|| OsString::from("rsh -x"));
        let shell = |w: &[&str]| LaunchAgent::Shell(w.iter().map(|s| s.to_string()).collect());
        let mut o = HostOptions::default();
        assert_eq!(agent(&o, &none).unwrap(), shell(&["ssh"]));
        assert_eq!(agent(&o, &env).unwrap(), shell(&["rsh", "-x"]));
        o.allocation = alloc();
        assert_eq!(agent(&o, &none).unwrap(), LaunchAgent::Srun);
        assert_eq!(agent(&o, &env).unwrap(), shell(&["rsh", "-x"]));
        o.launch_agent = Some("ssh -F cfg".into());
        assert_eq!(agent(&o, &none).unwrap(), shell(&["ssh", "-F", "cfg"]));
        // Hosts named on the command line are not the allocation's.
        o.launch_agent = None;
        o.host = Some("a,b".into());
        assert_eq!(agent(&o, &none).unwrap(), shell(&["ssh"]));
        assert_eq!(read_hosts(&o).unwrap().len(), 2);
        o.host = None;
        assert_eq!(read_hosts(&o).unwrap(), alloc().unwrap());
        o.launch_agent = Some(" ".into());
        assert!(agent(&o, &none).is_err());
    }
}
