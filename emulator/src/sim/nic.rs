//! The hosts' injection ports: one packet at a time per injection channel
//! (`inject_ports` of them: 1 for a one-port host, more for all-port), each
//! packet on its own VC of the switch's host input port, with credit flow
//! control.

use super::{Ev, Net, Time};

impl<U> Net<U> {
    /// Arm host `node`'s injection retry at `at` unless an earlier one is
    /// pending.
    pub(super) fn ni_arm(&mut self, node: usize, at: Time) {
        let now = self.now;
        let ni = &mut self.nis[node];
        if ni.armed_at < now {
            ni.armed_at = Time::MAX;
        }
        if ni.armed_at <= at {
            return;
        }
        ni.armed_at = at;
        self.push(at, Ev::NiTry { node: node as u32 });
    }

    pub(super) fn ni_try(&mut self, node: usize) {
        let now = self.now;
        let ser = self.params.ser;
        let flits = self.params.need();
        let buf = self.params.buf;
        let (sw, port) = (self.nis[node].sw, self.nis[node].port);
        loop {
            let ni = &mut self.nis[node];
            if ni.queue.is_empty() {
                return;
            }
            // The injection channel free first (all-port hosts have several).
            let (lane, &free) = ni
                .lanes
                .iter()
                .enumerate()
                .min_by_key(|l| *l.1)
                .expect("at least one lane");
            if free > now {
                self.ni_arm(node, free);
                return;
            }
            let mut i = 0;
            while i < ni.pending.len() {
                let (t, vc, f) = ni.pending[i];
                if t <= now {
                    let c = &mut ni.credits[vc as usize];
                    *c = (*c + f).min(buf);
                    ni.pending.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            // Round robin from next_vc.
            let start = ni.next_vc as usize;
            let (before, after) = ni.credits.split_at(start.min(ni.credits.len()));
            let found = match after.iter().position(|&c| c >= flits) {
                Some(k) => Some(start + k),
                None => before.iter().position(|&c| c >= flits),
            };
            let v = ni.credits.len() as u16;
            let Some(vc) = found.map(|c| c as u16) else {
                if let Some(t) = ni.pending.iter().map(|p| p.0).min() {
                    self.ni_arm(node, t);
                }
                return;
            };
            ni.next_vc = (vc + 1) % v;
            ni.credits[vc as usize] -= flits;
            ni.lanes[lane] = now + ser;
            let packet = ni.queue.pop_front().expect("non-empty");
            self.last_progress = now;
            if let Some(w) = self.worms.as_mut() {
                w.inject(now, sw as usize, port, vc);
            }
            self.push(
                now + self.params.t_r,
                Ev::Head {
                    sw,
                    port,
                    vc,
                    packet,
                },
            );
        }
    }
}
