//! mclaunch's rendezvous: [`mcast::rendezvous::Server`] on `bind:0`, its
//! notices turned into the supervisor's events and mclaunch's notes. Under
//! `--transport quic` (or `quic-all`) it runs over TLS with the job's CA
//! ([`Server::start_tls`]); its identity stays in mclaunch's memory.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use mcast::quic::RendezvousIdentity;
use mcast::rendezvous::{Notice, Server};

use crate::supervisor::Event;

/// A running rendezvous server. Dropping it stops the server.
pub(crate) struct Rendezvous(Server);

impl Rendezvous {
    /// Bind `bind:0` and start serving a job of `size` ranks, over TLS
    /// with `tls`. Failures to complete are reported as
    /// [`Event::RendezvousFailed`] on `events`.
    pub fn start(
        bind: IpAddr,
        size: u32,
        token: String,
        timeout: Duration,
        events: Sender<Event>,
        tls: Option<&RendezvousIdentity>,
    ) -> io::Result<Rendezvous> {
        let listener = TcpListener::bind(SocketAddr::new(bind, 0))?;
        let notify = Arc::new(move |n: Notice| match n {
            Notice::Complete => {
                let _ = events.send(Event::RendezvousComplete);
            }
            Notice::Failed(reason) => {
                let _ = events.send(Event::RendezvousFailed(reason));
            }
            Notice::Note(m) => crate::note(&format!("rendezvous: {m}")),
        });
        match tls {
            None => Server::start(listener, size, token, timeout, notify),
            Some(id) => Server::start_tls(listener, size, token, timeout, notify, id),
        }
        .map(Rendezvous)
    }

    /// The `ip:port` ranks connect to.
    pub fn addr(&self) -> SocketAddr {
        self.0.addr()
    }

    /// Tell the rendezvous that a rank's process has ended.
    pub fn rank_exited(&self, rank: u32, how: String) {
        self.0.rank_exited(rank, how)
    }
}
