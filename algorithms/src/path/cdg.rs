//! The channel-dependency graph of R_UTPR (Dally and Seitz: deterministic
//! routing is deadlock-free iff its CDG is acyclic; [Robinson 1994, §2.4; §5.5, Theorem 5.1]).
//!
//! R_UTPR's choice at a node u depends only on the *set* of useful
//! dimensions Δ(u, v) and on the boundaries at u, so the dependencies out of
//! a channel into u are found by trying every non-empty subset of the
//! dimensions (2^n − 1 per node), not every destination.
//!
//! * [`VcSets::Two`] — UTPR as the thesis defines it: a worm is on its
//!   p-channels until it crosses a boundary and on h-channels after; a worm
//!   of an H-cycle crosses at most one boundary (Theorem 5.1), so nothing
//!   depends from an h-channel onto a boundary channel. Acyclic.
//! * [`VcSets::One`] — the same routes with a single channel per link: a
//!   channel no longer tells whether the worm has crossed its boundary, so
//!   a worm on it may still cross one. This graph has cycles (Fig 2.4's
//!   ring argument), which shows the check can fail.

use std::collections::HashMap;

use super::utpr::Utpr;
use crate::topo::{Channel, Dir, Vc};

/// How many virtual-channel sets the routes are mapped onto.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VcSets {
    /// UTPR's p- and h-channels.
    Two,
    /// One channel per link (`Vc::Single`).
    One,
}

/// A channel-dependency graph: vertices are channels, an arc c → c' means a
/// worm holding c may next request c'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cdg {
    channels: Vec<Channel>,
    index: HashMap<Channel, usize>,
    arcs: Vec<Vec<usize>>,
}

impl Cdg {
    /// Build the CDG of R_UTPR on `utpr`'s torus with `sets` VC sets.
    pub fn build(utpr: &Utpr<'_>, sets: VcSets) -> Cdg {
        let topo = utpr.topology();
        let n = topo.dims();
        let mut g = Cdg {
            channels: Vec::new(),
            index: HashMap::new(),
            arcs: Vec::new(),
        };
        // Vertices: every channel that exists.
        for u in 0..topo.nodes() {
            for d in 0..n {
                let classes: &[Vc] = match sets {
                    VcSets::Two => &[Vc::P, Vc::H],
                    VcSets::One => &[Vc::Single],
                };
                for &vc in classes {
                    let c = Channel {
                        node: u,
                        dim: d,
                        dir: Dir::Plus,
                        vc,
                    };
                    if sets == VcSets::One || utpr.channel_exists(&c) {
                        g.index.insert(c, g.channels.len());
                        g.channels.push(c);
                        g.arcs.push(Vec::new());
                    }
                }
            }
        }
        // Arcs: from a channel c into w, to R_UTPR(w, vc(c), v) for every
        // set of useful dimensions.
        for i in 0..g.channels.len() {
            let c = g.channels[i];
            let w = utpr.up(c.node, c.dim);
            let mut next = Vec::new();
            for mask in 1u64..(1u64 << n) {
                let Some(d) = choose(utpr, w, mask) else {
                    continue;
                };
                let b = utpr.boundary(w, d);
                let vc = match sets {
                    VcSets::One => Vc::Single,
                    VcSets::Two => {
                        if c.vc == Vc::H && b {
                            // A second boundary: no worm of an H-cycle does this.
                            continue;
                        }
                        if c.vc == Vc::P && !b {
                            Vc::P
                        } else {
                            Vc::H
                        }
                    }
                };
                let to = Channel {
                    node: w,
                    dim: d,
                    dir: Dir::Plus,
                    vc,
                };
                if let Some(&j) = g.index.get(&to) {
                    if !next.contains(&j) {
                        next.push(j);
                    }
                }
            }
            g.arcs[i] = next;
        }
        g
    }

    /// The number of channels.
    pub fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// The number of dependency arcs.
    pub fn arc_count(&self) -> usize {
        self.arcs.iter().map(Vec::len).sum()
    }

    /// Whether a worm holding `from` may next request `to`.
    pub fn has_arc(&self, from: &Channel, to: &Channel) -> bool {
        match (self.index.get(from), self.index.get(to)) {
            (Some(&i), Some(&j)) => self.arcs[i].contains(&j),
            _ => false,
        }
    }

    /// A dependency cycle (its channels in order), or `None` if the graph is
    /// acyclic. Iterative depth-first search.
    pub fn find_cycle(&self) -> Option<Vec<Channel>> {
        const WHITE: u8 = 0;
        const GREY: u8 = 1;
        const BLACK: u8 = 2;
        let mut colour = vec![WHITE; self.channels.len()];
        let mut parent = vec![usize::MAX; self.channels.len()];
        for root in 0..self.channels.len() {
            if colour[root] != WHITE {
                continue;
            }
            let mut stack = vec![(root, 0usize)];
            colour[root] = GREY;
            while let Some(&mut (v, ref mut next)) = stack.last_mut() {
                if let Some(&w) = self.arcs[v].get(*next) {
                    *next += 1;
                    match colour[w] {
                        WHITE => {
                            colour[w] = GREY;
                            parent[w] = v;
                            stack.push((w, 0));
                        }
                        GREY => {
                            let mut cycle = vec![self.channels[w]];
                            let mut x = v;
                            while x != w {
                                cycle.push(self.channels[x]);
                                x = parent[x];
                            }
                            cycle[1..].reverse();
                            return Some(cycle);
                        }
                        _ => {}
                    }
                } else {
                    colour[v] = BLACK;
                    stack.pop();
                }
            }
        }
        None
    }

    /// Whether the graph is acyclic.
    pub fn is_acyclic(&self) -> bool {
        self.find_cycle().is_none()
    }
}

/// R_UTPR's dimension at w when the useful dimensions are `mask`.
fn choose(utpr: &Utpr<'_>, w: usize, mask: u64) -> Option<usize> {
    let n = utpr.topology().dims();
    let mut highest = None;
    for i in 0..n {
        if mask >> i & 1 == 1 {
            if !utpr.boundary(w, i) {
                return Some(i);
            }
            highest = Some(i);
        }
    }
    highest
}
