//! Wormhole switching: the simulator's worm tracker. Every hop of every
//! worm is an edge of the worm's tree (the injection link is the root; a
//! switch's branches are the children of the edge that fed it); the
//! tracker learns each edge's head departure `G` from the engines' actions
//! and computes when its tail leaves, `T`, by the rule of the switch
//! module doc ([`crate::switch`], "Wormhole"):
//!
//! `T_e = max(D_e, T_parent + δ_parent)`, where `δ_u = pipe_u + t_r` (the
//! head's delay from leaving on `u` to being routed after it) and
//! `D_e = max(G_e + ceil(L/b), max_d G_d + ceil(r_d / b))` over the
//! descendants `d` of `e`, `k` hops below it, with
//! `r_d = L − k·B − b·Σδ` (the flits still behind the head once `k`
//! buffers of `B` flits and the pipelines between are full) `> 0`.
//!
//! `D_e` is known once every edge within the worm's span below `e` has been
//! granted (its branches all known), which is always before `T_e`; then
//! the tracker tells the engine fed by `e` when the tail has left all its
//! branches ([`crate::switch::SwitchEngine::input_tail`]), and schedules a
//! host's arrival at `T + t_w`.

use std::collections::VecDeque;

use super::{Ev, Net};
use crate::switch::{PortLink, SwitchPacket, Time, WormNote};

const NONE: u32 = u32::MAX;

/// Where an edge leads.
#[derive(Debug)]
enum Dest {
    /// A switch's input VC (global index).
    Input(u32),
    /// A host, with the copy to hand over when its tail arrives.
    Host(u32, Option<SwitchPacket>),
}

#[derive(Debug)]
struct Edge {
    parent: u32,
    /// Head departure.
    g: Time,
    /// Propagation on this edge (t_w; 0 on the injection link).
    pipe: Time,
    children: Vec<u32>,
    /// The children still without a tail time.
    unresolved: u32,
    /// Every branch of the packet at the far end is known.
    complete: bool,
    /// The input buffer at the far end has been freed.
    released: bool,
    tail: Option<Time>,
    /// The latest tail among the children.
    child_tail: Time,
    dest: Dest,
    /// Freed (its slot may be reused).
    dead: bool,
}

/// The worms in flight.
pub(super) struct Tracker {
    edges: Vec<Edge>,
    free: Vec<u32>,
    /// Per input VC (global index), the edges whose packets it holds, in
    /// its FIFO order.
    fifo: Vec<VecDeque<u32>>,
    l: i128,
    b: i128,
    buf: i128,
    ser: Time,
    t_r: Time,
    /// Input VCs per switch, VCs per port.
    per_sw: u32,
    vcs: u32,
    /// Inputs whose front packet's tail is known: (switch, port, vc, at).
    tails: Vec<(u32, u16, u16, Time)>,
    /// Hosts' arrivals: (tail at the host, node, copy).
    arrivals: Vec<(Time, u32, SwitchPacket)>,
}

impl Tracker {
    pub(super) fn new(
        switches: usize,
        ports: usize,
        p: crate::switch::SwitchParams,
        b: u64,
    ) -> Tracker {
        let per_sw = ports * p.vcs as usize;
        Tracker {
            edges: Vec::new(),
            free: Vec::new(),
            fifo: (0..switches * per_sw).map(|_| VecDeque::new()).collect(),
            l: i128::from(p.flits),
            b: i128::from(b.max(1)),
            buf: i128::from(p.buf),
            ser: p.ser,
            t_r: p.t_r,
            per_sw: per_sw as u32,
            vcs: u32::from(p.vcs),
            tails: Vec::new(),
            arrivals: Vec::new(),
        }
    }

    /// Edges alive (worm hops whose tail or whose children's tails are
    /// not yet known).
    pub(super) fn live(&self) -> usize {
        self.edges.len() - self.free.len()
    }

    fn input(&self, sw: usize, port: u16, vc: u16) -> u32 {
        sw as u32 * self.per_sw + u32::from(port) * self.vcs + u32::from(vc)
    }

    fn alloc(&mut self, e: Edge) -> u32 {
        if let Some(i) = self.free.pop() {
            self.edges[i as usize] = e;
            i
        } else {
            self.edges.push(e);
            (self.edges.len() - 1) as u32
        }
    }

    fn edge(parent: u32, g: Time, pipe: Time, dest: Dest) -> Edge {
        let host = matches!(dest, Dest::Host(..));
        Edge {
            parent,
            g,
            pipe,
            children: Vec::new(),
            unresolved: 0,
            complete: host,
            released: host,
            tail: None,
            child_tail: 0,
            dest,
            dead: false,
        }
    }

    /// A host's NI sent a head into switch `sw`, input `port`, VC `vc`.
    pub(super) fn inject(&mut self, g: Time, sw: usize, port: u16, vc: u16) {
        let to = self.input(sw, port, vc);
        let e = self.alloc(Tracker::edge(NONE, g, 0, Dest::Input(to)));
        self.fifo[to as usize].push_back(e);
    }

    /// Switch `sw` sent (`to` = Some(next switch, port, vc)) or delivered
    /// (`host`) a copy of the front packet of the input its note names, or
    /// dropped it (neither).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn out(
        &mut self,
        now: Time,
        sw: usize,
        note: WormNote,
        g: Time,
        t_w: Time,
        to: Option<(usize, u16, u16)>,
        host: Option<(u32, SwitchPacket)>,
    ) {
        let Some((port, vc)) = note.input else {
            return;
        };
        let from = self.input(sw, port, vc) as usize;
        let Some(&parent) = self.fifo[from].front() else {
            return;
        };
        let dest = match (to, host) {
            (Some((s, p, v)), _) => Some(Dest::Input(self.input(s, p, v))),
            (None, Some((node, pkt))) => Some(Dest::Host(node, Some(pkt))),
            (None, None) => None,
        };
        match dest {
            Some(dest) => {
                let fed = match dest {
                    Dest::Input(i) => Some(i),
                    Dest::Host(..) => None,
                };
                let c = self.alloc(Tracker::edge(parent, g, t_w, dest));
                if let Some(i) = fed {
                    self.fifo[i as usize].push_back(c);
                }
                let p = &mut self.edges[parent as usize];
                p.children.push(c);
                p.unresolved += 1;
                p.complete = note.last;
            }
            None => {
                // Dropped at routing: the engine freed the buffer.
                self.fifo[from].pop_front();
                let p = &mut self.edges[parent as usize];
                p.complete = true;
                p.released = true;
            }
        }
        // The topmost ancestor without a tail time: everything that may
        // have become computable is below it.
        let mut top = parent;
        loop {
            let up = self.edges[top as usize].parent;
            if up == NONE || self.edges[top as usize].tail.is_some() {
                break;
            }
            if self.edges[up as usize].tail.is_some() {
                break;
            }
            top = up;
        }
        self.resolve(top, now);
    }

    /// `D_e`, if every edge within the worm's span below `e` is known.
    fn down(&self, e: u32) -> Option<Time> {
        let t_r = self.t_r;
        let mut d = self.edges[e as usize].g + self.ser;
        let mut stack = vec![(e, 0i128, 0i128)];
        while let Some((u, k, sd)) = stack.pop() {
            let eu = &self.edges[u as usize];
            let (k1, sd1) = (k + 1, sd + i128::from(eu.pipe + t_r));
            let rem = self.l - k1 * self.buf - self.b * sd1;
            if rem <= 0 || matches!(eu.dest, Dest::Host(..)) {
                continue;
            }
            if !eu.complete {
                return None;
            }
            let lag = (rem + self.b - 1) / self.b;
            for &c in &eu.children {
                let g = self.edges[c as usize].g;
                d = d.max(g + lag as Time);
                stack.push((c, k1, sd1));
            }
        }
        Some(d)
    }

    /// Compute the tail of `e` if possible, then of its children, and free
    /// what nobody needs any more.
    fn resolve(&mut self, e: u32, now: Time) {
        let i = e as usize;
        if self.edges[i].tail.is_none() {
            let parent = self.edges[i].parent;
            let after = if parent == NONE {
                Some(0)
            } else {
                let p = &self.edges[parent as usize];
                p.tail.map(|t| t + p.pipe + self.t_r)
            };
            let (Some(after), Some(d)) = (after, self.down(e)) else {
                return;
            };
            let t = d.max(after);
            self.edges[i].tail = Some(t);
            if let Dest::Host(node, ref mut pkt) = self.edges[i].dest {
                if let Some(pkt) = pkt.take() {
                    self.arrivals.push((t, node, pkt));
                }
            }
            if parent != NONE {
                let p = &mut self.edges[parent as usize];
                p.unresolved -= 1;
                p.child_tail = p.child_tail.max(t);
            }
        }
        let kids: Vec<u32> = self.edges[i]
            .children
            .iter()
            .copied()
            .filter(|&c| self.edges[c as usize].tail.is_none())
            .collect();
        for c in kids {
            self.resolve(c, now);
        }
        self.settle(e, now);
        let parent = self.edges[i].parent;
        if parent != NONE {
            self.settle(parent, now);
        }
    }

    /// Free the input buffer `e` feeds once its tail has left every branch;
    /// then `e` itself (its children no longer need its tail: they have
    /// theirs).
    fn settle(&mut self, e: u32, now: Time) {
        let i = e as usize;
        let x = &self.edges[i];
        if x.dead || x.tail.is_none() || !x.complete || x.unresolved != 0 {
            return;
        }
        if !x.released {
            if let Dest::Input(to) = x.dest {
                let at = x.child_tail.max(now);
                let sw = to / self.per_sw;
                let r = to % self.per_sw;
                self.tails
                    .push((sw, (r / self.vcs) as u16, (r % self.vcs) as u16, at));
                let front = self.fifo[to as usize].pop_front();
                debug_assert_eq!(front, Some(e));
            }
            self.edges[i].released = true;
        }
        for c in std::mem::take(&mut self.edges[i].children) {
            self.edges[c as usize].parent = NONE;
        }
        let parent = self.edges[i].parent;
        if parent != NONE {
            let siblings = &mut self.edges[parent as usize].children;
            if let Some(k) = siblings.iter().position(|&c| c == e) {
                siblings.swap_remove(k);
            }
        }
        self.edges[i].dead = true;
        self.free.push(e);
    }
}

impl<U> Net<U> {
    /// Wormhole: worm hops the tracker still holds (0 once every tail has
    /// left; under VCT always 0).
    pub fn worm_hops_live(&self) -> usize {
        self.worms.as_ref().map_or(0, Tracker::live)
    }

    /// Switch `sw` sent a copy at `at` on a port leading to `link` (VC
    /// `vc`), delivered `packet` to a host, or dropped a packet (`Open`):
    /// tell the tracker, with the note the engine left for the action.
    pub(super) fn worm_out(
        &mut self,
        sw: usize,
        at: Time,
        link: PortLink,
        vc: u16,
        packet: Option<SwitchPacket>,
    ) {
        let now = self.now;
        let t_w = self.t_w;
        let Some(note) = self.switches[sw].poll_note() else {
            return;
        };
        let Some(w) = self.worms.as_mut() else {
            return;
        };
        let (to, host) = match (link, packet) {
            (PortLink::Host(node), Some(p)) => (None, Some((node as u32, p))),
            (PortLink::Switch { switch, port }, None) => (Some((switch, port as u16, vc)), None),
            _ => (None, None),
        };
        w.out(now, sw, note, at, t_w, to, host);
    }

    /// Hand the tracker's results to the engines and hosts.
    pub(super) fn flush_worms(&mut self) {
        let Some(w) = self.worms.as_mut() else {
            return;
        };
        let tails = std::mem::take(&mut w.tails);
        let arrivals = std::mem::take(&mut w.arrivals);
        for (at, node, packet) in arrivals {
            self.push(at + self.t_w, Ev::Arrive { node, packet });
        }
        for (sw, port, vc, at) in tails {
            self.push(self.now, Ev::Tail { sw, port, vc, at });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::{SwitchHeader, SwitchParams};

    /// The tracker's closed form against the flit recurrence it solves
    /// (b = 1), on random worm trees: `F_e(x)`, the time the first `x`
    /// flits have left on hop `e`, is the latest of `G_e + x` (link rate),
    /// `F_parent(x) + δ_parent` (a flit leaves after it arrived) and
    /// `F_c(x − B − δ_e)` for every branch `c` (the buffer at the end of
    /// `e` frees a flit when every branch has read it); `F(y ≤ 0) = −∞`.
    /// Every host's arrival is `F_h(L)`, every input is freed at
    /// `max_c F_c(L)`, and no hop is left behind.
    #[test]
    fn closed_form_matches_the_flit_recurrence() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _case in 0..300 {
            let (t_r, t_w) = (rnd(4), rnd(3));
            let (l, b) = (1 + rnd(40) as u32, 1 + rnd(6) as u32);
            // The tree: (parent, G, host); edge i leads to switch i.
            let mut edges: Vec<(usize, Time, bool)> = vec![(usize::MAX, rnd(5), false)];
            let mut i = 0;
            while i < edges.len() {
                if !edges[i].2 {
                    let delta = if i == 0 { t_r } else { t_w + t_r };
                    for _ in 0..1 + rnd(3) {
                        let host = edges.len() > 12 || rnd(3) == 0;
                        edges.push((i, edges[i].1 + delta + rnd(3) * rnd(15), host));
                    }
                }
                i += 1;
            }
            let n = edges.len();
            let p = SwitchParams {
                t_r,
                ser: Time::from(l),
                flits: l,
                buf: b,
                vcs: 1,
                link_vcs: 1,
                eject: 1,
                wormhole: true,
            };
            let mut tr = Tracker::new(n, 1, p, 1);
            tr.inject(edges[0].1, 0, 0, 0);
            // The grants in time order, each switch's last one marked.
            let mut order: Vec<usize> = (1..n).collect();
            order.sort_by_key(|&e| (edges[e].1, e));
            let last: Vec<usize> = (0..n)
                .map(|s| {
                    (1..n)
                        .filter(|&e| edges[e].0 == s)
                        .max_by_key(|&e| (edges[e].1, e))
                })
                .map(|e| e.unwrap_or(usize::MAX))
                .collect();
            for &e in &order {
                let (parent, g, host) = edges[e];
                let note = WormNote {
                    input: Some((0, 0)),
                    last: last[parent] == e,
                };
                let packet = SwitchPacket {
                    id: e as u64,
                    header: SwitchHeader::Consumed,
                };
                let (to, h) = if host {
                    (None, Some((e as u32, packet)))
                } else {
                    (Some((e, 0, 0)), None)
                };
                tr.out(g, parent, note, g, t_w, to, h);
            }
            // The recurrence, x ascending, parents before children.
            let neg = i64::MIN / 4;
            let mut f = vec![vec![neg; l as usize + 1]; n];
            for x in 1..=l as i64 {
                for e in 0..n {
                    let (parent, g, _) = edges[e];
                    let mut v = g as i64 + x;
                    if parent != usize::MAX {
                        let dp = if parent == 0 { t_r } else { t_w + t_r };
                        v = v.max(f[parent][x as usize] + dp as i64);
                    }
                    f[e][x as usize] = v;
                }
                for e in (0..n).rev() {
                    let de = if e == 0 { t_r } else { t_w + t_r } as i64;
                    let y = x - i64::from(b) - de;
                    if y > 0 {
                        for c in (e + 1..n).filter(|&c| edges[c].0 == e) {
                            f[e][x as usize] = f[e][x as usize].max(f[c][y as usize]);
                        }
                    }
                }
            }
            // A child's own F(x) may have grown through its parent's:
            // settle by repeating until nothing moves.
            loop {
                let mut moved = false;
                for x in 1..=l as usize {
                    for e in 0..n {
                        let (parent, g, _) = edges[e];
                        let mut v = (g as i64 + x as i64).max(f[e][x]);
                        if parent != usize::MAX {
                            let dp = if parent == 0 { t_r } else { t_w + t_r };
                            v = v.max(f[parent][x] + dp as i64);
                        }
                        let de = if e == 0 { t_r } else { t_w + t_r } as i64;
                        let y = x as i64 - i64::from(b) - de;
                        if y > 0 {
                            for c in (e + 1..n).filter(|&c| edges[c].0 == e) {
                                v = v.max(f[c][y as usize]);
                            }
                        }
                        if v != f[e][x] {
                            f[e][x] = v;
                            moved = true;
                        }
                    }
                }
                if !moved {
                    break;
                }
            }
            let tail = |e: usize| f[e][l as usize] as Time;
            let mut want_arr: Vec<(Time, u32)> = (1..n)
                .filter(|&e| edges[e].2)
                .map(|e| (tail(e), e as u32))
                .collect();
            let mut got_arr: Vec<(Time, u32)> = tr.arrivals.iter().map(|a| (a.0, a.1)).collect();
            want_arr.sort_unstable();
            got_arr.sort_unstable();
            let ctx = format!("t_r {t_r} t_w {t_w} L {l} B {b} tree {edges:?}");
            assert_eq!(got_arr, want_arr, "{ctx}");
            let mut want_in: Vec<(u32, Time)> = (0..n)
                .filter(|&e| !edges[e].2)
                .map(|e| {
                    let kids = (1..n).filter(|&c| edges[c].0 == e);
                    (e as u32, kids.map(tail).max().unwrap())
                })
                .collect();
            let mut got_in: Vec<(u32, Time)> = tr.tails.iter().map(|t| (t.0, t.3)).collect();
            want_in.sort_unstable();
            got_in.sort_unstable();
            assert_eq!(got_in, want_in, "{ctx}");
            assert_eq!(tr.live(), 0, "{ctx}");
        }
    }
}
