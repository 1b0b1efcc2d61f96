//! Host-aware two-level trees, for jobs whose ranks span hosts: the
//! k-binomial tree of [Sivaram 1998, §4.3] among one leader per host (the
//! network level, where every forwarded packet costs its sender a step, so
//! the paper's optimal k applies), and below each leader the binomial tree
//! among the ranks of its host (where a packet is handed on through shared
//! memory).
//!
//! Like the topology-aware trees of [Robinson 1994, §3.3], the tree travels
//! as an address field: a receiver gets the ranks it is responsible for,
//! itself first (its *covers*), and computes its own children from that
//! list and the host of every rank alone ([`split_received`]); nothing is
//! negotiated. Covers are grouped by host in order of first appearance; the
//! first member of each group is its host's leader.
//!
//! With k = 0 the leaders' level is the flat tree instead: the source sends
//! to every other host's leader itself. For a message of one small packet
//! among a few hosts, a network hop costs far more than a send (on the
//! namespace cluster about 15 µs against 2: see `Comm::algorithm_for`), so
//! one hop beats the ⌈log2 hosts⌉ of any k-binomial tree, as the flat tree
//! does on one host's shared-memory rings.
//!
//! A receiver that leads other hosts' groups sends to their leaders first
//! (the k-binomial split over the leaders, its own group's leader being
//! itself), then to the ranks of its own host (the binomial split over its
//! group): the network hops are on the critical path, so they go first.

use crate::kbinomial::ceil_log2;
use crate::shape::{split, Shape, ShapeError};

/// The source's address field: `root` first, then the other destinations
/// of its host, then each other host's destinations, hosts in the order in
/// which their first destination appears in `dests`, each host's ranks in
/// `dests` order.
pub fn source_chain(root: usize, dests: &[usize], host_of: impl Fn(usize) -> u32) -> Vec<usize> {
    let mut chain = vec![root];
    let groups = group(dests, &host_of);
    let mine = host_of(root);
    if let Some(own) = groups.iter().find(|g| host_of(g[0]) == mine) {
        chain.extend(own.iter().copied());
    }
    for g in groups.iter().filter(|g| host_of(g[0]) != mine) {
        chain.extend(g.iter().copied());
    }
    chain
}

/// `ranks` grouped by host, groups in order of first appearance.
fn group(ranks: &[usize], host_of: &impl Fn(usize) -> u32) -> Vec<Vec<usize>> {
    let mut groups: Vec<(u32, Vec<usize>)> = Vec::new();
    for &r in ranks {
        let h = host_of(r);
        match groups.iter_mut().find(|(g, _)| *g == h) {
            Some((_, members)) => members.push(r),
            None => groups.push((h, vec![r])),
        }
    }
    groups.into_iter().map(|(_, m)| m).collect()
}

/// The children of `covers[0]`, responsible for all of `covers`, in send
/// order, each with its own covers: first the leaders of other hosts (the
/// `k`-binomial split over the hosts' leaders; with `k` = 0 the flat one),
/// then the ranks of its own host (the binomial split over them).
pub fn split_received(
    k: usize,
    covers: &[usize],
    host_of: impl Fn(usize) -> u32,
) -> Result<Vec<(usize, Vec<usize>)>, ShapeError> {
    if covers.is_empty() {
        return Ok(Vec::new());
    }
    let groups = group(covers, &host_of);
    let mut out = Vec::new();
    let leaders = match k {
        0 => Shape::Flat,
        k => Shape::KBinomial { k },
    };
    for (a, b) in split(leaders, 0, groups.len() - 1)? {
        out.push((groups[a][0], groups[a..=b].concat()));
    }
    let own = &groups[0];
    let binomial = Shape::KBinomial {
        k: ceil_log2(own.len()).max(1),
    };
    for (a, b) in split(binomial, 0, own.len() - 1)? {
        out.push((own[a], own[a..=b].to_vec()));
    }
    Ok(out)
}

/// `host_of` over a host table (a host index per rank); a rank beyond the
/// table is a host of its own kind (`u32::MAX`), never a panic.
pub fn in_table(table: &[u32]) -> impl Fn(usize) -> u32 + Copy + '_ {
    move |r| table.get(r).copied().unwrap_or(u32::MAX)
}

/// The number of distinct hosts among `ranks`.
pub fn host_count(ranks: impl IntoIterator<Item = usize>, host_of: impl Fn(usize) -> u32) -> usize {
    let mut seen: Vec<u32> = ranks.into_iter().map(host_of).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// A rank's part in the two-level barrier among ranks `0..n`: every rank
/// tells its host's leader (the lowest rank of its host) that it has
/// arrived; the leaders hold a barrier among themselves over the network;
/// each leader then releases the ranks of its host. Two network messages
/// per host (one each way, with a flat barrier among the leaders) instead
/// of ⌈log2 n⌉ per rank with the dissemination barrier over every rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarrierRole {
    /// This rank's host leader (itself if it leads).
    pub leader: usize,
    /// If this rank leads: the other ranks of its host, ascending (else
    /// empty).
    pub locals: Vec<usize>,
    /// Every host's leader, ascending: rank 0 first.
    pub leaders: Vec<usize>,
}

/// Rank `me`'s [`BarrierRole`] among ranks `0..n` placed by `host_of`.
pub fn barrier_role(n: usize, me: usize, host_of: impl Fn(usize) -> u32) -> BarrierRole {
    let mut first: std::collections::BTreeMap<u32, usize> = Default::default();
    for r in 0..n {
        first.entry(host_of(r)).or_insert(r);
    }
    let mine = host_of(me);
    let leader = first.get(&mine).copied().unwrap_or(me);
    let locals = if leader == me {
        (me + 1..n).filter(|&r| host_of(r) == mine).collect()
    } else {
        Vec::new()
    };
    let mut leaders: Vec<usize> = first.into_values().collect();
    leaders.sort_unstable();
    BarrierRole {
        leader,
        locals,
        leaders,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3 hosts × 2 ranks: ranks 0,1 on host 0, 2,3 on 1, 4,5 on 2.
    fn by_two(r: usize) -> u32 {
        (r / 2) as u32
    }

    /// Every destination receives exactly once, from a rank that already
    /// has the message, and the tree is what the rules say.
    fn deliver(
        k: usize,
        root: usize,
        n: usize,
        host_of: impl Fn(usize) -> u32 + Copy,
    ) -> Vec<(usize, usize)> {
        let dests: Vec<usize> = (0..n).filter(|&r| r != root).collect();
        let chain = source_chain(root, &dests, host_of);
        let mut edges = Vec::new();
        let mut work = vec![chain];
        let mut got = vec![0; n];
        got[root] = 1;
        while let Some(covers) = work.pop() {
            for (child, sub) in split_received(k, &covers, host_of).unwrap() {
                assert_eq!(sub[0], child);
                assert!(got[covers[0]] > 0, "sender {} has nothing yet", covers[0]);
                got[child] += 1;
                edges.push((covers[0], child));
                work.push(sub);
            }
        }
        assert!(got.iter().all(|&g| g == 1), "{got:?}");
        edges
    }

    #[test]
    fn three_hosts_of_two() {
        // Root 0: leaders 0, 2, 4; k = 1 over the leaders is a chain 0 → 2 → 4,
        // and each leader hands on to its host's other rank.
        let mut e = deliver(1, 0, 6, by_two);
        e.sort();
        assert_eq!(e, vec![(0, 1), (0, 2), (2, 3), (2, 4), (4, 5)]);
        // Over 5 hosts of 2, the leaders (0, 2, 4, 6, 8) form the paper's
        // k-binomial tree on the leader chain, for every k.
        for k in 1..4 {
            let mut leaders: Vec<(usize, usize)> = deliver(k, 0, 10, by_two)
                .into_iter()
                .filter(|(a, b)| by_two(*a) != by_two(*b))
                .map(|(a, b)| (a / 2, b / 2))
                .collect();
            leaders.sort();
            let t = crate::ChainTree::new(Shape::KBinomial { k }, 5).unwrap();
            let mut want: Vec<(usize, usize)> = (1..5).map(|p| (t.parent(p).unwrap(), p)).collect();
            want.sort();
            assert_eq!(leaders, want, "k = {k}");
        }
    }

    #[test]
    fn network_hops_go_first_and_cross_each_host_boundary_once() {
        let chain = source_chain(3, &[0, 1, 2, 4, 5], by_two);
        assert_eq!(chain, vec![3, 2, 0, 1, 4, 5]);
        let sends = split_received(1, &chain, by_two).unwrap();
        let to: Vec<usize> = sends.iter().map(|(c, _)| *c).collect();
        assert_eq!(to, vec![0, 2]); // the next leader (for host 2 too), then its host-mate
        assert_eq!(sends[0].1, vec![0, 1, 4, 5]);
        for n in 2..40 {
            for hosts in 1..=n {
                let h = move |r: usize| (r % hosts) as u32;
                for k in 1..4 {
                    let e = deliver(k, n / 2, n, h);
                    let crossings = e.iter().filter(|(a, b)| h(*a) != h(*b)).count();
                    assert_eq!(crossings, hosts - 1, "n={n} hosts={hosts} k={k}");
                }
            }
        }
    }

    #[test]
    fn one_host_is_the_binomial_tree_and_one_rank_per_host_the_k_binomial() {
        use crate::ChainTree;
        let one = |_r: usize| 0;
        let mut e = deliver(1, 0, 8, one);
        e.sort();
        let t = ChainTree::new(Shape::KBinomial { k: 3 }, 8).unwrap();
        let mut want: Vec<(usize, usize)> = (1..8).map(|p| (t.parent(p).unwrap(), p)).collect();
        want.sort();
        assert_eq!(e, want);
        let each = |r: usize| r as u32;
        let mut e = deliver(2, 0, 8, each);
        e.sort();
        let t = ChainTree::new(Shape::KBinomial { k: 2 }, 8).unwrap();
        let mut want: Vec<(usize, usize)> = (1..8).map(|p| (t.parent(p).unwrap(), p)).collect();
        want.sort();
        assert_eq!(e, want);
    }

    #[test]
    fn barrier_roles_name_one_leader_per_host_and_its_host_mates() {
        // 3 hosts × 2, mapped by slot.
        let r = barrier_role(6, 2, by_two);
        assert_eq!(r.leader, 2);
        assert_eq!(r.locals, vec![3]);
        assert_eq!(r.leaders, vec![0, 2, 4]);
        let r = barrier_role(6, 5, by_two);
        assert_eq!((r.leader, r.locals.len()), (4, 0));
        // Mapped by node (round-robin over 3 hosts): 0,3 / 1,4 / 2,5.
        let by_node = |r: usize| (r % 3) as u32;
        assert_eq!(barrier_role(6, 0, by_node).locals, vec![3]);
        assert_eq!(barrier_role(6, 4, by_node).leader, 1);
        assert_eq!(barrier_role(6, 4, by_node).leaders, vec![0, 1, 2]);
        // Every rank is a leader or has exactly one, on its host; every
        // non-leader is among its leader's locals exactly once.
        for n in 1..30 {
            for hosts in 1..=n {
                let h = move |r: usize| ((r * 7) % hosts) as u32;
                let roles: Vec<BarrierRole> = (0..n).map(|me| barrier_role(n, me, h)).collect();
                assert_eq!(roles[0].leader, 0);
                for (me, role) in roles.iter().enumerate() {
                    assert_eq!(role.leaders, roles[0].leaders);
                    assert_eq!(h(role.leader), h(me));
                    assert!(role.leader <= me);
                    if role.leader != me {
                        let l = &roles[role.leader];
                        assert_eq!(l.locals.iter().filter(|&&x| x == me).count(), 1);
                    }
                }
                let covered: usize = roles.iter().map(|r| r.locals.len()).sum();
                assert_eq!(covered + roles[0].leaders.len(), n);
                assert_eq!(roles[0].leaders.len(), host_count(0..n, h));
            }
        }
    }

    #[test]
    fn k_zero_sends_to_every_leader_from_the_source() {
        let mut e = deliver(0, 0, 6, by_two);
        e.sort();
        assert_eq!(e, vec![(0, 1), (0, 2), (0, 4), (2, 3), (4, 5)]);
        // The other hosts first, then the source's own.
        let sends = split_received(0, &source_chain(0, &[1, 2, 3, 4, 5], by_two), by_two);
        let to: Vec<usize> = sends.unwrap().iter().map(|(c, _)| *c).collect();
        assert_eq!(to, vec![2, 4, 1]);
        for n in 2..30 {
            for hosts in 1..=n {
                let h = move |r: usize| (r % hosts) as u32;
                let e = deliver(0, n / 3, n, h);
                let crossings: Vec<_> = e.iter().filter(|(a, b)| h(*a) != h(*b)).collect();
                assert_eq!(crossings.len(), hosts - 1, "n={n} hosts={hosts}");
                assert!(
                    crossings.iter().all(|(a, _)| *a == n / 3),
                    "n={n} hosts={hosts}"
                );
            }
        }
    }

    #[test]
    fn hosts_are_counted() {
        assert_eq!(host_count(0..6, by_two), 3);
        assert_eq!(host_count([1, 0], by_two), 1);
        assert!(split_received(1, &[], by_two).unwrap().is_empty());
    }
}
