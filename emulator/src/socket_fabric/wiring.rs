//! The fabric thread's set-up: one channel per switch and host port, one
//! socket pair per directed switch-to-switch link, and every task.

use super::*;

/// Set up every switch, link and host port on the fabric thread.
pub(super) async fn run(ctx: Ctx, listeners: Vec<std::net::TcpListener>) -> std::io::Result<()> {
    let n_sw = ctx.routing.switches();
    let ports = ctx.ports;
    let mut sw_tx = Vec::with_capacity(n_sw);
    let mut sw_rx = Vec::with_capacity(n_sw);
    for _ in 0..n_sw {
        let (tx, rx) = mpsc::unbounded_channel::<SwEv>();
        sw_tx.push(tx);
        sw_rx.push(rx);
    }
    let mut host_tx = Vec::with_capacity(ctx.nodes);
    let mut host_rx = Vec::with_capacity(ctx.nodes);
    for _ in 0..ctx.nodes {
        let (tx, rx) = mpsc::unbounded_channel::<HostEv>();
        host_tx.push(tx);
        host_rx.push(rx);
    }
    let ctx = Rc::new(ctx);
    let shared: SharedRc = Rc::new(RefCell::new(Shared {
        hosts: (0..ctx.nodes).map(|_| HostShared::default()).collect(),
        counters: ctx.counters.clone(),
    }));
    // One socket pair per directed switch-to-switch link.
    let mut out_w: Vec<Vec<Option<tokio::net::unix::OwnedWriteHalf>>> = (0..n_sw)
        .map(|_| (0..ports).map(|_| None).collect())
        .collect();
    let mut in_w: Vec<Vec<Option<tokio::net::unix::OwnedWriteHalf>>> = (0..n_sw)
        .map(|_| (0..ports).map(|_| None).collect())
        .collect();
    #[allow(clippy::needless_range_loop)]
    for s in 0..n_sw {
        for p in 0..ports {
            let PortLink::Switch { switch: d, port: q } = ctx.links[s * ports + p] else {
                continue;
            };
            if d >= n_sw || q >= ports {
                continue;
            }
            let (up, down) = tokio::net::UnixStream::pair()?;
            let (up_r, up_w) = up.into_split();
            let (down_r, down_w) = down.into_split();
            out_w[s][p] = Some(up_w);
            in_w[d][q] = Some(down_w);
            // Upstream reads credits for its output port p.
            tokio::task::spawn_local(switch::read_link(
                ctx.clone(),
                up_r,
                sw_tx[s].clone(),
                s,
                p as u16,
                false,
            ));
            // Downstream reads packets on its input port q.
            tokio::task::spawn_local(switch::read_link(
                ctx.clone(),
                down_r,
                sw_tx[d].clone(),
                d,
                q as u16,
                true,
            ));
        }
    }
    for (s, ((rx, ow), iw)) in sw_rx.into_iter().zip(out_w).zip(in_w).enumerate() {
        tokio::task::spawn_local(switch::run_switch(
            ctx.clone(),
            shared.clone(),
            s,
            rx,
            ow,
            iw,
            host_tx.clone(),
        ));
    }
    let mut host_rx = host_rx.into_iter();
    let mut listeners = listeners.into_iter();
    for i in 0..ctx.nodes {
        let fab_rx = host_rx.next().expect("one receiver per host");
        let (rank_tx, rank_rx) = mpsc::channel::<RankEv>(256);
        tokio::task::spawn_local(host::run_ni(
            ctx.clone(),
            shared.clone(),
            i,
            fab_rx,
            rank_rx,
            sw_tx.clone(),
        ));
        if i < ctx.ranks {
            let Some(l) = listeners.next() else {
                continue;
            };
            let l = tokio::net::TcpListener::from_std(l)?;
            tokio::task::spawn_local(host::accept(ctx.clone(), shared.clone(), i, l, rank_tx));
        }
    }
    Ok(())
}
