//! Worms: the irregular fabrics' SSR, path and tree worms, path worms on
//! unidirectional tori, and the two-pass MIN multicast.

use super::*;

/// One worm to inject: (phase, sender, header).
pub(super) type WormJob = (usize, usize, SwitchHeader);

/// What [`run_worms`] did: the packets injected, and per job (in the
/// order given) the host clock at which its sender started posting it
/// (`None`: its sender never had the message).
pub(super) struct WormRun {
    pub(super) injected: u64,
    pub(super) starts: Vec<Option<Time>>,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run_worms(
    net: &mut Net<Ev>,
    nodes: &mut [Node],
    bar: &mut Reporter<'_, '_>,
    cost: &FabricCostModel,
    m: usize,
    source: usize,
    jobs: Vec<WormJob>,
) -> Result<WormRun, SimulatorError> {
    // Each sender's worms, in phase order, with their index in `jobs`.
    let mut starts = vec![None; jobs.len()];
    let mut by_sender: HashMap<usize, Vec<(usize, WormJob)>> = HashMap::new();
    for (i, j) in jobs.into_iter().enumerate() {
        by_sender.entry(j.1).or_default().push((i, j));
    }
    for v in by_sender.values_mut() {
        v.sort_by_key(|s| s.1 .0);
    }
    let hn = cost.host_ni();
    let mut pkt_of: Vec<usize> = Vec::new();
    let mut injected = 0u64;
    let mut send_all =
        |net: &mut Net<Ev>, node: &mut Node, who: usize, ready: Time, pkt_of: &mut Vec<usize>| {
            let mut host = ready;
            for (i, w) in by_sender.get(&who).map(Vec::as_slice).unwrap_or(&[]) {
                // The host posts each worm in turn.
                starts[*i] = Some(host);
                let posted = hn.post(&mut node.dma, host, m);
                host = posted.host;
                for j in 0..m {
                    let leaves = hn.send(&mut node.ni, posted.in_ni(j));
                    let id = pkt_of.len() as u64;
                    pkt_of.push(j);
                    injected += 1;
                    net.inject(
                        who,
                        leaves,
                        SwitchPacket {
                            id,
                            header: w.2.clone(),
                        },
                    );
                }
            }
        };
    send_all(net, &mut nodes[source], source, 0, &mut pkt_of);
    while let Some(h) = bar.step(net)? {
        match h {
            Happening::Arrived { node, packet, at } => {
                let Some(&j) = pkt_of.get(packet.id as usize) else {
                    return Err(SimulatorError::Internal(format!(
                        "unknown packet {}",
                        packet.id
                    )));
                };
                let nd = &mut nodes[node];
                let ready = receive(nd, cost, at);
                let was_done = nd.done.is_some();
                to_host(nd, cost, m, j, ready);
                if !was_done {
                    if let Some(done) = nd.done {
                        send_all(net, &mut nodes[node], node, done, &mut pkt_of);
                    }
                }
            }
            Happening::User(e, _) => match e {},
        }
    }
    Ok(WormRun { injected, starts })
}

/// The two-pass MIN multicast [Park 1996, §3.1]: the source injects the region
/// packet (pass 1); each relay's NI, on receiving it, injects its pass-2
/// unicast (t_nr + t_ns, no host involvement); destinations' hosts receive
/// pass-2 packets only.
pub(super) fn run_min(
    net: &mut Net<Ev>,
    nodes: &mut [Node],
    bar: &mut Reporter<'_, '_>,
    cost: &FabricCostModel,
    m: usize,
    plan: &mcast_algorithms::min::TwoPassPlan,
) -> Result<u64, SimulatorError> {
    let hn = cost.host_ni();
    // id -> (pass, packet index)
    let mut meta: Vec<(u32, usize)> = Vec::new();
    let mut injected = 0u64;
    let source = plan.source as usize;
    let mut relay_sends: HashMap<usize, Vec<SwitchHeader>> = HashMap::new();
    let mut pass1 = Vec::new();
    for s in &plan.sends {
        if s.pass == 1 {
            pass1.push(SwitchHeader::Min(s.header));
        } else {
            relay_sends
                .entry(s.from as usize)
                .or_default()
                .push(SwitchHeader::Min(s.header));
        }
    }
    {
        let node = &mut nodes[source];
        for h in &pass1 {
            // Every pass-1 send is posted at host time 0.
            let posted = hn.post(&mut node.dma, 0, m);
            for j in 0..m {
                let leaves = hn.send(&mut node.ni, posted.in_ni(j));
                meta.push((1, j));
                injected += 1;
                net.inject(
                    source,
                    leaves,
                    SwitchPacket {
                        id: meta.len() as u64 - 1,
                        header: h.clone(),
                    },
                );
            }
        }
    }
    while let Some(h) = bar.step(net)? {
        match h {
            Happening::Arrived { node, packet, at } => {
                let Some(&(pass, j)) = meta.get(packet.id as usize) else {
                    return Err(SimulatorError::Internal(format!(
                        "unknown packet {}",
                        packet.id
                    )));
                };
                let nd = &mut nodes[node];
                let ready = receive(nd, cost, at);
                if pass == 2 {
                    to_host(nd, cost, m, j, ready);
                    continue;
                }
                for h in relay_sends.get(&node).map(Vec::as_slice).unwrap_or(&[]) {
                    // The relay's NI sends on what it has received (no host).
                    let leaves = hn.send(&mut nd.ni, ready);
                    meta.push((2, j));
                    injected += 1;
                    net.inject(
                        node,
                        leaves,
                        SwitchPacket {
                            id: meta.len() as u64 - 1,
                            header: h.clone(),
                        },
                    );
                }
            }
            Happening::User(e, _) => match e {},
        }
    }
    Ok(injected)
}
