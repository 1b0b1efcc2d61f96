//! A packet arrives: checks, per-message forwarding state, FPFS and FCFS.

use super::{Action, Children, EngineError, Forwarding, NiEngine};
use crate::wire::{Kind, Packet, Route};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct MsgKey {
    kind: Kind,
    root: u32,
    seq: u64,
}

/// Per-message forwarding state of an intermediate node.
#[derive(Debug)]
pub(super) struct Forward {
    /// (child rank, the route header that child receives), in send order.
    children: Children,
    /// Packets still to arrive.
    remaining: u32,
    /// FCFS: packets kept for children 2.. until the message is complete.
    held: Vec<Packet>,
}

impl NiEngine {
    /// A packet arrived on the connection from rank `from`. The driver has
    /// already checked that it belongs to this job and that `from` is the
    /// source its header names (the socket driver's intake, `net::intake`,
    /// checks every incoming packet once); the engine checks what only it
    /// can: the root, and that the route addresses this rank.
    pub fn packet_in(&mut self, from: usize, packet: Packet) -> Result<(), EngineError> {
        let h = packet.header;
        if h.root as usize >= self.size {
            return Err(EngineError::BadRank(h.root as usize));
        }
        self.stats.packets_in += 1;
        let misrouted = |detail: String| EngineError::Misrouted { from, detail };
        let key = MsgKey {
            kind: h.kind,
            root: h.root,
            seq: h.seq,
        };
        match (&h.kind, &packet.route) {
            (
                Kind::Bcast,
                Route::Range {
                    shape,
                    size,
                    lo,
                    hi,
                },
            ) => {
                if *size as usize != self.size {
                    return Err(misrouted(format!(
                        "bcast chain of {size} ranks, communicator has {}",
                        self.size
                    )));
                }
                let me = (h.root as usize + *lo as usize) % self.size;
                if me != self.rank || *lo == 0 {
                    return Err(misrouted(format!(
                        "bcast position {lo} from root {} is rank {me}",
                        h.root
                    )));
                }
                // A range of one is a leaf: no children, no forwarding
                // state, nothing to look up (most receivers of a bcast).
                if lo == hi {
                    self.deliver(packet);
                    return Ok(());
                }
                if !self.forwards.contains_key(&key) {
                    let children =
                        self.bcast_children(*shape, h.root as usize, *lo as usize, *hi as usize)?;
                    self.start_forward(key, h.pkt_count, children);
                }
            }
            (
                Kind::Multicast | Kind::Bcast,
                Route::List {
                    tree,
                    covers: members,
                },
            ) => {
                if members[0].rank as usize != self.rank {
                    return Err(misrouted(format!(
                        "multicast list starts with rank {}",
                        members[0].rank
                    )));
                }
                if let Some(bad) = members.iter().find(|m| m.rank as usize >= self.size) {
                    return Err(EngineError::BadRank(bad.rank as usize));
                }
                if !self.forwards.contains_key(&key) {
                    let children = self.list_plan(*tree, super::tree::Plan::Received, members)?;
                    self.start_forward(key, h.pkt_count, children);
                }
            }
            (Kind::P2p | Kind::Msg, Route::None) => {}
            (kind, route) => {
                return Err(misrouted(format!(
                    "{kind:?} packet with route {:?}",
                    route.kind_byte()
                )))
            }
        }
        self.forward(key, &packet);
        self.deliver(packet);
        Ok(())
    }

    /// [`NiEngine::packet_in`] for a point-to-point packet (`Kind::P2p` or
    /// `Kind::Msg` with no route), which the caller delivers itself:
    /// `packet_in`'s checks and counts, with no action queued. `false` for
    /// any other packet (give it to `packet_in`).
    pub fn p2p_in(&mut self, packet: &Packet) -> Result<bool, EngineError> {
        if !Self::is_p2p(packet) {
            return Ok(false);
        }
        let h = &packet.header;
        if h.root as usize >= self.size {
            return Err(EngineError::BadRank(h.root as usize));
        }
        self.stats.packets_in += 1;
        self.stats.delivered += 1;
        Ok(true)
    }

    /// Whether `packet` is one [`NiEngine::p2p_in`] takes: a point-to-point
    /// packet, never forwarded. Needs no engine (a driver asks before it
    /// takes the engine's lock).
    pub fn is_p2p(packet: &Packet) -> bool {
        matches!(packet.header.kind, Kind::P2p | Kind::Msg) && matches!(packet.route, Route::None)
    }

    /// Hand `packet` to the host.
    fn deliver(&mut self, packet: Packet) {
        self.stats.delivered += 1;
        self.actions.push_back(Action::Deliver(packet));
    }

    fn start_forward(&mut self, key: MsgKey, pkt_count: u32, children: Children) {
        if children.is_empty() {
            return; // a leaf keeps no state
        }
        self.forwards.insert(
            key,
            Forward {
                children,
                remaining: pkt_count,
                held: Vec::new(),
            },
        );
    }

    fn forward(&mut self, key: MsgKey, packet: &Packet) {
        let Some(fwd) = self.forwards.get_mut(&key) else {
            return;
        };
        let me = self.rank as u32;
        let copy = |p: &Packet, route: &Route| {
            let mut h = p.header;
            h.source = me;
            Packet {
                header: h,
                route: route.clone(),
                payload: p.payload.clone(),
            }
        };
        fwd.remaining = fwd.remaining.saturating_sub(1);
        match self.forwarding {
            Forwarding::Fpfs => {
                for (to, route) in fwd.children.iter() {
                    self.stats.copies_out += 1;
                    self.actions.push_back(Action::Send {
                        to: *to,
                        packet: copy(packet, route),
                    });
                }
            }
            Forwarding::Fcfs => {
                let (to, route) = &fwd.children[0];
                self.stats.copies_out += 1;
                self.actions.push_back(Action::Send {
                    to: *to,
                    packet: copy(packet, route),
                });
                if fwd.children.len() > 1 {
                    fwd.held.push(packet.clone());
                    self.stats.buffered += 1;
                    self.stats.peak_buffered = self.stats.peak_buffered.max(self.stats.buffered);
                    if fwd.remaining == 0 {
                        for (to, route) in &fwd.children[1..] {
                            for p in &fwd.held {
                                self.stats.copies_out += 1;
                                self.actions.push_back(Action::Send {
                                    to: *to,
                                    packet: copy(p, route),
                                });
                            }
                        }
                        self.stats.buffered -= fwd.held.len() as u64;
                    }
                }
            }
        }
        if fwd.remaining == 0 {
            self.forwards.remove(&key);
        }
    }
}
