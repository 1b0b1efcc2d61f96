//! Up*/down* routing [Sivaram 1998, §2.2]: a BFS from a root switch gives levels; the
//! "up" end of a link is the end closer to the root, or at equal level the end
//! with the lower switch id. A legal route takes zero or more up links, then
//! zero or more down links.
//!
//! The routing tables are minimal and history-aware: the state of a packet at
//! a switch is its [`Phase`] (may it still go up?), which a switch derives from
//! the input port ([`UpDown::phase_after`]): a packet that arrived over a link
//! traversed downward may only go down.

use std::collections::VecDeque;

use serde::Serialize;

use super::topology::{PortConn, PortId, SwitchId, SwitchTopology};

/// The direction of a traversal of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum UpDownDir {
    /// Toward the up end (closer to the root, or the lower id at equal level).
    Up,
    /// Toward the down end.
    Down,
}

/// The routing state of a packet at a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Phase {
    /// It has taken no down link yet: it may go up or down.
    Up,
    /// It has taken a down link: it may only go down.
    Down,
}

/// Why up*/down* state could not be set up or a route was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpDownError {
    /// The requested root does not exist.
    #[error("root switch {0} does not exist")]
    NoSuchRoot(SwitchId),
    /// A switch id out of range.
    #[error("switch {0} does not exist")]
    NoSuchSwitch(SwitchId),
    /// A route with no switches.
    #[error("empty route")]
    EmptyRoute,
    /// Two consecutive switches of a route share no link.
    #[error("hop {index}: switches {from} and {to} are not linked")]
    NotAdjacent {
        /// Position of the hop in the route (0 = first hop).
        index: usize,
        /// The switch the hop leaves.
        from: SwitchId,
        /// The switch the hop enters.
        to: SwitchId,
    },
    /// An up hop after a down hop.
    #[error("hop {index}: up hop {from} -> {to} after a down hop")]
    UpAfterDown {
        /// Position of the offending hop.
        index: usize,
        /// The switch the hop leaves.
        from: SwitchId,
        /// The switch the hop enters.
        to: SwitchId,
    },
    /// No legal route from the given state.
    #[error("no legal route from switch {from} ({phase:?} phase) to switch {to}")]
    Unroutable {
        /// Where the packet is.
        from: SwitchId,
        /// Its phase there.
        phase: Phase,
        /// Where it must go.
        to: SwitchId,
    },
}

const INF: u16 = u16::MAX;

/// Up*/down* state of a topology: root, levels, BFS parents, link directions
/// and minimal legal distances (the routing tables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpDown {
    root: SwitchId,
    level: Vec<usize>,
    parent: Vec<Option<SwitchId>>,
    n: usize,
    /// dist[phase][at * n + to]: minimal legal hops from `at` in `phase` to `to`.
    dist: [Vec<u16>; 2],
}

fn pi(p: Phase) -> usize {
    match p {
        Phase::Up => 0,
        Phase::Down => 1,
    }
}

impl UpDown {
    /// Set up up*/down* routing on `topo` rooted at `root` (default: the
    /// lowest switch id, 0). The BFS parent of a switch is its lowest-id
    /// neighbour one level closer to the root.
    ///
    /// # Errors
    /// [`UpDownError::NoSuchRoot`] if `root` is out of range.
    pub fn new(topo: &SwitchTopology, root: Option<SwitchId>) -> Result<UpDown, UpDownError> {
        let n = topo.switch_count();
        let root = root.unwrap_or(0);
        if root >= n {
            return Err(UpDownError::NoSuchRoot(root));
        }
        let mut level = vec![usize::MAX; n];
        level[root] = 0;
        let mut q = VecDeque::from([root]);
        while let Some(s) = q.pop_front() {
            for (_, peer, _) in topo.links_of(s) {
                if level[peer] == usize::MAX {
                    level[peer] = level[s] + 1;
                    q.push_back(peer);
                }
            }
        }
        let parent = (0..n)
            .map(|s| {
                topo.links_of(s)
                    .map(|(_, p, _)| p)
                    .filter(|&p| level[p] + 1 == level[s])
                    .min()
            })
            .collect();
        let mut ud = UpDown {
            root,
            level,
            parent,
            n,
            dist: [vec![INF; n * n], vec![INF; n * n]],
        };
        ud.compute_distances(topo);
        Ok(ud)
    }

    /// Reverse BFS over (switch, phase) states, once per destination.
    fn compute_distances(&mut self, topo: &SwitchTopology) {
        let n = self.n;
        // Predecessors per state: for a hop u -> v of direction d,
        // (v, Down) is reached from (u, Up) and (u, Down) if d = Down;
        // (v, Up) is reached from (u, Up) if d = Up.
        let mut pred_down: Vec<Vec<SwitchId>> = vec![Vec::new(); n]; // u with u->v down
        let mut pred_up: Vec<Vec<SwitchId>> = vec![Vec::new(); n]; // u with u->v up
        for u in 0..n {
            for (_, v, _) in topo.links_of(u) {
                match self.dir(u, v) {
                    UpDownDir::Down => pred_down[v].push(u),
                    UpDownDir::Up => pred_up[v].push(u),
                }
            }
        }
        for l in pred_down.iter_mut().chain(pred_up.iter_mut()) {
            l.sort_unstable();
            l.dedup();
        }
        let mut q = VecDeque::new();
        for to in 0..n {
            let idx = |at: usize| at * n + to;
            self.dist[0][idx(to)] = 0;
            self.dist[1][idx(to)] = 0;
            q.clear();
            q.push_back((to, Phase::Up));
            q.push_back((to, Phase::Down));
            while let Some((v, ph)) = q.pop_front() {
                let d = self.dist[pi(ph)][idx(v)];
                let next = d.saturating_add(1);
                match ph {
                    Phase::Down => {
                        for &u in &pred_down[v] {
                            for from in [Phase::Up, Phase::Down] {
                                if self.dist[pi(from)][idx(u)] == INF {
                                    self.dist[pi(from)][idx(u)] = next;
                                    q.push_back((u, from));
                                }
                            }
                        }
                    }
                    Phase::Up => {
                        for &u in &pred_up[v] {
                            if self.dist[0][idx(u)] == INF {
                                self.dist[0][idx(u)] = next;
                                q.push_back((u, Phase::Up));
                            }
                        }
                    }
                }
            }
        }
    }

    /// The BFS root.
    pub fn root(&self) -> SwitchId {
        self.root
    }

    /// The number of switches.
    pub fn switch_count(&self) -> usize {
        self.n
    }

    /// BFS level of `switch` (root = 0); `None` if out of range.
    pub fn level(&self, switch: SwitchId) -> Option<usize> {
        self.level.get(switch).copied()
    }

    /// The deepest level.
    pub fn max_level(&self) -> usize {
        self.level.iter().copied().max().unwrap_or(0)
    }

    /// The BFS-tree parent of `switch` (lowest-id candidate); `None` for the
    /// root or an id out of range.
    pub fn parent(&self, switch: SwitchId) -> Option<SwitchId> {
        self.parent.get(switch).copied().flatten()
    }

    /// The direction of a hop from `from` to `to` (whether or not they are
    /// linked): down iff `to` is deeper, or at the same level with a higher id.
    /// Ids out of range count as infinitely deep.
    pub fn dir(&self, from: SwitchId, to: SwitchId) -> UpDownDir {
        let lf = self.level.get(from).copied().unwrap_or(usize::MAX);
        let lt = self.level.get(to).copied().unwrap_or(usize::MAX);
        if lf < lt || (lf == lt && from < to) {
            UpDownDir::Down
        } else {
            UpDownDir::Up
        }
    }

    /// The direction of leaving `switch` through `port`: `Some(Down)` for a
    /// host port ([Sivaram 1998, §2.2]: host ports count as down), the link's direction
    /// for a link port, `None` for an open or missing port.
    pub fn port_dir(
        &self,
        topo: &SwitchTopology,
        switch: SwitchId,
        port: PortId,
    ) -> Option<UpDownDir> {
        match topo.port(switch, port)? {
            PortConn::Open => None,
            PortConn::Host(_) => Some(UpDownDir::Down),
            PortConn::Link { peer, .. } => Some(self.dir(switch, peer)),
        }
    }

    /// The phase of a packet that entered `switch` through `in_port`: `Down`
    /// if it came over a link traversed downward, else `Up` (injection from a
    /// host carries no constraint).
    pub fn phase_after(&self, topo: &SwitchTopology, switch: SwitchId, in_port: PortId) -> Phase {
        match topo.port(switch, in_port) {
            Some(PortConn::Link { peer, .. }) if self.dir(peer, switch) == UpDownDir::Down => {
                Phase::Down
            }
            _ => Phase::Up,
        }
    }

    /// Minimal legal hop count from `from` (in `phase`) to `to`; `None` if
    /// there is no legal route or an id is out of range.
    pub fn distance(&self, from: SwitchId, phase: Phase, to: SwitchId) -> Option<usize> {
        if from >= self.n || to >= self.n {
            return None;
        }
        match self.dist[pi(phase)][from * self.n + to] {
            INF => None,
            d => Some(d as usize),
        }
    }

    /// All minimal legal next hops from `at` (in `phase`) toward `to`, as
    /// (output port, next switch, phase there), in port order. Empty if `at ==
    /// to` or there is no legal route. Every parallel link is listed: the
    /// routing table's adaptive choice is among these.
    pub fn next_hops(
        &self,
        topo: &SwitchTopology,
        at: SwitchId,
        phase: Phase,
        to: SwitchId,
    ) -> Vec<(PortId, SwitchId, Phase)> {
        let Some(d) = self.distance(at, phase, to) else {
            return Vec::new();
        };
        if d == 0 {
            return Vec::new();
        }
        topo.links_of(at)
            .filter_map(|(port, peer, _)| {
                let next = match (phase, self.dir(at, peer)) {
                    (Phase::Down, UpDownDir::Up) => return None,
                    (_, UpDownDir::Down) => Phase::Down,
                    (Phase::Up, UpDownDir::Up) => Phase::Up,
                };
                (self.distance(peer, next, to) == Some(d - 1)).then_some((port, peer, next))
            })
            .collect()
    }

    /// A minimal legal route from `from` (in `phase`) to `to`, as the list of
    /// switches (both ends included), taking at each hop the minimal next hop
    /// with index `pick % count` (0 = lowest port).
    ///
    /// # Errors
    /// [`UpDownError::NoSuchSwitch`] or [`UpDownError::Unroutable`].
    pub fn route(
        &self,
        topo: &SwitchTopology,
        from: SwitchId,
        phase: Phase,
        to: SwitchId,
        pick: usize,
    ) -> Result<Vec<SwitchId>, UpDownError> {
        for s in [from, to] {
            if s >= self.n {
                return Err(UpDownError::NoSuchSwitch(s));
            }
        }
        if self.distance(from, phase, to).is_none() {
            return Err(UpDownError::Unroutable { from, phase, to });
        }
        let mut route = vec![from];
        let (mut at, mut ph) = (from, phase);
        while at != to {
            let hops = self.next_hops(topo, at, ph, to);
            // Non-empty: distance is finite and positive here.
            let Some(&(_, next, nph)) = hops.get(pick % hops.len().max(1)) else {
                return Err(UpDownError::Unroutable { from, phase, to });
            };
            route.push(next);
            at = next;
            ph = nph;
        }
        Ok(route)
    }

    /// The legality oracle: `route` (switches in order) must be non-empty,
    /// every consecutive pair linked, and no up hop may follow a down hop.
    ///
    /// # Errors
    /// The first violation found.
    pub fn check_route(
        &self,
        topo: &SwitchTopology,
        route: &[SwitchId],
    ) -> Result<(), UpDownError> {
        let Some(&first) = route.first() else {
            return Err(UpDownError::EmptyRoute);
        };
        if first >= self.n {
            return Err(UpDownError::NoSuchSwitch(first));
        }
        let mut gone_down = false;
        for (index, w) in route.windows(2).enumerate() {
            let (from, to) = (w[0], w[1]);
            if to >= self.n {
                return Err(UpDownError::NoSuchSwitch(to));
            }
            if !topo.adjacent(from, to) {
                return Err(UpDownError::NotAdjacent { index, from, to });
            }
            match self.dir(from, to) {
                UpDownDir::Down => gone_down = true,
                UpDownDir::Up if gone_down => {
                    return Err(UpDownError::UpAfterDown { index, from, to });
                }
                UpDownDir::Up => {}
            }
        }
        Ok(())
    }

    /// Every link traversal that descends exactly one level, deduplicated over
    /// parallel links: the DAG `T` of Fig 13 step 1, as (upper, lower) pairs.
    pub fn level_crossing_down_edges(&self, topo: &SwitchTopology) -> Vec<(SwitchId, SwitchId)> {
        let mut v: Vec<(SwitchId, SwitchId)> = (0..self.n)
            .flat_map(|a| {
                topo.links_of(a)
                    .filter(move |&(_, b, _)| self.level[a] + 1 == self.level[b])
                    .map(move |(_, b, _)| (a, b))
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::irregular::topology::SwitchTopologyBuilder;

    /// 0 - 1, 0 - 2, 1 - 2 (same level), 2 - 3.
    fn diamond() -> SwitchTopology {
        let mut b = SwitchTopologyBuilder::new(4, 4).unwrap();
        for s in 0..4 {
            b.add_host(s).unwrap();
        }
        b.add_link(0, 1).unwrap();
        b.add_link(0, 2).unwrap();
        b.add_link(1, 2).unwrap();
        b.add_link(2, 3).unwrap();
        b.build().unwrap()
    }

    #[test]
    fn levels_dirs_routes() {
        let t = diamond();
        let ud = UpDown::new(&t, None).unwrap();
        assert_eq!(ud.root(), 0);
        assert_eq!(
            (0..4).map(|s| ud.level(s).unwrap()).collect::<Vec<_>>(),
            vec![0, 1, 1, 2]
        );
        assert_eq!(ud.dir(1, 2), UpDownDir::Down);
        assert_eq!(ud.dir(2, 1), UpDownDir::Up);
        assert_eq!(ud.parent(3), Some(2));
        // 3 -> 1: 3 up to 2, then 2 -> 1 is up (same level, 1 < 2): legal, 2 hops.
        assert_eq!(ud.distance(3, Phase::Up, 1), Some(2));
        assert_eq!(ud.route(&t, 3, Phase::Up, 1, 0).unwrap(), vec![3, 2, 1]);
        // From 1 in down phase, 0 is unreachable.
        assert_eq!(ud.distance(1, Phase::Down, 0), None);
        assert!(ud.route(&t, 1, Phase::Down, 0, 0).is_err());
        assert_eq!(ud.check_route(&t, &[1, 2, 3]), Ok(()));
        assert_eq!(ud.check_route(&t, &[3, 2, 1, 0]), Ok(()), "all up is legal");
        assert_eq!(
            ud.check_route(&t, &[1, 2, 0]),
            Err(UpDownError::UpAfterDown {
                index: 1,
                from: 2,
                to: 0
            })
        );
        assert_eq!(
            ud.check_route(&t, &[1, 3]),
            Err(UpDownError::NotAdjacent {
                index: 0,
                from: 1,
                to: 3
            })
        );
        assert_eq!(ud.check_route(&t, &[]), Err(UpDownError::EmptyRoute));
        assert_eq!(UpDown::new(&t, Some(9)), Err(UpDownError::NoSuchRoot(9)));
        assert_eq!(ud.phase_after(&t, 3, 1), Phase::Down);
        assert_eq!(ud.phase_after(&t, 2, 3), Phase::Up);
        assert_eq!(ud.phase_after(&t, 2, 0), Phase::Up);
    }
}
