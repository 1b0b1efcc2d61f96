//! One emulated switch: a task driving a [`SwitchEngine`], and the reader
//! tasks of its links.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::rc::Rc;

use bytes::{BufMut, BytesMut};
use mcast::fabric::{packet_prefix, Frame};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::route::{decode_private, encode_private};
use super::{Counters, Ctx, HostEv, Payload, SharedRc, SwEv};
use crate::switch::{PortLink, SwAction, SwitchEngine, SwitchHeader, SwitchPacket, Time};

/// Read frames from one end of a switch-to-switch link into the switch's
/// inbox: packets on input `port` (`packets`), or credits for output
/// `port`.
pub(super) async fn read_link(
    ctx: Rc<Ctx>,
    r: OwnedReadHalf,
    tx: UnboundedSender<SwEv>,
    sw: usize,
    port: u16,
    packets: bool,
) {
    let mut r = BufReader::with_capacity(64 * 1024, r);
    loop {
        let f = match Frame::read(&mut r).await {
            Ok(f) => f,
            Err(e) => {
                if e.kind() != std::io::ErrorKind::UnexpectedEof {
                    tracing::error!("fabric: switch {sw} port {port}: link read failed: {e}");
                }
                return;
            }
        };
        let ev = match (packets, f) {
            (
                true,
                Frame::Packet {
                    vc,
                    stamp,
                    post,
                    route_kind,
                    route,
                    data,
                },
            ) => {
                let (origin, header) = match decode_private(route_kind, &route, ctx.nodes) {
                    Ok(x) => x,
                    Err(e) => {
                        // The engine drops a consumed header and returns
                        // its credits.
                        tracing::error!("fabric: switch {sw} port {port}: bad header: {e}");
                        (u32::MAX, SwitchHeader::Consumed)
                    }
                };
                SwEv::SwitchPacket {
                    port,
                    vc,
                    arrived: stamp,
                    header,
                    payload: Payload { origin, post, data },
                }
            }
            (false, Frame::Credit { vc, flits, at }) => SwEv::Credit {
                port,
                vc,
                flits,
                at,
            },
            (_, f) => {
                tracing::error!("fabric: switch {sw} port {port}: unexpected frame {f:?}");
                continue;
            }
        };
        if tx.send(ev).is_err() {
            return;
        }
    }
}

/// A switch's state around its engine.
struct Sw {
    ctx: Rc<Ctx>,
    shared: SharedRc,
    id: usize,
    engine: SwitchEngine,
    /// Per input VC (`port * vcs + vc`): ids of the buffered packets.
    fifos: Vec<VecDeque<u64>>,
    /// Payloads by id.
    store: HashMap<u64, Payload>,
    next_id: u64,
    /// Timers: (time, sequence, token).
    timers: BinaryHeap<Reverse<(Time, u64, u32)>>,
    seq: u64,
    /// The latest virtual time the engine was called at.
    clock: Time,
    /// Frames to write, per output port (packets) and per input port
    /// (credits).
    out_buf: Vec<BytesMut>,
    in_buf: Vec<BytesMut>,
    host_tx: Vec<UnboundedSender<HostEv>>,
}

impl Sw {
    fn counters(&self) -> &Counters {
        &self.ctx.counters
    }

    fn event(&mut self, ev: SwEv) {
        let vcs = self.ctx.params.vcs;
        match ev {
            SwEv::SwitchPacket {
                port,
                vc,
                arrived,
                header,
                payload,
            } => {
                if usize::from(port) >= self.ctx.ports || vc >= vcs {
                    tracing::error!(
                        "fabric: switch {}: packet on port {port} vc {vc} out of range",
                        self.id
                    );
                    Counters::add(&self.counters().dropped_switch, 1);
                    self.shared.borrow_mut().left(payload.origin);
                    return;
                }
                let id = self.next_id;
                self.next_id += 1;
                self.store.insert(id, payload);
                self.fifos[usize::from(port) * usize::from(vcs) + usize::from(vc)].push_back(id);
                let now = arrived + self.ctx.params.t_r;
                self.clock = self.clock.max(now);
                self.engine
                    .packet_in_at(now, arrived, port, vc, SwitchPacket { id, header });
            }
            SwEv::Credit {
                port,
                vc,
                flits,
                at,
            } => {
                // Announced at the switch's clock, usable from `at`: never
                // earlier than anything this engine already did (a credit
                // that arrives late in wall time is applied now).
                self.engine.credit_in_at(self.clock, at, port, vc, flits);
            }
        }
        self.drain();
    }

    fn drain(&mut self) {
        let ctx = self.ctx.clone();
        let ports = ctx.ports;
        let vcs = usize::from(ctx.params.vcs);
        while let Some(a) = self.engine.poll_action() {
            match a {
                SwAction::Send {
                    port,
                    vc,
                    at,
                    packet,
                } => {
                    Counters::add(&ctx.counters.hops, 1);
                    let Some(p) = self.store.get(&packet.id) else {
                        tracing::error!("fabric: switch {}: no payload for {}", self.id, packet.id);
                        continue;
                    };
                    let link = ctx.links[self.id * ports + usize::from(port)];
                    let enc = encode_private(p.origin, &packet.header);
                    match (link, enc) {
                        (PortLink::Switch { .. }, Some((kind, route))) => {
                            let buf = &mut self.out_buf[usize::from(port)];
                            match packet_prefix(
                                buf,
                                vc,
                                at + ctx.t_w,
                                p.post,
                                kind,
                                &route,
                                p.data.len(),
                            ) {
                                Ok(()) => {
                                    buf.put_slice(&p.data);
                                    self.shared.borrow_mut().entered(p.origin);
                                }
                                Err(e) => {
                                    tracing::warn!("fabric: switch {}: {e}", self.id);
                                    Counters::add(&ctx.counters.dropped_switch, 1);
                                }
                            }
                        }
                        _ => {
                            tracing::warn!(
                                "fabric: switch {} sent on port {port}, which leads nowhere",
                                self.id
                            );
                            Counters::add(&ctx.counters.dropped_switch, 1);
                        }
                    }
                }
                SwAction::Deliver { port, at, packet } => {
                    Counters::add(&ctx.counters.hops, 1);
                    let Some(p) = self.store.get(&packet.id) else {
                        tracing::error!("fabric: switch {}: no payload for {}", self.id, packet.id);
                        continue;
                    };
                    match ctx.links[self.id * ports + usize::from(port)] {
                        PortLink::Host(node) if node < self.host_tx.len() => {
                            self.shared.borrow_mut().entered(p.origin);
                            let ev = HostEv::Deliver {
                                at: at + ctx.t_w + ctx.params.ser,
                                payload: p.clone(),
                            };
                            if self.host_tx[node].send(ev).is_err() {
                                self.shared.borrow_mut().left(p.origin);
                            }
                        }
                        _ => {
                            Counters::add(&ctx.counters.dropped_switch, 1);
                        }
                    }
                }
                SwAction::Credit {
                    port,
                    vc,
                    flits,
                    at,
                } => {
                    let idx = usize::from(port) * vcs + usize::from(vc);
                    if let Some(id) = self.fifos.get_mut(idx).and_then(VecDeque::pop_front) {
                        if let Some(p) = self.store.remove(&id) {
                            self.shared.borrow_mut().left(p.origin);
                        }
                    }
                    let at = at + ctx.credit_delay;
                    match ctx.ups[self.id * ports + usize::from(port)] {
                        PortLink::Switch { .. } => {
                            let _ = Frame::Credit { vc, flits, at }
                                .encode(&mut self.in_buf[usize::from(port)]);
                        }
                        PortLink::Host(node) => {
                            if let Some(tx) = self.host_tx.get(node) {
                                let _ = tx.send(HostEv::Credit { vc, flits, at });
                            }
                        }
                        PortLink::Open => {}
                    }
                }
                SwAction::Timer { at, token } => {
                    self.seq += 1;
                    self.timers.push(Reverse((at, self.seq, token)));
                }
                SwAction::Drop { packet, error } => {
                    Counters::add(&ctx.counters.dropped_switch, 1);
                    tracing::warn!(
                        "fabric: switch {} dropped packet {}: {error}",
                        self.id,
                        packet.id
                    );
                }
            }
        }
    }

    /// Run a batch of external events and every timer in virtual-time
    /// order until nothing is left (timers first on a tie).
    fn quiesce(&mut self, mut batch: Vec<SwEv>) {
        let t_r = self.ctx.params.t_r;
        let time = |e: &SwEv| match e {
            SwEv::SwitchPacket { arrived, .. } => arrived + t_r,
            SwEv::Credit { at, .. } => *at,
        };
        // Stable: equal times keep their wall order.
        batch.sort_by_key(time);
        let mut batch = batch.into_iter().peekable();
        loop {
            let next_ev = batch.peek().map(time);
            let next_timer = self.timers.peek().map(|r| r.0 .0);
            match (next_ev, next_timer) {
                (None, None) => return,
                (Some(e), Some(t)) if t <= e => self.fire(),
                (None, Some(_)) => self.fire(),
                _ => {
                    if let Some(ev) = batch.next() {
                        self.event(ev);
                    }
                }
            }
        }
    }

    fn fire(&mut self) {
        if let Some(Reverse((at, _, token))) = self.timers.pop() {
            self.clock = self.clock.max(at);
            self.engine.timer(at, token);
            self.drain();
        }
    }
}

async fn flush(bufs: &mut [BytesMut], w: &mut [Option<OwnedWriteHalf>], sw: usize) {
    for (p, buf) in bufs.iter_mut().enumerate() {
        if buf.is_empty() {
            continue;
        }
        let b = buf.split();
        if let Some(Some(w)) = w.get_mut(p) {
            if let Err(e) = w.write_all(&b).await {
                tracing::error!("fabric: switch {sw} port {p}: link write failed: {e}");
            }
        }
    }
}

/// The switch task.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run_switch(
    ctx: Rc<Ctx>,
    shared: SharedRc,
    id: usize,
    mut rx: UnboundedReceiver<SwEv>,
    mut out_w: Vec<Option<OwnedWriteHalf>>,
    mut in_w: Vec<Option<OwnedWriteHalf>>,
    host_tx: Vec<UnboundedSender<HostEv>>,
) {
    let ports = ctx.ports;
    let vcs = usize::from(ctx.params.vcs);
    let mut engine = SwitchEngine::new(id, ctx.routing.clone(), ctx.params);
    // Events come in wall-clock order: let a packet that is earlier in
    // virtual time use a link before a later one's reservation.
    engine.set_backfill(true);
    let mut sw = Sw {
        engine,
        ctx,
        shared,
        id,
        fifos: (0..ports * vcs).map(|_| VecDeque::new()).collect(),
        store: HashMap::new(),
        next_id: 0,
        timers: BinaryHeap::new(),
        seq: 0,
        clock: 0,
        out_buf: (0..ports).map(|_| BytesMut::new()).collect(),
        in_buf: (0..ports).map(|_| BytesMut::new()).collect(),
        host_tx,
    };
    let mut batch = Vec::new();
    while let Some(ev) = rx.recv().await {
        batch.push(ev);
        while batch.len() < 4096 {
            match rx.try_recv() {
                Ok(ev) => batch.push(ev),
                Err(_) => break,
            }
        }
        sw.quiesce(std::mem::take(&mut batch));
        flush(&mut sw.out_buf, &mut out_w, id).await;
        flush(&mut sw.in_buf, &mut in_w, id).await;
    }
}
