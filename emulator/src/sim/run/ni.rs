//! NI-based trees: every node runs the real [`mcast::engine::NiEngine`], and
//! every copy it emits is a unicast packet in the fabric.

use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) fn run_ni(
    net: &mut Net<Ev>,
    nodes: &mut [Node],
    bar: &mut Reporter<'_, '_>,
    cost: &FabricCostModel,
    m: usize,
    source: usize,
    chain: &[usize],
    tree: TreeKind,
    topo: Option<Arc<mcast_algorithms::Topology>>,
    forwarding: Forwarding,
) -> Result<u64, SimulatorError> {
    let n = nodes.len();
    let mut engines: Vec<NiEngine> = (0..n)
        .map(|r| NiEngine::new(r, n, 1, forwarding, 1).with_topology(topo.clone()))
        .collect();
    let members: Vec<Member> = chain
        .iter()
        .map(|&d| Member {
            rank: d as u32,
            ordinal: 0,
        })
        .collect();
    engines[source]
        .post_multicast(0, &members, Bytes::from(vec![0u8; m]), tree)
        .map_err(|e| SimulatorError::Input(format!("engine: {e}")))?;
    let hn = cost.host_ni();
    let mut wire: Vec<Option<(usize, WirePacket)>> = Vec::new();
    let mut injected = 0u64;
    // Drain the engine of `at`; `avail(j)` = when packet j is at the NI.
    let mut drain = |net: &mut Net<Ev>,
                     nodes: &mut [Node],
                     eng: &mut NiEngine,
                     at: usize,
                     avail: &dyn Fn(usize) -> Time,
                     wire: &mut Vec<Option<(usize, WirePacket)>>| {
        while let Some(a) = eng.poll_action() {
            match a {
                Action::Send { to, packet } => {
                    let j = packet.header.pkt_idx as usize;
                    let node = &mut nodes[at];
                    let leaves = hn.send(&mut node.ni, avail(j));
                    let id = wire.len() as u64;
                    wire.push(Some((at, packet)));
                    injected += 1;
                    net.inject(
                        at,
                        leaves,
                        SwitchPacket {
                            id,
                            header: unicast(to),
                        },
                    );
                }
                Action::Deliver(packet) => {
                    let j = packet.header.pkt_idx as usize;
                    let t = avail(j);
                    to_host(&mut nodes[at], cost, m, j, t);
                }
            }
        }
    };
    // The source's host posts the message at 0.
    let posted = hn.post(&mut nodes[source].dma, 0, m);
    drain(
        net,
        nodes,
        &mut engines[source],
        source,
        &|j| posted.in_ni(j),
        &mut wire,
    );
    while let Some(h) = bar.step(net)? {
        match h {
            Happening::Arrived { node, packet, at } => {
                let Some((from, wp)) = wire.get_mut(packet.id as usize).and_then(Option::take)
                else {
                    return Err(SimulatorError::Internal(format!(
                        "copy {} delivered twice or unknown",
                        packet.id
                    )));
                };
                let ready = receive(&mut nodes[node], cost, at);
                engines[node]
                    .packet_in(from, wp)
                    .map_err(|e| SimulatorError::Internal(format!("engine {node}: {e}")))?;
                drain(net, nodes, &mut engines[node], node, &|_| ready, &mut wire);
            }
            Happening::User(e, _) => match e {},
        }
    }
    Ok(injected)
}
