//! Partial Ordered Chains [Sivaram 1998, §5.2.4, Fig 13].
//!
//! 1. `T` = the DAG of down links that cross levels (level l → l+1). The
//!    paper's "DFS from the root" only traverses it, and step 3 speaks of
//!    "each parent", so `T` keeps every such link (our reading of [Sivaram 1998, §5.2.4, Fig 13]).
//! 2. `S` = switches holding a destination or the source.
//! 3. `T'` = `T` reduced to `S`: u → v iff v is reachable from u in `T` through
//!    non-participating switches only (the same as repeatedly deleting a
//!    non-participating switch and linking each parent to each child).
//! 4. wt(s) = Σ ρ over Desc(s) (s and its descendants in `T'`, as a set);
//!    ρ counts participating processors, the source included.
//! 5. Strip chains: start at a remaining switch of maximum weight, follow the
//!    maximum-weight remaining child, remove the chain, repeat. Ties go to
//!    the lowest switch id; weights are not recomputed ([Sivaram 1998, §5.2.4, Fig 13], our choice).

use std::collections::BTreeMap;

use serde::Serialize;

use super::topology::{NodeId, SwitchId, SwitchTopology};
use super::updown::UpDown;

/// The output of Fig 13 for one (source, destination set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pocs {
    /// Edges of `T'` (parent, child), sorted.
    pub reduced_edges: Vec<(SwitchId, SwitchId)>,
    /// wt(s) for every participating switch.
    pub weights: BTreeMap<SwitchId, usize>,
    /// The chains of switches in stripping order (heaviest first).
    pub chains: Vec<Vec<SwitchId>>,
}

/// Run Fig 13. `source` and `dests` must be valid node ids of `topo` (ids out
/// of range are ignored); `dests` should not contain `source`.
pub fn find_pocs(topo: &SwitchTopology, ud: &UpDown, source: NodeId, dests: &[NodeId]) -> Pocs {
    let n = topo.switch_count();
    let mut rho = vec![0usize; n];
    let mut seen_node = vec![false; topo.node_count()];
    for &d in dests.iter().chain(std::iter::once(&source)) {
        if let Some(s) = topo.switch_of(d) {
            if !seen_node[d] {
                seen_node[d] = true;
                rho[s] += 1;
            }
        }
    }
    let part: Vec<bool> = rho.iter().map(|&r| r > 0).collect();
    let mut children: Vec<Vec<SwitchId>> = vec![Vec::new(); n];
    for (a, b) in ud.level_crossing_down_edges(topo) {
        children[a].push(b);
    }
    let mut reduced_edges = Vec::new();
    let mut desc: Vec<Vec<SwitchId>> = vec![Vec::new(); n];
    let mut mark = vec![usize::MAX; n];
    let mut mark_free = vec![usize::MAX; n];
    for u in (0..n).filter(|&u| part[u]) {
        // Desc(u): every participating switch reachable from u in T.
        let mut stack: Vec<SwitchId> = vec![u];
        mark[u] = u;
        while let Some(v) = stack.pop() {
            if part[v] {
                desc[u].push(v);
            }
            for &c in &children[v] {
                if mark[c] != u {
                    mark[c] = u;
                    stack.push(c);
                }
            }
        }
        // T' children of u: the first participating switch on each path,
        // walking through non-participating switches only.
        let mut stack: Vec<SwitchId> = children[u].clone();
        while let Some(v) = stack.pop() {
            if mark_free[v] == u {
                continue;
            }
            mark_free[v] = u;
            if part[v] {
                reduced_edges.push((u, v));
            } else {
                stack.extend(children[v].iter().copied());
            }
        }
    }
    reduced_edges.sort_unstable();
    reduced_edges.dedup();
    let weights: BTreeMap<SwitchId, usize> = (0..n)
        .filter(|&u| part[u])
        .map(|u| (u, desc[u].iter().map(|&v| rho[v]).sum()))
        .collect();
    let mut tchildren: Vec<Vec<SwitchId>> = vec![Vec::new(); n];
    for &(a, b) in &reduced_edges {
        tchildren[a].push(b);
    }
    let mut remaining: Vec<bool> = part.clone();
    // Heaviest first, ties to the lowest id.
    let best = |cands: &mut dyn Iterator<Item = SwitchId>| -> Option<SwitchId> {
        cands.min_by_key(|&s| (std::cmp::Reverse(weights[&s]), s))
    };
    let mut chains = Vec::new();
    while let Some(p1) = best(&mut (0..n).filter(|&s| remaining[s])) {
        let mut chain = vec![p1];
        remaining[p1] = false;
        let mut at = p1;
        while let Some(next) = best(&mut tchildren[at].iter().copied().filter(|&c| remaining[c])) {
            chain.push(next);
            remaining[next] = false;
            at = next;
        }
        chains.push(chain);
    }
    Pocs {
        reduced_edges,
        weights,
        chains,
    }
}
