//! The discrete-event simulator: every switch engine of a fabric
//! ([`crate::switch::SwitchEngine`]) and the hosts' injection ports, in
//! virtual cycles, in one process, with no sockets.
//!
//! [`Net`] is the network half: inject a packet at a host at a time, and
//! [`Net::step`] runs events until something happens that the caller models
//! (a packet's tail reached a host, or a caller event fell due). The NI and
//! traffic models live in [`run`] (single multicasts driving the real
//! [`mcast::engine::NiEngine`]) and [`load`] (load sweeps); both report
//! their [`progress`] to a callback, if given one.
//!
//! # Timing
//! A host's NI injects one packet at a time over its injection link (held
//! `ser = ceil(L/b)` cycles per packet, credit flow control into the
//! switch's host input port; no propagation delay). A switch routes a head
//! in `t_r` cycles; every link out of a switch, the ejection link
//! included, adds `t_w` to the head. So a unicast through H switches at
//! zero load has its tail at the destination host H·(t_r + t_w) + L/b
//! cycles after injection (H = the route's links between switches + 1).
//! Under wormhole switching (`switching = wormhole`, any `vc_buf_flits`)
//! the zero-load latency is the same; the worm tracker (`sim::worms`) follows
//! every worm hop by hop, computes when each tail leaves each switch (the
//! rule of [`crate::switch`]'s module doc), frees the input buffers then,
//! and hands a host its copy when the tail arrives.
//!
//! Events at the same cycle run in the order they were scheduled, so a run
//! is a pure function of its inputs (and the seed).
//!
//! # Watchdog
//! If no packet moves for `watchdog_cycles` while packets are buffered in
//! switches, or the event queue empties with packets still buffered,
//! [`Net::step`] returns [`SimulatorError::Deadlock`] naming the blocked
//! channels (the heads waiting for an output) and, under wormhole, the
//! channels held behind stalled heads.

pub mod load;
mod nic;
pub mod progress;
mod queue;
pub mod run;
pub mod spec;
mod worms;

use std::collections::VecDeque;
use std::sync::Arc;

use crate::cost::{CostError, FabricCostModel};
use crate::switch::{
    Blocked, PortLink, Routing, SwAction, SwitchEngine, SwitchHeader, SwitchPacket, SwitchParams,
    Time,
};

/// Why a simulation stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimulatorError {
    /// Bad input (fabric, algorithm, destinations, cost).
    #[error("{0}")]
    Input(String),
    /// A cost-model error.
    #[error("cost model: {0}")]
    Cost(#[from] CostError),
    /// The watchdog fired.
    #[error("deadlock at cycle {at}: no packet moved since cycle {since}; {} blocked channels, first: {}{}", blocked.len(), show_blocked(blocked), show_held(held))]
    Deadlock {
        /// When it was detected.
        at: Time,
        /// The last movement.
        since: Time,
        /// The blocked channels (heads waiting for an output).
        blocked: Vec<Blocked>,
        /// Wormhole: the channels held behind stalled heads (every branch
        /// sent on `out_port`, the tail not yet gone); empty under VCT.
        held: Vec<Blocked>,
    },
    /// An engine or oracle reported an inconsistency.
    #[error("internal: {0}")]
    Internal(String),
}

fn show_held(b: &[Blocked]) -> String {
    if b.is_empty() {
        return String::new();
    }
    format!(
        "; {} channels held by stalled worms, first: {}",
        b.len(),
        show_blocked(b)
    )
}

fn show_blocked(b: &[Blocked]) -> String {
    b.iter()
        .take(8)
        .map(|b| {
            format!(
                "switch {} in {}/vc{} -> out {} (class {})",
                b.switch, b.in_port, b.in_vc, b.out_port, b.class
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[derive(Debug)]
enum Ev<U> {
    /// Delivered to the switch `t_r` after the head arrived (the event's
    /// time minus `t_r`; these events are never scheduled in the past).
    Head {
        sw: u32,
        port: u16,
        vc: u16,
        packet: SwitchPacket,
    },
    Credit {
        sw: u32,
        port: u16,
        vc: u16,
        flits: u32,
    },
    Timer {
        sw: u32,
        token: u32,
    },
    /// Wormhole: the tail of the front packet of an input has left.
    Tail {
        sw: u32,
        port: u16,
        vc: u16,
        at: Time,
    },
    NiCredit {
        node: u32,
        vc: u16,
        flits: u32,
    },
    NiTry {
        node: u32,
    },
    NiEnqueue {
        node: u32,
        packet: SwitchPacket,
    },
    Arrive {
        node: u32,
        packet: SwitchPacket,
    },
    User(U),
}

struct NiPort {
    /// The switch and input port the host injects into.
    sw: u32,
    port: u16,
    queue: VecDeque<SwitchPacket>,
    /// When each injection channel is free (one per `inject_ports`).
    lanes: Vec<Time>,
    credits: Vec<u32>,
    /// Credits announced ahead of their arrival: (time, vc, flits).
    pending: Vec<(Time, u16, u32)>,
    /// The earliest NiTry armed and not yet fired (Time::MAX: none).
    armed_at: Time,
    next_vc: u16,
}

/// What [`Net::step`] hands back to its caller.
#[derive(Debug)]
pub enum Happening<U> {
    /// The tail of `packet` reached host `node` at `at`.
    Arrived {
        /// The host.
        node: usize,
        /// The copy.
        packet: SwitchPacket,
        /// Tail arrival.
        at: Time,
    },
    /// A caller event fell due.
    User(U, Time),
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetStats {
    /// Packets injected by hosts.
    pub injected: u64,
    /// Packet-hops: copies sent on a switch output (links and ejection).
    pub hops: u64,
    /// Copies delivered to hosts.
    pub delivered: u64,
    /// Packets dropped by a switch (unroutable header).
    pub dropped: u64,
    /// Events processed.
    pub events: u64,
}

/// The network of one simulation.
pub struct Net<U> {
    routing: Arc<dyn Routing>,
    params: SwitchParams,
    t_w: Time,
    credit_delay: Time,
    watchdog: Time,
    switches: Vec<SwitchEngine>,
    nis: Vec<NiPort>,
    /// Ports per switch (the stride of `links` and `ups`).
    ports: usize,
    /// Per switch, per port (`switch * ports + port`): where the link
    /// leads (cached).
    links: Vec<PortLink>,
    /// Per switch, per input port (`switch * ports + port`): who sends
    /// into it (credits go there).
    ups: Vec<PortLink>,
    queue: queue::EventQueue<Ev<U>>,
    now: Time,
    last_progress: Time,
    /// Counters.
    pub stats: NetStats,
    /// Last drop reason, if any.
    pub last_drop: Option<String>,
    /// Wormhole: the worms' tails.
    worms: Option<worms::Tracker>,
}

impl<U> Net<U> {
    /// A network over `routing` with `cost`.
    ///
    /// # Errors
    /// An inconsistent cost model, or fewer VCs than the fabric's classes.
    pub fn new(
        routing: Arc<dyn Routing>,
        cost: &FabricCostModel,
    ) -> Result<Net<U>, SimulatorError> {
        cost.validate()?;
        let params = SwitchParams::from_cost_any(cost, routing.vc_classes())
            .map_err(SimulatorError::Input)?;
        let lanes = usize::try_from(cost.inject_ports)
            .ok()
            .filter(|&k| k >= 1 && k <= usize::from(params.vcs))
            .ok_or_else(|| {
                SimulatorError::Input(format!(
                    "inject_ports = {} needs 1 <= inject_ports <= the VCs per link ({}): \
                     each concurrent injection takes its own VC (set num_vcs)",
                    cost.inject_ports, params.vcs
                ))
            })?;
        let n_sw = routing.switches();
        let ports = routing.ports();
        let switches = (0..n_sw)
            .map(|s| SwitchEngine::new(s, routing.clone(), params))
            .collect();
        let (links, ups) = crate::switch::link_tables(routing.as_ref());
        let nis = (0..routing.nodes())
            .map(|node| {
                let (sw, port) = routing.attach(node);
                (sw as u32, port as u16)
            })
            .map(|(sw, port)| NiPort {
                sw,
                port,
                queue: VecDeque::new(),
                lanes: vec![0; lanes],
                credits: vec![params.buf; params.vcs as usize],
                pending: Vec::new(),
                armed_at: Time::MAX,
                next_vc: 0,
            })
            .collect();
        Ok(Net {
            routing,
            params,
            t_w: cost.link_delay,
            credit_delay: cost.credit_delay,
            watchdog: cost.watchdog_cycles,
            switches,
            nis,
            ports,
            links,
            ups,
            queue: queue::EventQueue::new(),
            now: 0,
            last_progress: 0,
            stats: NetStats::default(),
            last_drop: None,
            worms: params
                .wormhole
                .then(|| worms::Tracker::new(n_sw, ports, params, cost.link_bandwidth)),
        })
    }

    /// The routing function.
    pub fn routing(&self) -> &Arc<dyn Routing> {
        &self.routing
    }

    /// The engines' parameters.
    pub fn params(&self) -> SwitchParams {
        self.params
    }

    /// Current virtual time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Number of hosts.
    pub fn nodes(&self) -> usize {
        self.nis.len()
    }

    fn push(&mut self, at: Time, ev: Ev<U>) {
        self.queue.push(at, ev);
    }

    /// Schedule a caller event.
    pub fn schedule(&mut self, at: Time, u: U) {
        self.push(at.max(self.now), Ev::User(u));
    }

    /// Host `node` hands `packet` to its injection queue at `at` (≥ now).
    pub fn inject(&mut self, node: usize, at: Time, packet: SwitchPacket) {
        let at = at.max(self.now);
        if at == self.now {
            self.enqueue(node, packet);
        } else {
            self.push(
                at,
                Ev::NiEnqueue {
                    node: node as u32,
                    packet,
                },
            );
        }
    }

    fn enqueue(&mut self, node: usize, packet: SwitchPacket) {
        self.stats.injected += 1;
        let ni = &mut self.nis[node];
        ni.queue.push_back(packet);
        if ni.queue.len() == 1 {
            self.ni_try(node);
        }
    }

    /// Packets waiting in host `node`'s injection queue.
    pub fn queued(&self, node: usize) -> usize {
        self.nis[node].queue.len()
    }

    fn drain(&mut self, sw: usize) {
        while let Some(a) = self.switches[sw].poll_action() {
            match a {
                SwAction::Send {
                    port,
                    vc,
                    at,
                    packet,
                } => {
                    self.stats.hops += 1;
                    self.last_progress = self.now;
                    let link = self.links[sw * self.ports + port as usize];
                    if self.worms.is_some() {
                        self.worm_out(sw, at, link, vc, None);
                    }
                    if let PortLink::Switch { switch, port: p } = link {
                        self.push(
                            at + self.t_w + self.params.t_r,
                            Ev::Head {
                                sw: switch as u32,
                                port: p as u16,
                                vc,
                                packet,
                            },
                        );
                    } else {
                        self.stats.dropped += 1;
                        self.last_drop = Some(format!("switch {sw} sent on open port {port}"));
                    }
                }
                SwAction::Deliver { port, at, packet } => {
                    self.stats.hops += 1;
                    self.last_progress = self.now;
                    let link = self.links[sw * self.ports + port as usize];
                    if self.worms.is_some() {
                        // The tracker schedules the arrival at the tail.
                        self.worm_out(sw, at, link, 0, Some(packet));
                        continue;
                    }
                    if let PortLink::Host(node) = link {
                        self.push(
                            at + self.t_w + self.params.ser,
                            Ev::Arrive {
                                node: node as u32,
                                packet,
                            },
                        );
                    }
                }
                SwAction::Credit {
                    port,
                    vc,
                    flits,
                    at,
                } => match self.ups[sw * self.ports + port as usize] {
                    // Announced now, effective at its arrival upstream: the
                    // upstream engine arms a timer only if a packet waits.
                    PortLink::Switch { switch, port: p }
                        if switch != sw && at + self.credit_delay > self.now =>
                    {
                        self.switches[switch].credit_in_at(
                            self.now,
                            at + self.credit_delay,
                            p as u16,
                            vc,
                            flits,
                        );
                        if self.switches[switch].has_actions() {
                            self.drain(switch);
                        }
                    }
                    PortLink::Switch { switch, port: p } => self.push(
                        at + self.credit_delay,
                        Ev::Credit {
                            sw: switch as u32,
                            port: p as u16,
                            vc,
                            flits,
                        },
                    ),
                    // Announced to the host's NI now, usable at its arrival.
                    PortLink::Host(node) if at + self.credit_delay > self.now => {
                        let t = at + self.credit_delay;
                        let ni = &mut self.nis[node];
                        if (vc as usize) < ni.credits.len() {
                            ni.pending.push((t, vc, flits));
                            if !ni.queue.is_empty() {
                                self.ni_arm(node, t);
                            }
                        }
                    }
                    PortLink::Host(node) => self.push(
                        at + self.credit_delay,
                        Ev::NiCredit {
                            node: node as u32,
                            vc,
                            flits,
                        },
                    ),
                    PortLink::Open => {}
                },
                SwAction::Timer { at, token } => self.push(
                    at,
                    Ev::Timer {
                        sw: sw as u32,
                        token,
                    },
                ),
                SwAction::Drop { packet, error } => {
                    if self.worms.is_some() {
                        self.worm_out(sw, self.now, PortLink::Open, 0, None);
                    }
                    self.stats.dropped += 1;
                    self.last_drop =
                        Some(format!("switch {sw} dropped packet {}: {error}", packet.id));
                }
            }
        }
    }

    /// Packets buffered in switches.
    pub fn buffered(&self) -> usize {
        self.switches.iter().map(SwitchEngine::buffered).sum()
    }

    fn deadlock(&self) -> SimulatorError {
        SimulatorError::Deadlock {
            at: self.now,
            since: self.last_progress,
            blocked: self
                .switches
                .iter()
                .flat_map(SwitchEngine::blocked)
                .collect(),
            held: self.switches.iter().flat_map(SwitchEngine::held).collect(),
        }
    }

    /// Run until the next [`Happening`]; `Ok(None)` when no event is left.
    ///
    /// # Errors
    /// [`SimulatorError::Deadlock`] from the watchdog.
    pub fn step(&mut self) -> Result<Option<Happening<U>>, SimulatorError> {
        loop {
            if self.worms.is_some() {
                self.flush_worms();
            }
            let Some((at, ev)) = self.queue.pop() else {
                if self.buffered() > 0 {
                    return Err(self.deadlock());
                }
                return Ok(None);
            };
            self.now = at;
            self.stats.events += 1;
            if at > self.last_progress + self.watchdog && self.buffered() > 0 {
                return Err(self.deadlock());
            }
            match ev {
                Ev::Head {
                    sw,
                    port,
                    vc,
                    packet,
                } => {
                    let arrived = at - self.params.t_r;
                    self.switches[sw as usize].packet_in_at(at, arrived, port, vc, packet);
                    self.drain(sw as usize);
                }
                Ev::Credit {
                    sw,
                    port,
                    vc,
                    flits,
                } => {
                    self.switches[sw as usize].credit_in(at, port, vc, flits);
                    self.drain(sw as usize);
                }
                Ev::Timer { sw, token } => {
                    self.switches[sw as usize].timer(at, token);
                    self.drain(sw as usize);
                }
                Ev::Tail { sw, port, vc, at } => {
                    self.switches[sw as usize].input_tail(self.now, port, vc, at);
                    self.drain(sw as usize);
                }
                Ev::NiCredit { node, vc, flits } => {
                    let ni = &mut self.nis[node as usize];
                    if let Some(c) = ni.credits.get_mut(vc as usize) {
                        *c = (*c + flits).min(self.params.buf);
                    }
                    self.ni_try(node as usize);
                }
                Ev::NiTry { node } => {
                    let ni = &mut self.nis[node as usize];
                    if ni.armed_at <= at {
                        ni.armed_at = Time::MAX;
                    }
                    self.ni_try(node as usize);
                }
                Ev::NiEnqueue { node, packet } => self.enqueue(node as usize, packet),
                Ev::Arrive { node, packet } => {
                    self.stats.delivered += 1;
                    return Ok(Some(Happening::Arrived {
                        node: node as usize,
                        packet,
                        at,
                    }));
                }
                Ev::User(u) => return Ok(Some(Happening::User(u, at))),
            }
        }
    }
}

/// A unicast header.
pub fn unicast(dest: usize) -> SwitchHeader {
    SwitchHeader::Unicast { dest: dest as u32 }
}

#[cfg(test)]
mod tests;
