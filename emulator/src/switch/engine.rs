//! The switch engine's state and its inputs (packets, credits, timers);
//! routing and output allocation are in [`alloc`].

use std::collections::VecDeque;
use std::sync::Arc;

use super::{
    Blocked, Out, PortLink, Routing, SwAction, SwitchHeader, SwitchPacket, SwitchParams,
    SwitchRouteError, Time,
};

mod alloc;
#[cfg(test)]
mod tests;

#[derive(Debug)]
struct BranchState {
    out: Out,
    granted: bool,
}

/// A buffered packet.
#[derive(Debug)]
struct Slot {
    packet: SwitchPacket,
    arrived: Time,
}

#[derive(Debug, Default)]
struct InputVc {
    /// This VC's input port and number (no division per packet).
    port: u16,
    vc: u16,
    queue: VecDeque<Slot>,
    /// The front slot has been routed (its branches wait at outputs).
    routed: bool,
    /// Earliest time the next head may be routed (the previous tail).
    busy_until: Time,
    /// The routed front slot's branches (the vector is reused).
    branches: Vec<BranchState>,
    /// Of those, the ones not yet sent.
    pending: u16,
    /// When the front slot's tail has left on every sent branch.
    tail_free: Time,
    /// When the front slot was routed (its branches may leave from then).
    ready: Time,
}

#[derive(Debug)]
struct OutputPort {
    /// When the link (or, on a host port with several ejection channels,
    /// the first of them) is free.
    link_free: Time,
    /// A host port with several ejection channels: when each is free
    /// (empty otherwise).
    lanes: Vec<Time>,
    /// Backfilling only: the link's reservations.
    resv: mcast::fabric::Timeline,
    credits: Vec<u32>,
    /// Waiting branches: (input VC index, branch index, VC class).
    waiters: Vec<(u32, u16, u8)>,
    /// The link leads to a host (no credits, no VCs).
    host: bool,
    /// The earliest retry timer armed and not yet fired (Time::MAX: none).
    armed_at: Time,
    /// Credits announced ahead of time: (effective time, vc, flits).
    pending: Vec<(Time, u16, u32)>,
    next_vc: u16,
}

const TOKEN_RETRY: u32 = 1 << 31;

/// One switch.
pub struct SwitchEngine {
    id: usize,
    routing: Arc<dyn Routing>,
    p: SwitchParams,
    classes: u16,
    /// `class_range` of the first classes, precomputed (no division per
    /// grant).
    ranges: [(u16, u16); 4],
    inputs: Vec<InputVc>,
    outputs: Vec<OutputPort>,
    actions: VecDeque<SwAction>,
    scratch: Vec<Out>,
    /// Cached [`Routing::unicast_fast`] decisions by destination: port |
    /// class << 8, [`UNI_NONE`] for none (empty: not cached).
    uni: Vec<u16>,
    /// Not cached, but the routing function has a fast path: ask it per
    /// hop.
    uni_ask: bool,
    /// Grant an output link in a gap before later reservations (socket
    /// fabric; see [`SwitchEngine::set_backfill`]).
    backfill: bool,
    /// Wormhole only: one note per `Send`, `Deliver` and `Drop` action, in
    /// the same order (see [`SwitchEngine::poll_note`]).
    notes: VecDeque<WormNote>,
}

/// Wormhole only: where the copy of a `Send`, `Deliver` or `Drop` action
/// came from, for the driver that tracks worms (the actions themselves do
/// not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WormNote {
    /// The input port and VC whose front packet it is (`None`: a packet
    /// handed to a port the switch does not have).
    pub input: Option<(u16, u16)>,
    /// That packet has no unsent branch left: its branches are all known.
    pub last: bool,
}

/// No cached unicast decision.
const UNI_NONE: u16 = u16::MAX;
/// Fabrics up to this many hosts get a per-switch unicast decision cache.
const UNI_CACHE_MAX: usize = 1024;

impl std::fmt::Debug for SwitchEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchEngine")
            .field("id", &self.id)
            .finish()
    }
}

impl SwitchEngine {
    /// Switch `id` of `routing`'s fabric.
    pub fn new(id: usize, routing: Arc<dyn Routing>, p: SwitchParams) -> SwitchEngine {
        let ports = routing.ports();
        let classes = routing.vc_classes().max(1) as u16;
        let outputs = (0..ports)
            .map(|port| {
                let link = routing.link(id, port);
                let host = matches!(link, PortLink::Host(_));
                OutputPort {
                    link_free: 0,
                    lanes: if host && p.eject > 1 {
                        vec![0; usize::from(p.eject)]
                    } else {
                        Vec::new()
                    },
                    resv: mcast::fabric::Timeline::default(),
                    credits: vec![p.buf; p.vcs as usize],
                    waiters: Vec::new(),
                    host,
                    armed_at: Time::MAX,
                    pending: Vec::new(),
                    next_vc: 0,
                }
            })
            .collect();
        let v = p.link_vcs;
        let ranges = std::array::from_fn(|c| {
            let c = (c as u16).min(classes - 1);
            (c * v / classes, (c + 1) * v / classes)
        });
        let nodes = routing.nodes();
        // Fabrics without a fast path (the default) get neither a cache
        // nor a call per hop.
        let has_fast = (0..nodes.min(8)).any(|d| routing.unicast_fast(id, d).is_some());
        let mut uni: Vec<u16> = Vec::new();
        if has_fast && nodes <= UNI_CACHE_MAX {
            uni = (0..nodes)
                .map(|d| match routing.unicast_fast(id, d) {
                    Some((port, class)) if port < 0x100 && class < 0x7f => {
                        port | u16::from(class) << 8
                    }
                    _ => UNI_NONE,
                })
                .collect();
        }
        let uni_ask = has_fast && uni.is_empty();
        SwitchEngine {
            id,
            routing,
            uni,
            uni_ask,
            backfill: false,
            notes: VecDeque::new(),
            p,
            classes,
            ranges,
            inputs: (0..ports * p.vcs as usize)
                .map(|idx| InputVc {
                    port: (idx / p.vcs as usize) as u16,
                    vc: (idx % p.vcs as usize) as u16,
                    ..InputVc::default()
                })
                .collect(),
            outputs,
            actions: VecDeque::new(),
            scratch: Vec::new(),
        }
    }

    /// Backfilling, for a driver that hands events over in wall-clock
    /// order with virtual timestamps (the socket fabric): an output link is
    /// granted in the earliest gap of its reservations at or after a
    /// packet's routing, a head is routed at its own arrival plus t_r (not
    /// after the previous tail in its FIFO), and credits count buffer space
    /// without a time. So a packet that is later in virtual time but
    /// reached the switch first does not push earlier ones behind it, and
    /// link contention is still charged in virtual time; what is lost is
    /// the virtual-time cost of waiting for buffer space (the buffers still
    /// bound the fabric, in wall time). With events in virtual-time order
    /// (the simulator) a gap before a reservation never occurs, but the
    /// other two rules differ, so the simulator leaves this off.
    pub fn set_backfill(&mut self, on: bool) {
        self.backfill = on;
    }

    /// The next action, if any.
    pub fn poll_action(&mut self) -> Option<SwAction> {
        self.actions.pop_front()
    }

    /// Wormhole only: the note of the next `Send`, `Deliver` or `Drop`
    /// action polled (one note per such action, in order; none under VCT).
    pub fn poll_note(&mut self) -> Option<WormNote> {
        self.notes.pop_front()
    }

    /// Wormhole only: the tail of the front packet of input `port`, VC
    /// `vc`, whose branches have all been sent, has left every branch at
    /// `at` (the driver's worm tracker computes it): free the buffer,
    /// return its credits upstream at `at`, route the next head.
    pub fn input_tail(&mut self, now: Time, port: u16, vc: u16, at: Time) {
        let idx = port as usize * self.p.vcs as usize + vc as usize;
        let Some(input) = self.inputs.get_mut(idx) else {
            return;
        };
        if !input.routed || input.pending != 0 || input.queue.is_empty() {
            return;
        }
        input.tail_free = at.max(now);
        self.finish(idx, now);
    }

    /// Actions are waiting for [`SwitchEngine::poll_action`].
    #[inline]
    pub fn has_actions(&self) -> bool {
        !self.actions.is_empty()
    }

    /// The VC range of class `c`.
    fn class_range(&self, c: u8) -> (u16, u16) {
        if let Some(&r) = self.ranges.get(c as usize) {
            return r;
        }
        let v = self.p.link_vcs;
        let c = u16::from(c).min(self.classes - 1);
        (c * v / self.classes, (c + 1) * v / self.classes)
    }

    /// A head arrived on input `port`, VC `vc`, at `now`.
    pub fn packet_in(&mut self, now: Time, port: u16, vc: u16, packet: SwitchPacket) {
        self.packet_in_at(now, now, port, vc, packet);
    }

    /// A head that arrived at `arrived` (≤ `now`) is handed over at `now`.
    /// A driver that delivers heads `t_r` after their arrival saves the
    /// engine a routing timer; the timing is the same as
    /// [`SwitchEngine::packet_in`] at `arrived`.
    pub fn packet_in_at(
        &mut self,
        now: Time,
        arrived: Time,
        port: u16,
        vc: u16,
        packet: SwitchPacket,
    ) {
        let idx = port as usize * self.p.vcs as usize + vc as usize;
        let Some(input) = self.inputs.get_mut(idx) else {
            if self.p.wormhole {
                self.notes.push_back(WormNote {
                    input: None,
                    last: true,
                });
            }
            self.actions.push_back(SwAction::Drop {
                packet,
                error: SwitchRouteError::BadPort(port as usize),
            });
            return;
        };
        input.queue.push_back(Slot {
            packet,
            arrived: arrived.min(now),
        });
        if input.queue.len() == 1 {
            self.arm_route(idx, now);
        }
    }

    fn arm_route(&mut self, idx: usize, now: Time) {
        let t_r = self.p.t_r;
        let input = &mut self.inputs[idx];
        let Some(front) = input.queue.front() else {
            return;
        };
        if self.backfill {
            // Routed at its own time, which may be before the event that
            // let it reach the front (the FIFO is in wall-clock order).
            let at = front.arrived + t_r;
            if at <= now {
                self.route(idx, at);
            } else {
                self.actions.push_back(SwAction::Timer {
                    at,
                    token: idx as u32,
                });
            }
            return;
        }
        let at = (front.arrived + t_r).max(input.busy_until).max(now);
        if at == now {
            self.route(idx, now);
        } else {
            self.actions.push_back(SwAction::Timer {
                at,
                token: idx as u32,
            });
        }
    }

    /// Credits for output `port`, VC `vc` came back.
    pub fn credit_in(&mut self, now: Time, port: u16, vc: u16, flits: u32) {
        self.credit_in_at(now, now, port, vc, flits);
    }

    /// Credits for output `port`, VC `vc` announced at `now`, usable from
    /// `at` (≥ `now`): the engine applies them at `at` and arms its own timer
    /// if a packet waits for them. A driver that knows when a credit will
    /// arrive saves an event per packet-hop; the timing is the same as
    /// [`SwitchEngine::credit_in`] at `at`.
    pub fn credit_in_at(&mut self, now: Time, at: Time, port: u16, vc: u16, flits: u32) {
        // Backfilling: credits count buffer space in wall-clock order only.
        let at = if self.backfill { now } else { at };
        let Some(o) = self.outputs.get_mut(port as usize) else {
            return;
        };
        if (vc as usize) >= o.credits.len() {
            return;
        }
        if at <= now {
            let c = &mut o.credits[vc as usize];
            *c = c.saturating_add(flits).min(self.p.buf);
            self.try_output(port as usize, now);
        } else {
            o.pending.push((at, vc, flits));
            if !o.waiters.is_empty() && (o.link_free <= now || self.backfill) {
                self.arm(port as usize, at, now);
            }
        }
    }

    fn arm(&mut self, port: usize, at: Time, now: Time) {
        let o = &mut self.outputs[port];
        if o.armed_at < now {
            o.armed_at = Time::MAX;
        }
        if o.armed_at <= at {
            return;
        }
        o.armed_at = at;
        self.actions.push_back(SwAction::Timer {
            at,
            token: TOKEN_RETRY | port as u32,
        });
    }

    #[inline(always)]
    fn absorb(&mut self, port: usize, now: Time) {
        let buf = self.p.buf;
        let o = &mut self.outputs[port];
        if o.pending.is_empty() {
            return;
        }
        let mut i = 0;
        while i < o.pending.len() {
            let (t, vc, f) = o.pending[i];
            if t <= now {
                let c = &mut o.credits[vc as usize];
                *c = c.saturating_add(f).min(buf);
                o.pending.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// A timer fired.
    pub fn timer(&mut self, now: Time, token: u32) {
        if token & TOKEN_RETRY != 0 {
            let port = (token & !TOKEN_RETRY) as usize;
            if let Some(o) = self.outputs.get_mut(port) {
                if o.armed_at <= now {
                    o.armed_at = Time::MAX;
                }
                self.try_output(port, now);
            }
        } else if (token as usize) < self.inputs.len() {
            self.route(token as usize, now);
        }
    }

    /// Every input VC whose routed head still waits for an output.
    pub fn blocked(&self) -> Vec<Blocked> {
        let vcs = self.p.vcs as usize;
        let mut out = Vec::new();
        for (idx, input) in self.inputs.iter().enumerate() {
            if !input.routed {
                continue;
            }
            if !input.queue.is_empty() {
                for b in input.branches.iter().filter(|b| !b.granted) {
                    out.push(Blocked {
                        switch: self.id,
                        in_port: (idx / vcs) as u16,
                        in_vc: (idx % vcs) as u16,
                        out_port: b.out.port,
                        class: b.out.class,
                    });
                }
            }
        }
        out
    }

    /// Wormhole: every input VC whose front packet has sent all its
    /// branches but whose tail has not left (a channel a worm holds behind
    /// its head), with the port and class of each branch. Empty under VCT.
    pub fn held(&self) -> Vec<Blocked> {
        let mut out = Vec::new();
        if !self.p.wormhole {
            return out;
        }
        for input in &self.inputs {
            if input.routed && input.pending == 0 && !input.queue.is_empty() {
                for b in &input.branches {
                    out.push(Blocked {
                        switch: self.id,
                        in_port: input.port,
                        in_vc: input.vc,
                        out_port: b.out.port,
                        class: b.out.class,
                    });
                }
            }
        }
        out
    }

    /// Packets buffered in this switch.
    pub fn buffered(&self) -> usize {
        self.inputs.iter().map(|i| i.queue.len()).sum()
    }
}
