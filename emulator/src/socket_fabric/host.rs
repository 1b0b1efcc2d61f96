//! Host ports: the NI model of each host (injection link, send and receive
//! overheads) and the rank connections.

use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use mcast::fabric::{Frame, Goodbye, FABRIC_VERSION};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::route::decode_rank_route;
use super::{Counters, Ctx, HostEv, Payload, RankEv, SharedRc, SwEv, MAX_QUEUED};
use crate::switch::{SwitchHeader, Time};

struct Queued {
    ready: Time,
    header: SwitchHeader,
    payload: Payload,
}

/// One host's NI.
struct Ni {
    ctx: Rc<Ctx>,
    shared: SharedRc,
    node: usize,
    queue: VecDeque<Queued>,
    link_free: Time,
    credits: Vec<u32>,
    /// Credits announced for later: (time, vc, flits).
    pending: Vec<(Time, u16, u32)>,
    next_vc: u16,
    sw_tx: Vec<mpsc::UnboundedSender<SwEv>>,
}

impl Ni {
    fn set_queued(&self) {
        if let Some(h) = self.shared.borrow_mut().hosts.get_mut(self.node) {
            h.queued = self.queue.len();
        }
    }

    fn rank_event(&mut self, ev: RankEv) {
        match ev {
            RankEv::SwitchPacket {
                stamp,
                post,
                kind,
                route,
                data,
            } => {
                let header = match decode_rank_route(kind, &route, self.ctx.kind, self.ctx.nodes) {
                    Ok(h) => h,
                    Err(e) => {
                        tracing::warn!("fabric: rank {} sent an unusable route: {e}", self.node);
                        Counters::add(&self.ctx.counters.dropped_route, 1);
                        return;
                    }
                };
                // The rank paid the NI's t_ns (see the module docs).
                self.queue.push_back(Queued {
                    ready: stamp,
                    header,
                    payload: Payload {
                        origin: self.node as u32,
                        post,
                        data,
                    },
                });
                self.try_inject();
            }
            RankEv::Bye(goodbye) => {
                let mut s = self.shared.borrow_mut();
                if let Some(h) = s.hosts.get_mut(self.node) {
                    h.bye_pending = Some(goodbye);
                }
                s.try_bye(self.node);
            }
        }
    }

    fn fabric_event(&mut self, ev: HostEv) {
        match ev {
            HostEv::Credit { vc, flits, at } => {
                if usize::from(vc) < self.credits.len() {
                    self.pending.push((at, vc, flits));
                }
                self.try_inject();
            }
            HostEv::Deliver { at, payload } => {
                // The arrival at the NI; the rank adds t_nr.
                let ready = at;
                let c = &self.ctx.counters;
                let mut s = self.shared.borrow_mut();
                let writer = s.hosts.get(self.node).and_then(|h| h.writer.clone());
                let len = payload.data.len();
                let frame = Frame::Packet {
                    vc: 0,
                    stamp: ready,
                    post: payload.post,
                    route_kind: mcast::fabric::route_kind::UNICAST,
                    route: Bytes::new(),
                    data: payload.data,
                };
                let sent = match (writer, frame.to_bytes()) {
                    (Some(w), Ok(b)) => w.send(b).is_ok(),
                    _ => false,
                };
                if sent {
                    Counters::add(&c.delivered, 1);
                    Counters::add(&c.bytes_delivered, len as u64);
                } else {
                    Counters::add(&c.dropped_unconnected, 1);
                }
                s.left(payload.origin);
            }
        }
    }

    /// Inject queued packets as the simulator's `ni_try` does, at their
    /// virtual times; stop when no VC has (or is announced to get) credits.
    fn try_inject(&mut self) {
        let p = self.ctx.params;
        let (sw, port) = self.ctx.routing.attach(self.node);
        while let Some(front) = self.queue.front() {
            let mut t = front.ready.max(self.link_free);
            let v = self.credits.len() as u16;
            let vc = loop {
                let buf = p.buf;
                let credits = &mut self.credits;
                self.pending.retain(|&(at, vc, f)| {
                    if at <= t {
                        let c = &mut credits[usize::from(vc)];
                        *c = c.saturating_add(f).min(buf);
                        false
                    } else {
                        true
                    }
                });
                if let Some(vc) = (0..v)
                    .map(|i| (self.next_vc + i) % v)
                    .find(|&c| self.credits[usize::from(c)] >= p.flits)
                {
                    break Some(vc);
                }
                match self.pending.iter().map(|x| x.0).min() {
                    Some(at) => t = at,
                    None => break None,
                }
            };
            let Some(vc) = vc else {
                // Wait (in wall time) for credits.
                self.set_queued();
                return;
            };
            self.next_vc = (vc + 1) % v;
            self.credits[usize::from(vc)] -= p.flits;
            self.link_free = t + p.ser;
            let q = self.queue.pop_front().expect("front exists");
            Counters::add(&self.ctx.counters.injected, 1);
            let origin = q.payload.origin;
            self.shared.borrow_mut().entered(origin);
            let ev = SwEv::SwitchPacket {
                port: port as u16,
                vc,
                arrived: t,
                header: q.header,
                payload: q.payload,
            };
            if self.sw_tx.get(sw).is_none_or(|tx| tx.send(ev).is_err()) {
                self.shared.borrow_mut().left(origin);
            }
        }
        self.set_queued();
        self.shared.borrow_mut().try_bye(self.node);
    }
}

/// The NI task of host `node`: lives as long as the fabric.
pub(super) async fn run_ni(
    ctx: Rc<Ctx>,
    shared: SharedRc,
    node: usize,
    mut fab_rx: mpsc::UnboundedReceiver<HostEv>,
    mut rank_rx: mpsc::Receiver<RankEv>,
    sw_tx: Vec<mpsc::UnboundedSender<SwEv>>,
) {
    let p = ctx.params;
    let mut ni = Ni {
        credits: vec![p.buf; usize::from(p.vcs)],
        ctx,
        shared,
        node,
        queue: VecDeque::new(),
        link_free: 0,
        pending: Vec::new(),
        next_vc: 0,
        sw_tx,
    };
    loop {
        tokio::select! {
            biased;
            ev = fab_rx.recv() => match ev {
                Some(ev) => ni.fabric_event(ev),
                None => return,
            },
            ev = rank_rx.recv(), if ni.queue.len() < MAX_QUEUED => match ev {
                Some(ev) => ni.rank_event(ev),
                None => return,
            },
        }
    }
}

/// Accept rank connections on host port `node`.
pub(super) async fn accept(
    ctx: Rc<Ctx>,
    shared: SharedRc,
    node: usize,
    l: TcpListener,
    rank_tx: mpsc::Sender<RankEv>,
) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                tokio::task::spawn_local(connection(
                    ctx.clone(),
                    shared.clone(),
                    node,
                    s,
                    rank_tx.clone(),
                ));
            }
            Err(e) => {
                tracing::warn!("fabric: host port {node}: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn refuse(mut w: tokio::net::tcp::OwnedWriteHalf, node: usize, reason: String) {
    tracing::warn!("fabric: refused a rank on host port {node}: {reason}");
    if let Ok(b) = Frame::Refused(reason).to_bytes() {
        let _ = tokio::time::timeout(Duration::from_secs(2), w.write_all(&b)).await;
    }
    let _ = w.shutdown().await;
}

/// One rank connection on host port `node`.
async fn connection(
    ctx: Rc<Ctx>,
    shared: SharedRc,
    node: usize,
    s: TcpStream,
    rank_tx: mpsc::Sender<RankEv>,
) {
    let _ = s.set_nodelay(true);
    let ft = ctx.failure_timeout;
    let (r, w) = s.into_split();
    let mut r = BufReader::with_capacity(64 * 1024, r);
    let hello = match tokio::time::timeout(ft, Frame::read(&mut r)).await {
        Ok(Ok(Frame::Hello(h))) => h,
        Ok(Ok(other)) => {
            return refuse(w, node, format!("expected a hello, got {other:?}")).await;
        }
        Ok(Err(e)) => return refuse(w, node, format!("bad hello: {e}")).await,
        Err(_) => return refuse(w, node, "no hello within the failure timeout".into()).await,
    };
    let reason = if hello.version != FABRIC_VERSION {
        Some(format!(
            "fabric protocol version {} (this fabric speaks {FABRIC_VERSION})",
            hello.version
        ))
    } else if hello.token != ctx.token {
        Some("wrong job token".to_string())
    } else if hello.rank as usize != node {
        Some(format!("rank {} connected to host port {node}", hello.rank))
    } else if shared.borrow().hosts[node].writer.is_some() {
        Some(format!("host port {node} already has a rank connected"))
    } else {
        None
    };
    if let Some(reason) = reason {
        return refuse(w, node, reason).await;
    }
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let mut welcome = ctx.welcome.clone();
    welcome.node = node as u32;
    if let Ok(b) = Frame::Welcome(welcome).to_bytes() {
        let _ = tx.send(b);
    }
    shared.borrow_mut().hosts[node].writer = Some(tx.clone());
    tokio::task::spawn_local(writer(w, rx, ft / 4));
    let silent = ft.mul_f64(0.9);
    let mut said_bye = false;
    let lost: Option<String> = loop {
        let f = match tokio::time::timeout(silent, Frame::read(&mut r)).await {
            Err(_) => {
                if said_bye {
                    break None;
                }
                break Some(format!(
                    "rank {node} sent nothing (no packets, no heartbeats) for {} ms \
                     (90% of the failure timeout)",
                    silent.as_millis()
                ));
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                if said_bye {
                    break None;
                }
                break Some(format!("rank {node}'s connection closed without Bye"));
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                break Some(format!("rank {node} sent a malformed frame: {e}"));
            }
            Ok(Err(e)) => {
                if said_bye {
                    break None;
                }
                break Some(format!("rank {node}'s connection failed: {e}"));
            }
            Ok(Ok(f)) => f,
        };
        match f {
            Frame::Packet {
                stamp,
                post,
                route_kind,
                route,
                data,
                ..
            } => {
                let ev = RankEv::SwitchPacket {
                    stamp,
                    post,
                    kind: route_kind,
                    route,
                    data,
                };
                if rank_tx.send(ev).await.is_err() {
                    break None;
                }
            }
            Frame::Heartbeat => {}
            Frame::Bye { rank, goodbye } => {
                if rank as usize != node {
                    tracing::warn!("fabric: rank {node} said Bye as rank {rank}");
                }
                said_bye = true;
                // A rank expels nobody through the fabric (the fabric does,
                // with `Lost`): relay anything but an orderly end as a
                // departure from the start.
                let goodbye = match goodbye {
                    Goodbye::Expelled { .. } => Goodbye::departed([], [], None),
                    g => g,
                };
                if rank_tx.send(RankEv::Bye(goodbye)).await.is_err() {
                    break None;
                }
            }
            other => {
                tracing::warn!("fabric: rank {node} sent an unexpected frame: {other:?}");
            }
        }
    };
    {
        let mut s = shared.borrow_mut();
        // Only this connection's writer (a refused second connection never
        // installed one).
        if s.hosts[node]
            .writer
            .as_ref()
            .is_some_and(|w| w.same_channel(&tx))
        {
            s.hosts[node].writer = None;
        }
        if let Some(reason) = lost {
            tracing::warn!("fabric: {reason}");
            Counters::add(&ctx.counters.lost, 1);
            // The lost rank too, if it can still read (stopped, hung): its
            // writer sends this, then closes once `tx` is dropped.
            let own = Frame::Lost {
                rank: node as u32,
                reason: reason.clone(),
            };
            if let Ok(b) = own.to_bytes() {
                let _ = tx.send(b);
            }
            s.broadcast(
                node,
                &Frame::Lost {
                    rank: node as u32,
                    reason,
                },
            );
        }
    }
}

/// Write a rank's frames; a heartbeat when idle for `idle`.
async fn writer(
    mut w: tokio::net::tcp::OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    idle: Duration,
) {
    let hb = Frame::Heartbeat.to_bytes().unwrap_or_default();
    let mut buf = Vec::new();
    loop {
        match tokio::time::timeout(idle, rx.recv()).await {
            Ok(Some(b)) => {
                buf.clear();
                buf.extend_from_slice(&b);
                while buf.len() < 256 * 1024 {
                    match rx.try_recv() {
                        Ok(b) => buf.extend_from_slice(&b),
                        Err(_) => break,
                    }
                }
                if w.write_all(&buf).await.is_err() {
                    return;
                }
            }
            Ok(None) => break,
            Err(_) => {
                if w.write_all(&hb).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = w.shutdown().await;
}
