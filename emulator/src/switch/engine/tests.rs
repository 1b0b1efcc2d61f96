//! The switch engine's unit tests.

use super::*;
use crate::switch::WormNote;

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
    fn link(&self, switch: usize, port: usize) -> PortLink {
        match (switch, port) {
            (0, 0) => PortLink::Host(0),
            (0, 3) => PortLink::Host(1),
            (0, p) => PortLink::Switch { switch: p, port: 0 },
            _ => PortLink::Open,
        }
    }
    fn attach(&self, node: usize) -> (usize, usize) {
        (0, if node == 0 { 0 } else { 3 })
    }
    fn route(
        &self,
        _switch: usize,
        _in_port: usize,
        header: &SwitchHeader,
        out: &mut Vec<Out>,
    ) -> Result<(), SwitchRouteError> {
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
        link_vcs: 1,
        eject: 1,
        wormhole: false,
    }
}

fn pkt(id: u64) -> SwitchPacket {
    SwitchPacket {
        id,
        header: SwitchHeader::Unicast { dest: 99 },
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

/// Wormhole mode: a head takes a downstream VC whose buffer (2 flits, half
/// a packet) is empty, and takes all of it (one packet per VC buffer); each
/// copy's action comes with a note naming its input; the input buffer is
/// freed, and its credits (the buffer's 2 flits) go upstream, only when
/// the driver says the tail has left. VCT leaves no notes.
#[test]
fn wormhole_holds_the_input_until_the_tail_leaves() {
    let p = SwitchParams {
        buf: 2,
        wormhole: true,
        ..params()
    };
    let mut e = SwitchEngine::new(0, Arc::new(Fork), p);
    e.packet_in_at(2, 0, 0, 0, pkt(1));
    let a = drain(&mut e);
    let sends: Vec<_> = a
        .iter()
        .filter_map(|x| match x {
            SwAction::Send { port, at, .. } => Some((*port, *at)),
            _ => None,
        })
        .collect();
    assert_eq!(sends, vec![(1, 2), (2, 2)]);
    assert!(!a.iter().any(|x| matches!(x, SwAction::Credit { .. })));
    let notes: Vec<_> = std::iter::from_fn(|| e.poll_note()).collect();
    let from = Some((0, 0));
    assert_eq!(
        notes,
        vec![
            WormNote {
                input: from,
                last: false
            },
            WormNote {
                input: from,
                last: true
            }
        ]
    );
    assert_eq!(e.buffered(), 1);
    assert!(e.blocked().is_empty());
    // A second packet: both output VCs are owned (no credit left).
    e.packet_in_at(4, 0, 0, 0, pkt(2));
    assert!(drain(&mut e)
        .iter()
        .all(|x| !matches!(x, SwAction::Send { .. })));
    // The tail leaves at 40: the buffer's 2 credits go upstream at 40, and
    // packet 2 is routed; it waits for the downstream VCs.
    e.input_tail(6, 0, 0, 40);
    let a = drain(&mut e);
    assert!(a.contains(&SwAction::Credit {
        port: 0,
        vc: 0,
        flits: 2,
        at: 40
    }));
    let SwAction::Timer { at: 40, token } = a[a.len() - 1] else {
        panic!("{a:?}")
    };
    e.timer(40, token);
    drain(&mut e);
    assert_eq!(e.blocked().len(), 2);
    e.credit_in(45, 1, 0, 2);
    let a = drain(&mut e);
    assert!(a.iter().any(|x| matches!(
        x,
        SwAction::Send {
            port: 1,
            at: 45,
            ..
        }
    )));
    // Under VCT, no notes.
    let mut v = SwitchEngine::new(0, Arc::new(Fork), params());
    v.packet_in_at(2, 0, 0, 0, pkt(1));
    drain(&mut v);
    assert_eq!(v.poll_note(), None);
}
