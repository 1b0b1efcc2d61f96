//! Routing a head and allocating outputs: route the front packet of an
//! input VC, grant each branch an output VC with credits for the whole
//! packet, send, and free the input when every branch has left.

use super::super::drop_header;
use super::*;

impl SwitchEngine {
    pub(super) fn route(&mut self, idx: usize, now: Time) {
        let input = &mut self.inputs[idx];
        let in_port = input.port as usize;
        if input.routed {
            return;
        }
        let Some(front) = input.queue.front() else {
            return;
        };
        if let SwitchHeader::Unicast { dest } = front.packet.header {
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
                            header: SwitchHeader::Unicast { dest },
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
                Err(SwitchRouteError::NoOutput)
            } else {
                Ok(())
            }
        });
        if let Err(error) = r {
            let slot = input.queue.pop_front().expect("front exists");
            if self.p.wormhole {
                self.notes.push_back(WormNote {
                    input: Some((input.port, input.vc)),
                    last: true,
                });
            }
            self.actions.push_back(SwAction::Drop {
                packet: slot.packet,
                error,
            });
            self.actions.push_back(SwAction::Credit {
                port: in_port as u16,
                vc: input.vc,
                flits: self.p.need(),
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

    pub(super) fn grant_none(&mut self, idx: usize, b: u16, now: Time) {
        let input = &mut self.inputs[idx];
        input.branches[b as usize].granted = true;
        input.pending -= 1;
        if input.pending == 0 {
            // A branch to nowhere has no tail to wait for, even in wormhole.
            self.finish(idx, now);
        }
    }

    /// The front packet of input `idx` has sent its last branch: free it.
    pub(super) fn finish(&mut self, idx: usize, now: Time) {
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
            flits: self.p.need(),
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
    pub(super) fn free_vc(&self, port: usize, class: u8) -> Option<u16> {
        let o = &self.outputs[port];
        if o.host {
            return Some(0);
        }
        let flits = self.p.need();
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
    pub(super) fn pick(&self, port: usize) -> Option<(usize, u16)> {
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
    pub(super) fn grant(&mut self, port: usize, idx: usize, b: usize, vc: u16, now: Time) {
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
        if let Some(lane) = o.lanes.iter_mut().min() {
            // Several ejection channels: the first free one takes it.
            *lane = (*lane).max(now) + ser;
            o.link_free = o.lanes.iter().copied().min().unwrap_or(now + ser);
        } else {
            o.link_free = o.link_free.max(now + ser);
        }
        if self.backfill {
            o.resv.reserve(now, now + ser);
        }
        o.next_vc = o.next_vc.wrapping_add(1);
        if !host {
            o.credits[vc as usize] -= self.p.need();
        }
        let input = &mut self.inputs[idx];
        let br = &mut input.branches[b];
        br.granted = true;
        let header = std::mem::replace(&mut br.out.header, SwitchHeader::Consumed);
        let packet = SwitchPacket {
            id: input.queue.front().expect("routed front").packet.id,
            header,
        };
        input.pending -= 1;
        input.tail_free = input.tail_free.max(now + ser);
        let done = input.pending == 0;
        if self.p.wormhole {
            self.notes.push_back(WormNote {
                input: Some((input.port, input.vc)),
                last: done,
            });
        }
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
        // Wormhole: the buffer is freed when the driver says the tail has
        // left ([`SwitchEngine::input_tail`]).
        if done && !self.p.wormhole {
            self.finish(idx, now);
        }
    }

    pub(super) fn try_output(&mut self, port: usize, now: Time) {
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
}
