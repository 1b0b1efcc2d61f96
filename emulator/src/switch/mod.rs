//! The sans-IO switch engine: one [`SwitchEngine`] per emulated switch.
//!
//! # Model
//! Input-buffered, cut-through, at **packet-train granularity** (virtual
//! cut-through): every input port has `vcs` virtual-channel FIFOs of
//! `buf` flits; a packet's head is routed `t_r` cycles after it reaches the
//! front of its FIFO (the routing of the next head overlaps the previous
//! tail); an output port sends one packet at a time and holds its link for
//! `ser = ceil(L/b)` cycles; a packet may start on an output VC only when
//! that downstream VC buffer has credits for the whole packet. Credits for a
//! packet go back upstream when its tail has left the buffer.
//!
//! **Replication** is asynchronous (digest 000 §2.3): the routing function
//! may return several branches; each branch waits for its own output port
//! and VC, independently of the others, so a blocked branch does not stall
//! the rest. The packet's chunk counter is its number of unsent branches;
//! the buffer space is freed (and credits returned) when the last branch
//! has read the tail.
//!
//! **VC classes**: the routing function names a class per branch; the
//! engine maps class `c` of `C` to the VCs `[c·V/C, (c+1)·V/C)`. Tori with
//! the dateline have two classes (p before the wrap; h or l after it, digest
//! 004 §3.2–3.3); other fabrics one.
//!
//! # Events and actions
//! Events in: [`SwitchEngine::packet_in`] (a head arrived on port p, VC v,
//! at virtual time t), [`SwitchEngine::credit_in`] (credits returned for an
//! output VC), [`SwitchEngine::timer`] (a timer the engine asked for).
//! Actions out ([`SwAction`]): send on a port and VC at a time (the driver
//! adds the link delay), deliver to a host port at a time, return credits
//! upstream on an input port, arm a timer, drop a packet whose header does
//! not route. The discrete-event simulator ([`crate::sim`]) runs these
//! engines in one process; a socket driver can run the same engines with
//! timestamps carried in the packets.

pub mod routing;

use std::collections::VecDeque;
use std::sync::Arc;

pub use routing::{Header, Link, Out, RouteError, Routing};

/// Virtual time in cycles.
pub type Time = u64;

/// A packet in the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The driver's identifier (copies of a replicated packet keep it).
    pub id: u64,
    /// Where it goes.
    pub header: Header,
}

/// The engine's timing parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchParams {
    /// Head delay through the switch (routing + crossbar), t_r.
    pub t_r: Time,
    /// Cycles a packet holds a link, ceil(L/b).
    pub ser: Time,
    /// Flits per packet (L).
    pub flits: u32,
    /// Flits per VC buffer.
    pub buf: u32,
    /// VCs per port.
    pub vcs: u16,
}

impl SwitchParams {
    /// The parameters `cost` gives the switches of a fabric whose routing
    /// uses `classes` VC classes (`num_vcs = 0`: one VC per class).
    ///
    /// # Errors
    /// Fewer VCs than classes, or a value too large for the engine, as a
    /// sentence for the user.
    pub fn from_cost(
        cost: &crate::cost::CostModel,
        classes: usize,
    ) -> Result<SwitchParams, String> {
        let classes = classes.max(1) as u64;
        let vcs = if cost.num_vcs == 0 {
            classes
        } else {
            cost.num_vcs
        };
        if vcs < classes {
            return Err(format!(
                "num_vcs = {vcs} but the fabric's routing uses {classes} VC classes \
                 (set dateline = 0 to run with one class, which may deadlock)"
            ));
        }
        let vcs = u16::try_from(vcs).map_err(|_| format!("num_vcs = {vcs} is too large"))?;
        let to_u32 =
            |x: u64, what: &str| u32::try_from(x).map_err(|_| format!("{what} = {x} is too large"));
        Ok(SwitchParams {
            t_r: cost.t_r(),
            ser: cost.serialization(),
            flits: to_u32(cost.packet_flits, "packet_flits")?,
            buf: to_u32(cost.vc_buf_flits, "vc_buf_flits")?,
            vcs,
        })
    }
}

/// The wiring of `routing`'s fabric, flat by `switch * ports + port`:
/// where each output port leads (`Routing::link`), and who feeds each input
/// port — the upstream switch of a link, or the host attached there (hosts
/// inject where `attach` says, which on a MIN is not where they receive).
pub fn link_tables(routing: &dyn Routing) -> (Vec<Link>, Vec<Link>) {
    let (n_sw, ports) = (routing.switches(), routing.ports());
    let links: Vec<Link> = (0..n_sw)
        .flat_map(|s| (0..ports).map(move |p| (s, p)))
        .map(|(s, p)| routing.link(s, p))
        .collect();
    let mut ups = vec![Link::Open; n_sw * ports];
    for (i, l) in links.iter().enumerate() {
        if let Link::Switch { switch, port } = *l {
            if switch < n_sw && port < ports {
                ups[switch * ports + port] = Link::Switch {
                    switch: i / ports,
                    port: i % ports,
                };
            }
        }
    }
    for node in 0..routing.nodes() {
        let (s, p) = routing.attach(node);
        if s < n_sw && p < ports {
            ups[s * ports + p] = Link::Host(node);
        }
    }
    (links, ups)
}

/// What the engine asks its driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwAction {
    /// The head of `packet` leaves on `port`, output VC `vc`, at `at`; the
    /// tail follows `ser` cycles later.
    Send {
        /// Output port.
        port: u16,
        /// Downstream VC.
        vc: u16,
        /// Departure of the head.
        at: Time,
        /// The copy.
        packet: Packet,
    },
    /// The head of `packet` leaves for the host on `port` at `at`.
    Deliver {
        /// Host port.
        port: u16,
        /// Departure of the head.
        at: Time,
        /// The copy.
        packet: Packet,
    },
    /// `flits` credits for input `port`, VC `vc` go upstream at `at`.
    Credit {
        /// Input port.
        port: u16,
        /// Its VC.
        vc: u16,
        /// Credits.
        flits: u32,
        /// When the tail left.
        at: Time,
    },
    /// Call [`SwitchEngine::timer`] with `token` at `at`.
    Timer {
        /// When.
        at: Time,
        /// What.
        token: u32,
    },
    /// The header could not be routed; the packet is dropped.
    Drop {
        /// The packet.
        packet: Packet,
        /// Why.
        error: RouteError,
    },
}

#[derive(Debug)]
struct BranchState {
    out: Out,
    granted: bool,
}

/// A buffered packet.
#[derive(Debug)]
struct Slot {
    packet: Packet,
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
    link_free: Time,
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

/// A blocked channel, for the deadlock report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Blocked {
    /// The switch.
    pub switch: usize,
    /// The input port.
    pub in_port: u16,
    /// The input VC.
    pub in_vc: u16,
    /// The output port the head waits for.
    pub out_port: u16,
    /// The VC class it needs there.
    pub class: u8,
}

const TOKEN_RETRY: u32 = 1 << 31;

/// Drop a header, inline for the kinds that own nothing (the drop glue of
/// [`Header`] is an out-of-line call on every hop otherwise).
#[inline(always)]
fn drop_header(h: Header) {
    match h {
        h @ (Header::Irregular(_) | Header::Path(_)) => drop(h),
        h => std::mem::forget(h),
    }
}

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
                OutputPort {
                    link_free: 0,
                    resv: mcast::fabric::Timeline::default(),
                    credits: vec![p.buf; p.vcs as usize],
                    waiters: Vec::new(),
                    host: matches!(link, Link::Host(_)),
                    armed_at: Time::MAX,
                    pending: Vec::new(),
                    next_vc: 0,
                }
            })
            .collect();
        let v = p.vcs;
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
        let v = self.p.vcs;
        let c = u16::from(c).min(self.classes - 1);
        (c * v / self.classes, (c + 1) * v / self.classes)
    }

    /// A head arrived on input `port`, VC `vc`, at `now`.
    pub fn packet_in(&mut self, now: Time, port: u16, vc: u16, packet: Packet) {
        self.packet_in_at(now, now, port, vc, packet);
    }

    /// A head that arrived at `arrived` (≤ `now`) is handed over at `now`.
    /// A driver that delivers heads `t_r` after their arrival saves the
    /// engine a routing timer; the timing is the same as
    /// [`SwitchEngine::packet_in`] at `arrived`.
    pub fn packet_in_at(&mut self, now: Time, arrived: Time, port: u16, vc: u16, packet: Packet) {
        let idx = port as usize * self.p.vcs as usize + vc as usize;
        let Some(input) = self.inputs.get_mut(idx) else {
            self.actions.push_back(SwAction::Drop {
                packet,
                error: RouteError::BadPort(port as usize),
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

    fn route(&mut self, idx: usize, now: Time) {
        let input = &mut self.inputs[idx];
        let in_port = input.port as usize;
        if input.routed {
            return;
        }
        let Some(front) = input.queue.front() else {
            return;
        };
        if let Header::Unicast { dest } = front.packet.header {
            let fast = if self.uni_ask {
                self.routing.unicast_fast(self.id, dest as usize)
            } else {
                match self.uni.get(dest as usize) {
                    Some(&e) if e != UNI_NONE => Some((e & 0xff, (e >> 8) as u8)),
                    _ => None,
                }
            };
            if let Some((port, class)) = fast {
                if (port as usize) < self.outputs.len() {
                    input.routed = true;
                    input.pending = 1;
                    input.tail_free = now;
                    input.ready = now;
                    input.branches.clear();
                    input.branches.push(BranchState {
                        out: Out {
                            port,
                            class,
                            header: Header::Unicast { dest },
                        },
                        granted: false,
                    });
                    let port = port as usize;
                    // Nobody else waits and the link is free: go now if a
                    // VC has credits (what try_output would pick).
                    let o = &self.outputs[port];
                    if o.waiters.is_empty() && (o.link_free <= now || self.backfill) {
                        self.absorb(port, now);
                        if let Some(vc) = self.free_vc(port, class) {
                            self.grant(port, idx, 0, vc, now);
                            return;
                        }
                    }
                    self.outputs[port].waiters.push((idx as u32, 0, class));
                    self.try_output(port, now);
                    return;
                }
            }
        }
        self.scratch.clear();
        let r = self
            .routing
            .route(self.id, in_port, &front.packet.header, &mut self.scratch);
        let r = r.and({
            if self.scratch.is_empty() {
                Err(RouteError::NoOutput)
            } else {
                Ok(())
            }
        });
        if let Err(error) = r {
            let slot = input.queue.pop_front().expect("front exists");
            self.actions.push_back(SwAction::Drop {
                packet: slot.packet,
                error,
            });
            self.actions.push_back(SwAction::Credit {
                port: in_port as u16,
                vc: input.vc,
                flits: self.p.flits,
                at: now,
            });
            input.busy_until = now;
            self.arm_route(idx, now);
            return;
        }
        input.routed = true;
        input.pending = self.scratch.len() as u16;
        input.tail_free = now;
        input.ready = now;
        input.branches.clear();
        input
            .branches
            .extend(self.scratch.drain(..).map(|out| BranchState {
                out,
                granted: false,
            }));
        let count = input.branches.len();
        for b in 0..count {
            let out = &self.inputs[idx].branches[b].out;
            let (port, class) = (out.port as usize, out.class);
            match self.outputs.get_mut(port) {
                Some(o) => o.waiters.push((idx as u32, b as u16, class)),
                None => {
                    // Cannot happen with a well-formed routing function;
                    // treat the branch as sent to nowhere.
                    self.grant_none(idx, b as u16, now);
                }
            }
        }
        for b in 0..count {
            let input = &self.inputs[idx];
            if input.queue.is_empty() || input.branches.len() <= b {
                break;
            }
            let port = input.branches[b].out.port as usize;
            if port < self.outputs.len() {
                self.try_output(port, now);
            }
        }
    }

    fn grant_none(&mut self, idx: usize, b: u16, now: Time) {
        let input = &mut self.inputs[idx];
        input.branches[b as usize].granted = true;
        input.pending -= 1;
        if input.pending == 0 {
            self.finish(idx, now);
        }
    }

    /// The front packet of input `idx` has sent its last branch: free it.
    fn finish(&mut self, idx: usize, now: Time) {
        let input = &mut self.inputs[idx];
        let slot = input.queue.pop_front().expect("front exists");
        drop_header(slot.packet.header);
        while let Some(b) = input.branches.pop() {
            drop_header(b.out.header);
        }
        input.routed = false;
        input.busy_until = input.tail_free;
        self.actions.push_back(SwAction::Credit {
            port: input.port,
            vc: input.vc,
            flits: self.p.flits,
            at: input.tail_free,
        });
        if !self.inputs[idx].queue.is_empty() {
            self.arm_route(idx, now);
        }
    }

    /// A VC of class `class` at output `port` with credits for a packet
    /// (round robin from the port's `next_vc` within the class); VC 0 on a
    /// host port.
    #[inline(always)]
    fn free_vc(&self, port: usize, class: u8) -> Option<u16> {
        let o = &self.outputs[port];
        if o.host {
            return Some(0);
        }
        let flits = self.p.flits;
        let (lo, hi) = self.class_range(class);
        let credits = o.credits.get(lo as usize..hi as usize)?;
        let span = credits.len();
        if span == 0 {
            return None;
        }
        // VCs lo + (start + i) % span for i in 0..span.
        let start = if span.is_power_of_two() {
            o.next_vc as usize & (span - 1)
        } else {
            o.next_vc as usize % span
        };
        let (before, after) = credits.split_at(start);
        if let Some(k) = after.iter().position(|&c| c >= flits) {
            return Some(lo + (start + k) as u16);
        }
        before
            .iter()
            .position(|&c| c >= flits)
            .map(|k| lo + k as u16)
    }

    /// The first waiter at output `port` with a free VC of its class, and
    /// that VC.
    #[inline]
    fn pick(&self, port: usize) -> Option<(usize, u16)> {
        let o = &self.outputs[port];
        if o.host {
            return (!o.waiters.is_empty()).then_some((0, 0));
        }
        // Classes already found without a free VC in this scan (the
        // credits do not change during it).
        let mut full: u64 = 0;
        for (w, &(_, _, class)) in o.waiters.iter().enumerate() {
            let bit = 1u64.checked_shl(u32::from(class)).unwrap_or(0);
            if full & bit != 0 {
                continue;
            }
            if let Some(vc) = self.free_vc(port, class) {
                return Some((w, vc));
            }
            let (lo, hi) = self.class_range(class);
            if hi > lo {
                full |= bit;
            }
        }
        None
    }

    /// Branch `b` of input `idx`'s front packet leaves on output `port`,
    /// VC `vc`, now.
    #[inline]
    fn grant(&mut self, port: usize, idx: usize, b: usize, vc: u16, now: Time) {
        let ser = self.p.ser;
        // Backfilling: the first gap at or after the packet's routing.
        let now = if self.backfill {
            let ready = self.inputs[idx].ready;
            self.outputs[port].resv.fit(ready, ser)
        } else {
            now
        };
        let o = &mut self.outputs[port];
        let host = o.host;
        o.link_free = o.link_free.max(now + ser);
        if self.backfill {
            o.resv.reserve(now, now + ser);
        }
        o.next_vc = o.next_vc.wrapping_add(1);
        if !host {
            o.credits[vc as usize] -= self.p.flits;
        }
        let input = &mut self.inputs[idx];
        let br = &mut input.branches[b];
        br.granted = true;
        let header = std::mem::replace(&mut br.out.header, Header::Consumed);
        let packet = Packet {
            id: input.queue.front().expect("routed front").packet.id,
            header,
        };
        input.pending -= 1;
        input.tail_free = input.tail_free.max(now + ser);
        let done = input.pending == 0;
        self.actions.push_back(if host {
            SwAction::Deliver {
                port: port as u16,
                at: now,
                packet,
            }
        } else {
            SwAction::Send {
                port: port as u16,
                vc,
                at: now,
                packet,
            }
        });
        if done {
            self.finish(idx, now);
        }
    }

    fn try_output(&mut self, port: usize, now: Time) {
        loop {
            let o = &mut self.outputs[port];
            if o.waiters.is_empty() {
                return;
            }
            // Backfilling grants each branch in the first gap at or after
            // its packet's routing (see `set_backfill`): no waiting here.
            if o.link_free > now && !self.backfill {
                let at = o.link_free;
                self.arm(port, at, now);
                return;
            }
            self.absorb(port, now);
            let Some((w, vc)) = self.pick(port) else {
                // Wait for the earliest announced credit, if any.
                if let Some(t) = self.outputs[port].pending.iter().map(|p| p.0).min() {
                    self.arm(port, t, now);
                }
                return;
            };
            let waiters = &mut self.outputs[port].waiters;
            let (idx, b, _) = if w + 1 == waiters.len() {
                waiters.pop().expect("picked waiter")
            } else {
                waiters.remove(w)
            };
            self.grant(port, idx as usize, b as usize, vc, now);
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

    /// Packets buffered in this switch.
    pub fn buffered(&self) -> usize {
        self.inputs.iter().map(|i| i.queue.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One switch, 4 ports to 4 hosts... except port 1 and 2 lead to other
    /// switches, so they need credits; a packet for "dest 99" is replicated
    /// to ports 1 and 2.
    struct Fork;
    impl Routing for Fork {
        fn switches(&self) -> usize {
            3
        }
        fn ports(&self) -> usize {
            4
        }
        fn nodes(&self) -> usize {
            2
        }
        fn vc_classes(&self) -> usize {
            1
        }
        fn link(&self, switch: usize, port: usize) -> Link {
            match (switch, port) {
                (0, 0) => Link::Host(0),
                (0, 3) => Link::Host(1),
                (0, p) => Link::Switch { switch: p, port: 0 },
                _ => Link::Open,
            }
        }
        fn attach(&self, node: usize) -> (usize, usize) {
            (0, if node == 0 { 0 } else { 3 })
        }
        fn route(
            &self,
            _switch: usize,
            _in_port: usize,
            header: &Header,
            out: &mut Vec<Out>,
        ) -> Result<(), RouteError> {
            for port in [1, 2] {
                out.push(Out {
                    port,
                    class: 0,
                    header: header.clone(),
                });
            }
            Ok(())
        }
        fn switch_hops(&self, _: usize, _: usize) -> Option<usize> {
            None
        }
    }

    fn params() -> SwitchParams {
        SwitchParams {
            t_r: 2,
            ser: 4,
            flits: 4,
            buf: 4,
            vcs: 1,
        }
    }

    fn pkt(id: u64) -> Packet {
        Packet {
            id,
            header: Header::Unicast { dest: 99 },
        }
    }

    fn drain(e: &mut SwitchEngine) -> Vec<SwAction> {
        std::iter::from_fn(|| e.poll_action()).collect()
    }

    /// Asynchronous replication: with no credits on port 2, the copy on
    /// port 1 still leaves on time; the blocked branch leaves when credits
    /// return, and only then is the input buffer freed (credit upstream).
    #[test]
    fn blocked_branch_does_not_stall_the_other() {
        let mut e = SwitchEngine::new(0, Arc::new(Fork), params());
        // Fill port 2's downstream VC with a first packet.
        e.packet_in(0, 0, 0, pkt(1));
        let a = drain(&mut e);
        assert!(matches!(a[..], [SwAction::Timer { at: 2, .. }]), "{a:?}");
        let SwAction::Timer { token, .. } = a[0] else {
            unreachable!()
        };
        e.timer(2, token);
        let a = drain(&mut e);
        let sends: Vec<_> = a
            .iter()
            .filter_map(|x| match x {
                SwAction::Send { port, at, .. } => Some((*port, *at)),
                _ => None,
            })
            .collect();
        assert_eq!(sends, vec![(1, 2), (2, 2)]);
        // Both downstream VCs are now full (buf = one packet). Return the
        // credit of port 1 only; packet 2 arrives.
        e.credit_in(7, 1, 0, 4);
        e.packet_in_at(8, 6, 0, 0, pkt(2));
        let a = drain(&mut e);
        let sends: Vec<_> = a
            .iter()
            .filter_map(|x| match x {
                SwAction::Send {
                    port, at, packet, ..
                } => Some((*port, *at, packet.id)),
                _ => None,
            })
            .collect();
        assert_eq!(sends, vec![(1, 8, 2)], "{a:?}");
        assert!(!a
            .iter()
            .any(|x| matches!(x, SwAction::Credit { at, .. } if *at > 6)));
        assert_eq!(e.blocked().len(), 1);
        assert_eq!(e.blocked()[0].out_port, 2);
        // Port 2's credit comes back at 20: the branch leaves, the buffer
        // frees at 20 + ser.
        e.credit_in(20, 2, 0, 4);
        let a = drain(&mut e);
        assert!(a.contains(&SwAction::Send {
            port: 2,
            vc: 0,
            at: 20,
            packet: pkt(2)
        }));
        assert!(a.contains(&SwAction::Credit {
            port: 0,
            vc: 0,
            flits: 4,
            at: 24
        }));
        assert!(e.blocked().is_empty());
        assert_eq!(e.buffered(), 0);
    }

    /// Credits announced ahead of time take effect at their time, through a
    /// timer the engine arms only because a packet waits.
    #[test]
    fn announced_credits_wake_waiting_packets() {
        let mut e = SwitchEngine::new(0, Arc::new(Fork), params());
        e.packet_in_at(2, 0, 0, 0, pkt(1));
        drain(&mut e);
        e.packet_in_at(10, 8, 0, 0, pkt(2));
        assert!(drain(&mut e)
            .iter()
            .all(|x| !matches!(x, SwAction::Send { .. })));
        e.credit_in_at(10, 15, 1, 0, 4);
        e.credit_in_at(10, 17, 2, 0, 4);
        let a = drain(&mut e);
        let timers: Vec<_> = a
            .iter()
            .filter_map(|x| match x {
                SwAction::Timer { at, token } => Some((*at, *token)),
                _ => None,
            })
            .collect();
        assert_eq!(timers.iter().map(|t| t.0).collect::<Vec<_>>(), vec![15, 17]);
        e.timer(15, timers[0].1);
        let a = drain(&mut e);
        assert!(a.iter().any(|x| matches!(
            x,
            SwAction::Send {
                port: 1,
                at: 15,
                ..
            }
        )));
        e.timer(17, timers[1].1);
        let a = drain(&mut e);
        assert!(a.iter().any(|x| matches!(
            x,
            SwAction::Send {
                port: 2,
                at: 17,
                ..
            }
        )));
    }
}
