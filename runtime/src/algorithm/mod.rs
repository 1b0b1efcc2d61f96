//! The user-facing choice of multicast algorithm.

use std::fmt;
use std::str::FromStr;

use mcast_algorithms::topo::TopoKind;
use mcast_algorithms::{ceil_log2, optimal_k, trees, Shape, Topology};

use crate::error::Error;
use crate::tree_kind::tree_code;
pub use crate::tree_kind::{TopoTree, TreeKind};
use crate::worms::Worm;

/// Up to this many hosts, `Auto` sends a one-packet message to every
/// host's leader from the source (the flat tree at the leaders' level).
pub const FLAT_HOSTS: usize = 8;

/// Which tree a bcast or multicast uses.
///
/// Names (for `FromStr`/`Display`, `MCAST_ALGORITHM` and `mcbench --algo`):
/// `auto`, `flat`, `chain`, `binomial`, `kbinomial` (optimal k),
/// `kbinomial:K`, and the topology-aware `utorus`, `ucube`, `maxport`,
/// `combine` and `wsort` (Robinson's thesis), which need a topology
/// (`mclaunch --topology`, `MCAST_TOPOLOGY`).

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// Pick per call. Without a topology: the k-binomial tree with the optimal
    /// k of Theorem 3 for the call's set size and packet count (the paper's
    /// model of a smart NI). With one, the thesis's selection hints
    /// [Robinson 1994, ch. 7]: W-sort on a hypercube (all-port), U-torus on a torus (one-port), and
    /// on a mesh the optimal k-binomial tree on the dimension-ordered chain
    /// (rank order), which [Sivaram 1998, §4.3.4, Fig 10] prescribes for k-ary n-cubes.
    #[default]
    Auto,
    /// Separate addressing: the source sends to every destination.
    Flat,
    /// A linear chain (the 1-binomial tree).
    Chain,
    /// The binomial tree (the ⌈log2 n⌉-binomial tree).
    Binomial,
    /// A k-binomial tree; `None` means the optimal k for the message's packet
    /// count (Theorem 3).
    KBinomial { k: Option<usize> },
    /// U-torus (thesis Fig 4.9) on the R-chain: any topology.
    UTorus,
    /// U-cube (thesis Fig 3.5): hypercubes.
    UCube,
    /// Maxport (thesis Fig 3.5, next = highdim): hypercubes.
    Maxport,
    /// Combine (thesis Fig 3.5, next = max(highdim, center)): hypercubes.
    Combine,
    /// W-sort (WeightedSort with CubeCenter, then Maxport): hypercubes.
    WSort,
    /// A switch-based worm scheme: only under an emulated fabric that
    /// supports it (`mclaunch --fabric`); see [`crate::worms`].
    Worm(crate::worms::Worm),
}

/// What an [`Algorithm`] resolves to for one call: a tree the NIs build
/// from the headers, or a worm scheme the switches replicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolved {
    Tree(TreeKind),
    /// Runs only under a fabric that carries it (the caller checks).
    Worm(Worm),
}

impl Resolved {
    /// The tree, if it is one.
    pub fn tree(self) -> Option<TreeKind> {
        match self {
            Resolved::Tree(t) => Some(t),
            Resolved::Worm(_) => None,
        }
    }

    /// The (code, k) pair a collective's fingerprint carries for it.
    pub fn tree_code(self) -> (u8, u16) {
        match self {
            Resolved::Tree(t) => tree_code(t),
            Resolved::Worm(w) => w.tree_code(),
        }
    }

    /// Who forwards a bcast from `root` to rank `me` of `size`: its parent
    /// in the tree the NIs build, hop by hop, from the headers (for a
    /// topology-aware tree, on `topology`). `None` for the root, a worm
    /// scheme (the switches replicate), or a tree that cannot be planned.
    pub fn bcast_parent(
        self,
        root: usize,
        me: usize,
        size: usize,
        topology: Option<&Topology>,
    ) -> Option<usize> {
        self.bcast_parent_on(root, me, size, topology, None)
    }

    /// [`Resolved::bcast_parent`] in a job whose ranks live on the hosts
    /// `hosts` (a host index per rank), for host-aware trees.
    pub fn bcast_parent_on(
        self,
        root: usize,
        me: usize,
        size: usize,
        topology: Option<&Topology>,
        hosts: Option<&[u32]>,
    ) -> Option<usize> {
        if me == root || me >= size || root >= size {
            return None;
        }
        match self.tree()? {
            TreeKind::Chain(shape) => {
                let pos = (me + size - root) % size;
                let tree = mcast_algorithms::ChainTree::new(shape, size).ok()?;
                tree.parent(pos).map(|p| (root + p) % size)
            }
            TreeKind::Topo(t) => {
                let topo = topology?;
                let others: Vec<usize> = (1..size).map(|p| (root + p) % size).collect();
                let d = trees::source_chain(topo, t.planner(), root, &others).ok()?;
                follow(d, me, |d| trees::split_received(topo, t.planner(), d).ok())
            }
            TreeKind::Hosts { k } => {
                let hosts = hosts?;
                let host_of = mcast_algorithms::hosts::in_table(hosts);
                let others: Vec<usize> = (1..size).map(|p| (root + p) % size).collect();
                let d = mcast_algorithms::hosts::source_chain(root, &others, host_of);
                follow(d, me, |d| {
                    mcast_algorithms::hosts::split_received(k, d, host_of).ok()
                })
            }
        }
    }

    /// Levels of this tree for a bcast from `root` over `size` ranks (for a
    /// host-aware tree, on the hosts `hosts`, a host index per rank; for a
    /// topology-aware one, on `topology`): the most hops from the root to
    /// any rank, as the NIs build the tree. `None` for a worm scheme (the
    /// switches replicate), a root outside the set, or a tree that cannot
    /// be planned.
    pub fn bcast_depth_on(
        self,
        root: usize,
        size: usize,
        topology: Option<&Topology>,
        hosts: Option<&[u32]>,
    ) -> Option<usize> {
        if root >= size {
            return None;
        }
        match self.tree()? {
            TreeKind::Chain(Shape::Flat) => Some(usize::from(size > 1)),
            TreeKind::Chain(Shape::KBinomial { k }) => Some(mcast_algorithms::l1(size, k.max(1))),
            // Walk every rank up to the root; a tree has no cycle, so a
            // walk longer than the ranks is a plan that does not hold.
            TreeKind::Topo(_) | TreeKind::Hosts { .. } => {
                let mut depth = 0;
                for me in (0..size).filter(|&r| r != root) {
                    let (mut at, mut hops) = (me, 0);
                    while at != root {
                        at = self.bcast_parent_on(root, at, size, topology, hosts)?;
                        hops += 1;
                        if hops >= size {
                            return None;
                        }
                    }
                    depth = depth.max(hops);
                }
                Some(depth)
            }
        }
    }
}

/// Follow an address field D (its receiver first) down, hop by hop with
/// `split`, to the part that holds `me`; its parent there.
fn follow(
    mut d: Vec<usize>,
    me: usize,
    split: impl Fn(&[usize]) -> Option<Vec<(usize, Vec<usize>)>>,
) -> Option<usize> {
    while d.first() != Some(&me) {
        let (to, covers) = split(&d)?
            .into_iter()
            .find(|(_, covers)| covers.contains(&me))?;
        if to == me {
            return d.first().copied();
        }
        d = covers;
    }
    None
}

/// What carries a job's packets, as far as [`Algorithm::Auto`] cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Medium {
    /// Sockets: every hop copies the payload (the papers' model).
    #[default]
    Network,
    /// Every rank on one host with a shared-memory arena: a large payload
    /// is copied once into the root's arena and forwarded by reference.
    SharedMemory,
    /// Ranks on `hosts` hosts (more than one, fewer than the ranks): the
    /// network between hosts, Unix sockets and shared memory within each.
    Hosts { hosts: usize },
}

impl Algorithm {
    /// The tree for a set of `n` nodes (source included), `m` packets, and the
    /// job's topology if it has one, over a network. A worm scheme is refused
    /// (it has no tree).
    pub fn resolve(
        self,
        n: usize,
        m: usize,
        topology: Option<&Topology>,
    ) -> Result<TreeKind, Error> {
        match self.resolve_for(n, m, topology, Medium::Network)? {
            Resolved::Tree(t) => Ok(t),
            Resolved::Worm(w) => Err(w.refusal()),
        }
    }

    /// The tree or worm for a set of `n` nodes (source included), `m`
    /// packets and the job's topology if it has one, in a job whose packets
    /// travel over `medium`. A worm resolves to itself: whether the job's
    /// fabric carries it is the caller's check.
    ///
    /// Only `Auto` depends on the medium. Over a network `Auto` takes the optimal k
    /// of the FPFS unit-step model [Sivaram 1998, §4.3.3, Fig 9], where every forwarded
    /// packet costs its sender a step, so long messages get a chain. On one
    /// host with shared memory, forwarding a packet costs a 24-byte
    /// descriptor and each receiver's only real work is its own copy, so
    /// the fewest hops win: `Auto` takes the binomial tree (k = ⌈log2 n⌉),
    /// which measured best or within noise of the best from 256 KiB to
    /// 4 MiB at 4 and 8 ranks (README, "Performance").
    pub fn resolve_for(
        self,
        n: usize,
        m: usize,
        topology: Option<&Topology>,
        medium: Medium,
    ) -> Result<Resolved, Error> {
        if let Algorithm::Worm(w) = self {
            return Ok(Resolved::Worm(w));
        }
        self.tree(n, m, topology, medium).map(Resolved::Tree)
    }

    /// [`Algorithm::resolve_for`] for an algorithm that is not a worm.
    /// `Auto` across hosts: see [`FLAT_HOSTS`].
    fn tree(
        self,
        n: usize,
        m: usize,
        topology: Option<&Topology>,
        medium: Medium,
    ) -> Result<TreeKind, Error> {
        if self == Algorithm::Auto && topology.is_none() {
            match medium {
                Medium::SharedMemory => {
                    return Ok(TreeKind::Chain(Algorithm::Binomial.shape(n, m)?))
                }
                // One packet among a few hosts: the source sends to every
                // host (its leader) itself. The paper's unit-step model
                // counts a send and a hop alike, but across hosts a hop
                // costs several sends (about 15 µs against 2 on the
                // namespace cluster, 3 hosts of 2), so hosts − 1 sends and
                // one hop beat the ⌈log2 hosts⌉ hops of the k-binomial
                // trees for a few hosts; with more packets the pipeline,
                // which the model does count, decides.
                Medium::Hosts { hosts } if hosts > 1 && m == 1 && hosts <= FLAT_HOSTS => {
                    return Ok(match hosts < n {
                        true => TreeKind::Hosts { k: 0 },
                        false => TreeKind::Chain(Shape::Flat),
                    });
                }
                // Two levels: the paper's optimal k among the hosts' leaders
                // (the network), the binomial tree within each host.
                Medium::Hosts { hosts } if hosts > 1 && hosts < n => {
                    return Ok(TreeKind::Hosts {
                        k: optimal_k(hosts, m),
                    })
                }
                _ => {}
            }
        }
        let topo = |t: TopoTree| -> Result<TreeKind, Error> {
            match topology {
                None => Err(Error::InvalidArgument(format!(
                    "algorithm {self} needs a topology (mclaunch --topology SPEC)"
                ))),
                Some(tp) if t.hypercube_only() && !tp.is_hypercube() => {
                    Err(Error::InvalidArgument(format!(
                        "algorithm {self} runs on hypercubes, not on {tp}"
                    )))
                }
                Some(_) => Ok(TreeKind::Topo(t)),
            }
        };
        match self {
            Algorithm::Worm(w) => Err(w.refusal()),
            Algorithm::UTorus => topo(TopoTree::UTorus),
            Algorithm::UCube => topo(TopoTree::UCube),
            Algorithm::Maxport => topo(TopoTree::Maxport),
            Algorithm::Combine => topo(TopoTree::Combine),
            Algorithm::WSort => topo(TopoTree::WSort),
            Algorithm::Auto => match topology.map(|t| t.kind()) {
                Some(TopoKind::Hypercube(_)) => topo(TopoTree::WSort),
                Some(TopoKind::Torus(_)) => topo(TopoTree::UTorus),
                Some(TopoKind::Mesh) | None => Ok(TreeKind::Chain(self.shape(n, m)?)),
            },
            _ => Ok(TreeKind::Chain(self.shape(n, m)?)),
        }
    }

    /// The chain tree shape for a set of `n` nodes (source included) and `m`
    /// packets (topology-aware algorithms have none: see [`Algorithm::resolve`]).
    pub fn shape(self, n: usize, m: usize) -> Result<Shape, Error> {
        Ok(match self {
            Algorithm::Flat => Shape::Flat,
            Algorithm::Chain => Shape::KBinomial { k: 1 },
            Algorithm::Binomial => Shape::KBinomial {
                k: ceil_log2(n).max(1),
            },
            Algorithm::Auto | Algorithm::KBinomial { k: None } => {
                Shape::KBinomial { k: optimal_k(n, m) }
            }
            Algorithm::KBinomial { k: Some(0) } => {
                return Err(Error::InvalidArgument("kbinomial needs k >= 1".to_string()))
            }
            Algorithm::KBinomial { k: Some(k) } => Shape::KBinomial { k },
            Algorithm::Worm(w) => return Err(w.refusal()),
            Algorithm::UTorus
            | Algorithm::UCube
            | Algorithm::Maxport
            | Algorithm::Combine
            | Algorithm::WSort => {
                return Err(Error::InvalidArgument(format!(
                    "{self} is a topology-aware algorithm, not a chain shape"
                )))
            }
        })
    }

    /// The topology-aware algorithms.
    pub const TOPOLOGY: [Algorithm; 5] = [
        Algorithm::UTorus,
        Algorithm::UCube,
        Algorithm::Maxport,
        Algorithm::Combine,
        Algorithm::WSort,
    ];

    /// Every chain algorithm (with `kbinomial` standing for the optimal k).
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Auto,
        Algorithm::Flat,
        Algorithm::Chain,
        Algorithm::Binomial,
        Algorithm::KBinomial { k: None },
    ];
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Algorithm::Auto => f.write_str("auto"),
            Algorithm::Flat => f.write_str("flat"),
            Algorithm::Chain => f.write_str("chain"),
            Algorithm::Binomial => f.write_str("binomial"),
            Algorithm::KBinomial { k: None } => f.write_str("kbinomial"),
            Algorithm::KBinomial { k: Some(k) } => write!(f, "kbinomial:{k}"),
            Algorithm::UTorus => f.write_str("utorus"),
            Algorithm::UCube => f.write_str("ucube"),
            Algorithm::Maxport => f.write_str("maxport"),
            Algorithm::Combine => f.write_str("combine"),
            Algorithm::WSort => f.write_str("wsort"),
            Algorithm::Worm(w) => write!(f, "{w}"),
        }
    }
}

impl FromStr for Algorithm {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let lower = s.trim().to_ascii_lowercase();
        Ok(match lower.as_str() {
            "auto" => Algorithm::Auto,
            "flat" => Algorithm::Flat,
            "chain" => Algorithm::Chain,
            "binomial" => Algorithm::Binomial,
            "kbinomial" => Algorithm::KBinomial { k: None },
            "utorus" => Algorithm::UTorus,
            "ucube" => Algorithm::UCube,
            "maxport" => Algorithm::Maxport,
            "combine" => Algorithm::Combine,
            "wsort" => Algorithm::WSort,
            other if crate::worms::Worm::is_name(other) => Algorithm::Worm(other.parse()?),
            other => match other.strip_prefix("kbinomial:") {
                Some(k) => match k.parse::<usize>() {
                    Ok(k) if k >= 1 => Algorithm::KBinomial { k: Some(k) },
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "algorithm {s:?}: k must be a whole number >= 1"
                        )))
                    }
                },
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "unknown algorithm {s:?}; expected auto, flat, chain, binomial, kbinomial, kbinomial:K, utorus, ucube, maxport, combine, wsort, or under a fabric ssr-greedy, ssr-lg, path-greedy, path-lg, tree-worm, storus, mtorus-d, mtorus-u:R"
                    )))
                }
            },
        })
    }
}

/// Whom rank `me` waits for in a bcast from `root` (in a job on `hosts`,
/// a host index per rank, if known), for a timeout's message:
/// its parent in the tree (chain or topology-aware), the rank that forwards
/// it the packets; under a worm scheme the switches forward, so the root.
pub(crate) fn bcast_waits_for(
    root: usize,
    me: usize,
    size: usize,
    tree: Resolved,
    topology: Option<&Topology>,
    hosts: Option<&[u32]>,
) -> String {
    match tree.bcast_parent_on(root, me, size, topology, hosts) {
        Some(p) if p == root => format!("waiting for packets from root {root}, its parent"),
        Some(p) => {
            format!("waiting for packets from rank {p}, its parent in the tree from root {root}")
        }
        None => format!("waiting for packets from root {root}"),
    }
}

#[cfg(test)]
mod tests;
