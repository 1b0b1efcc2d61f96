//! The network half's zero-load timing on every fabric.

use super::spec::SimFabric;
use super::*;

/// Zero-load unicast latency on every fabric kind: H·(t_r + t_w) + L/b,
/// H the switches traversed (from the topology, independently of the
/// engine), for every ordered pair of a small fabric of each kind.
#[test]
fn zero_load_unicast_latency_on_every_fabric() {
    let fabrics = [
        "torus:4x4",
        "torus:5x3",
        "torus:4x4:uni",
        "torus:3x3x3",
        "mesh:3x4",
        "hypercube:4",
        "irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=3",
        "crossbar:6",
        "min:4",
        "min:3:omega",
    ];
    let mut costs = vec![FabricCostModel::default()];
    let mut c = FabricCostModel::default();
    for kv in [
        "packet_flits=10",
        "link_bandwidth=4",
        "link_delay=3",
        "routing_delay=2",
        "crossbar_delay=0",
        "vc_buf_flits=20",
        "num_vcs=4",
    ] {
        c.set_pair(kv).unwrap();
    }
    costs.push(c);
    for cost in &costs {
        let per_hop = cost.t_r() + cost.link_delay;
        for spec in fabrics {
            let f = SimFabric::parse(spec, true).unwrap();
            let routing = f.routing();
            let mut net: Net<()> = Net::new(routing.clone(), cost).unwrap();
            let n = routing.nodes();
            let mut checked = 0;
            for s in 0..n {
                for d in (0..n).filter(|&d| d != s) {
                    let h = routing.switch_hops(s, d).expect("hops known") as u64;
                    let t0 = net.now();
                    net.inject(
                        s,
                        t0,
                        SwitchPacket {
                            id: 0,
                            header: unicast(d),
                        },
                    );
                    match net.step().unwrap() {
                        Some(Happening::Arrived { node, at, .. }) => {
                            assert_eq!(node, d, "{spec}");
                            assert_eq!(
                                at - t0,
                                h * per_hop + cost.serialization(),
                                "{spec} {s}->{d} H={h}"
                            );
                        }
                        other => panic!("{spec}: {other:?}"),
                    }
                    checked += 1;
                }
            }
            assert_eq!(checked, n * (n - 1));
            assert_eq!(net.stats.dropped, 0);
        }
    }
}

/// Wormhole with VC buffers smaller than a packet: a single unicast in an
/// idle fabric arrives H·(t_r + t_w) + ceil(L/b) after injection on every
/// fabric kind, the same as under VCT (an idle worm never stops, so its
/// tail follows its head at link rate: the buffers never fill), for every
/// ordered pair; the tracker holds no worm hop afterwards.
#[test]
fn wormhole_zero_load_unicast_latency_on_every_fabric() {
    let fabrics = [
        "torus:4x4",
        "torus:5x3",
        "torus:4x4:uni",
        "torus:3x3x3",
        "mesh:3x4",
        "hypercube:4",
        "irregular:switches=8,ports=8,nodes=32,connectivity=0.8,seed=3",
        "crossbar:6",
        "min:4",
        "min:3:omega",
    ];
    let mut costs = Vec::new();
    for kvs in [
        // L = 128, b = 1, B = 4; t_r = 2, t_w = 1.
        &["vc_buf_flits=4"][..],
        // L = 10, b = 4 (ser 3), B = 1; t_r = 2, t_w = 3, 4 VCs.
        &[
            "packet_flits=10",
            "link_bandwidth=4",
            "link_delay=3",
            "routing_delay=2",
            "crossbar_delay=0",
            "vc_buf_flits=1",
            "num_vcs=4",
        ][..],
        // One-cycle hops (the thesis presets' timing), L = 32, B = 2.
        &[
            "preset=low-startup",
            "packet_flits=32",
            "vc_buf_flits=2",
            "dateline=0",
            "num_vcs=1",
        ][..],
    ] {
        let mut c = FabricCostModel::default();
        for kv in kvs {
            c.set_pair(kv).unwrap();
        }
        assert!(c.vc_buf_flits < c.packet_flits);
        let mut vct = c.clone();
        vct.vc_buf_flits = c.packet_flits;
        c.set_pair("switching=wormhole").unwrap();
        costs.push((c, vct));
    }
    for (cost, vct) in &costs {
        let per_hop = cost.t_r() + cost.link_delay;
        for spec in fabrics {
            let f = SimFabric::parse(spec, cost.dateline).unwrap();
            let routing = f.routing();
            let mut net: Net<()> = Net::new(routing.clone(), cost).unwrap();
            let mut twin: Net<()> = Net::new(routing.clone(), vct).unwrap();
            let n = routing.nodes();
            for s in 0..n {
                for d in (0..n).filter(|&d| d != s) {
                    let h = routing.switch_hops(s, d).expect("hops known") as u64;
                    let mut got = Vec::new();
                    for net in [&mut net, &mut twin] {
                        let t0 = net.now();
                        let packet = SwitchPacket {
                            id: 0,
                            header: unicast(d),
                        };
                        net.inject(s, t0, packet);
                        match net.step().unwrap() {
                            Some(Happening::Arrived { node, at, .. }) => {
                                assert_eq!(node, d, "{spec}");
                                got.push(at - t0);
                            }
                            other => panic!("{spec}: {other:?}"),
                        }
                        // Let the credits come home before the next pair.
                        while net.step().unwrap().is_some() {}
                    }
                    let want = h * per_hop + cost.serialization();
                    assert_eq!(got, vec![want, want], "{spec} {s}->{d} H={h}");
                }
            }
            assert_eq!(net.stats.dropped, 0);
            assert_eq!(net.buffered(), 0);
            assert_eq!(net.worm_hops_live(), 0, "{spec}");
        }
    }
}

/// Run `packets` (id, source, destination, injection time) to completion on
/// `spec` with `cost`: each id's arrival.
fn arrivals(
    spec: &str,
    cost: &FabricCostModel,
    packets: &[(u64, usize, usize, Time)],
) -> Vec<Time> {
    let f = SimFabric::parse(spec, cost.dateline).unwrap();
    let mut net: Net<()> = Net::new(f.routing(), cost).unwrap();
    for &(id, s, d, at) in packets {
        let header = unicast(d);
        net.inject(s, at, SwitchPacket { id, header });
    }
    let mut got = vec![0; packets.len()];
    while let Some(h) = net.step().unwrap() {
        if let Happening::Arrived { packet, at, node } = h {
            assert_eq!(node, packets[packet.id as usize].2);
            got[packet.id as usize] = at;
        }
    }
    assert_eq!(net.buffered(), 0);
    assert_eq!(net.worm_hops_live(), 0);
    got
}

/// A blocked worm holds every channel from its head back to its tail. On
/// the line 0-1-2-3 (`mesh:4`, one VC, L = 32, t_r = 2, t_w = 1, credits
/// back in 1 cycle, no host overheads): C (2 -> 3, injected at 0) holds
/// the channel 2->3 from 2 to 38 (its tail leaves switch 3 at 37). A
/// (0 -> 3, at 1) leaves switch 0 at 3 and switch 1 at 6; its head waits
/// at switch 2 until 38. D (0 -> 1, at 2) needs the injection channel and
/// the channel 0->1, both behind A.
///
/// Wormhole, 2-flit buffers: A's tail cannot leave switch 0 before the
/// head has moved on: it leaves at 60 (= 38 + 32 − 2·2 − 6, the head at
/// switch 2 plus the flits the two buffers and pipelines between cannot
/// hold), so the NI may send D at 61; the channel 0->1 is A's until its
/// tail leaves switch 1 at 65, so D leaves switch 0 at 66 and arrives at
/// 66 + 3 + 32 + 1 = 102. Without C, D arrives at 75: A's block cost D 27
/// cycles. Under VCT with buffers of two packets, A sits whole in switch
/// 2's buffer, the channels behind it are free again once its tail has
/// crossed them, and D arrives at 71 with or without C.
#[test]
fn blocked_worm_holds_its_channels_back_to_its_tail() {
    let base = "packet_flits = 32; num_vcs = 1; t_hs = 0; t_hr = 0; t_ns = 0; t_nr = 0;";
    let with_c = [(0, 0, 1, 2), (1, 0, 3, 1), (2, 2, 3, 0)];
    let without_c = &with_c[..2];
    let mut wh = FabricCostModel::default();
    wh.parse_config(&format!("{base} switching = wormhole; vc_buf_flits = 2;"))
        .unwrap();
    assert_eq!(arrivals("mesh:4", &wh, &with_c), vec![102, 74, 38]);
    assert_eq!(arrivals("mesh:4", &wh, without_c), vec![75, 45]);
    let mut vct = FabricCostModel::default();
    vct.parse_config(&format!("{base} vc_buf_flits = 64;"))
        .unwrap();
    assert_eq!(arrivals("mesh:4", &vct, &with_c), vec![71, 70, 38]);
    assert_eq!(arrivals("mesh:4", &vct, without_c), vec![71, 45]);
    // Wormhole with buffers of two packets: a worm always fits in the next
    // buffer, nothing is held behind it, and the timing is VCT's.
    wh.set("vc_buf_flits", "64").unwrap();
    assert_eq!(arrivals("mesh:4", &wh, &with_c), vec![71, 70, 38]);
}

/// Replication under wormhole: the input buffer of a replicating switch
/// frees a flit only when every branch has read it, so a blocked branch
/// stalls the others once the buffer (and the pipelines behind it) are
/// full. A path worm P from 0 to {1, 3} on the ring `torus:4:uni` (one
/// VC, L = 32, B = 2, t_r = 2, t_w = 1) is absorbed at switch 1 (a branch
/// to host 1, granted at 6) and forwarded; with C (2 -> 3, at 0) holding
/// the channel 2->3 until 38, P's head waits at switch 2 until 38, the
/// flits stop, and host 1's copy cannot finish before P's tail has reached
/// switch 1: the tail leaves switch 0 at 38 + 32 − 2·2 − 6 = 60 and host 1
/// has it at 60 + 3 + 1 = 64 (39 without C, or under VCT with or without
/// C). Host 3 has its copy at 74 (VCT: 70; without C: 45).
#[test]
fn blocked_branch_stalls_its_siblings_under_wormhole() {
    use crate::switch::routing::PathHeader;
    let path = SwitchHeader::Path(Box::new(PathHeader {
        dests: Arc::from(vec![1u32, 3]),
        pos: 0,
        on_h: false,
    }));
    let run = |cost: &FabricCostModel, blocker: bool| {
        let f = SimFabric::parse("torus:4:uni", false).unwrap();
        let mut net: Net<()> = Net::new(f.routing(), cost).unwrap();
        let p = SwitchPacket {
            id: 0,
            header: path.clone(),
        };
        net.inject(0, 1, p);
        if blocker {
            let header = unicast(3);
            net.inject(2, 0, SwitchPacket { id: 1, header });
        }
        let mut got = Vec::new();
        while let Some(h) = net.step().unwrap() {
            if let Happening::Arrived { packet, at, node } = h {
                got.push((packet.id, node, at));
            }
        }
        assert_eq!(net.buffered(), 0);
        assert_eq!(net.worm_hops_live(), 0);
        got.sort_unstable();
        got
    };
    let base = "packet_flits = 32; num_vcs = 1; dateline = 0; t_hs = 0; t_hr = 0; \
                t_ns = 0; t_nr = 0;";
    let mut wh = FabricCostModel::default();
    wh.parse_config(&format!("{base} switching = wormhole; vc_buf_flits = 2;"))
        .unwrap();
    assert_eq!(run(&wh, true), vec![(0, 1, 64), (0, 3, 74), (1, 3, 38)]);
    assert_eq!(run(&wh, false), vec![(0, 1, 39), (0, 3, 45)]);
    let mut vct = FabricCostModel::default();
    vct.parse_config(&format!("{base} vc_buf_flits = 64;"))
        .unwrap();
    assert_eq!(run(&vct, true), vec![(0, 1, 39), (0, 3, 70), (1, 3, 38)]);
    assert_eq!(run(&vct, false), vec![(0, 1, 39), (0, 3, 45)]);
}
