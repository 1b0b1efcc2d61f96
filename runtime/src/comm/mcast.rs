//! Multicast: not collective. The source names any set of other ranks of
//! the communicator; each destination receives the communicator's
//! multicasts aimed at it, one source's in the order it sent them.

use std::time::Duration;

use bytes::Bytes;

use super::{Comm, Received};
use crate::algorithm::Resolved;
use crate::inbox::{message_cost, Post, Stamp};
use crate::net::Cmd;
use crate::wire::{comm_base, Kind, Member};
use crate::{Algorithm, Error};

impl Comm {
    /// Multicast `data` from this rank to `dests`, with the configured algorithm.
    ///
    /// * `dests` is any set of ranks other than the source, in any order.
    /// * An empty set sends nothing and returns `Ok`.
    /// * A rank out of range, a rank listed twice, or the source among its own
    ///   destinations (so also the source alone) is an
    ///   [`Error::InvalidArgument`], and nothing is sent.
    ///
    /// Returns once the data is handed to the NI (the buffer may be reused).
    pub fn multicast(&self, dests: &[usize], data: &[u8]) -> Result<(), Error> {
        self.multicast_with(dests, data, self.cfg.algorithm)
    }

    /// Multicast with an explicit algorithm. The tree is built over a chain of
    /// the source followed by the destinations in rank order rotated to start
    /// after the source.
    pub fn multicast_with(
        &self,
        dests: &[usize],
        data: &[u8],
        algo: Algorithm,
    ) -> Result<(), Error> {
        if let Some(bad) = dests.iter().find(|&&d| d >= self.size) {
            return Err(Error::InvalidArgument(format!(
                "multicast destination {bad} is not a rank of a {}-rank communicator",
                self.size
            )));
        }
        if dests.contains(&self.rank) {
            return Err(Error::InvalidArgument(format!(
                "multicast source {} is among its own destinations",
                self.rank
            )));
        }
        let mut chain: Vec<usize> = dests.to_vec();
        chain.sort_by_key(|&d| (d + self.size - self.rank) % self.size);
        if let Some(w) = chain.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::InvalidArgument(format!(
                "multicast destination {} is listed more than once",
                w[0]
            )));
        }
        let algo = self.algorithm_for(algo, chain.len() + 1, data.len());
        let resolved = algo.resolve_for(
            chain.len() + 1,
            self.packet_count(data.len()),
            self.cfg.topology.as_ref(),
            self.medium_among(chain.iter().copied().chain([self.rank])),
        )?;
        if let Resolved::Worm(w) = resolved {
            self.net()?.check_worm(w)?;
        }
        let n = self.mcast_seq.get();
        let seq = comm_base(self.id()) | n;
        let _span =
            tracing::debug_span!("multicast", seq, %algo, dests = chain.len(), bytes = data.len())
                .entered();
        if chain.is_empty() {
            return Ok(());
        }
        // From here on, ranks are world ranks (what the NI and inbox know).
        let chain: Vec<usize> = chain.iter().map(|&d| self.world(d)).collect();
        self.inbox.check_dests(&chain)?;
        let net = self.net()?;
        // Room at every destination first (flow control): a destination
        // that does not receive stalls its sources, and nothing is sent if
        // this fails.
        let cost = message_cost(data.len(), self.packet_count(data.len()));
        let op = || crate::control::numbered("multicast", seq);
        self.inbox.reserve(
            Post::Multicast { dests: &chain },
            cost,
            self.cfg.timeout,
            &op,
        )?;
        self.mcast_seq.set(n + 1);
        let mut ordinals = self.ordinals.borrow_mut();
        let members = chain
            .iter()
            .map(|&d| {
                let o = ordinals.entry(d).or_insert(0);
                let m = Member {
                    rank: d as u32,
                    ordinal: *o,
                };
                *o = o.wrapping_add(1);
                m
            })
            .collect();
        let (data, stage) = net.staged(data);
        let cmd = match resolved {
            Resolved::Worm(worm) => Cmd::Worm {
                kind: Kind::Multicast,
                seq,
                members,
                data,
                worm,
            },
            Resolved::Tree(tree) => Cmd::Multicast {
                seq,
                dests: members,
                data,
                tree,
            },
        };
        net.send_filling(cmd, stage)
    }

    /// Receive the next multicast aimed at this rank, from any source. The
    /// multicasts of one source arrive in the order it sent them. Fails with
    /// [`Error::Timeout`] if none arrives within `MCAST_TIMEOUT_SECS`.
    pub fn recv_multicast(&self) -> Result<Received, Error> {
        self.recv_multicast_timeout(self.cfg.timeout)
    }

    /// [`Comm::recv_multicast`] with an explicit bound on the wait.
    pub fn recv_multicast_timeout(&self, timeout: Duration) -> Result<Received, Error> {
        let (source, data, model) = self.inbox.take_multicast(self.id(), None, timeout)?;
        self.received(source, data, model)
    }

    /// Receive the next multicast from `source` (in the order it sent them),
    /// leaving other sources' multicasts for later calls. Fails with
    /// [`Error::PeerLost`] if `source` is lost and nothing from it is left,
    /// and with [`Error::Timeout`] after `MCAST_TIMEOUT_SECS` without progress.
    pub fn recv_multicast_from(&self, source: usize) -> Result<Received, Error> {
        if source >= self.size || source == self.rank {
            return Err(Error::InvalidArgument(format!(
                "recv_multicast_from({source}): not another rank of a {}-rank communicator",
                self.size
            )));
        }
        let (source, data, model) =
            self.inbox
                .take_multicast(self.id(), Some(self.world(source)), self.cfg.timeout)?;
        self.received(source, data, model)
    }

    /// A multicast from world rank `source`, as this communicator sees it.
    fn received(
        &self,
        source: usize,
        data: Bytes,
        model: Option<Stamp>,
    ) -> Result<Received, Error> {
        if let Some(net) = &self.net {
            net.return_credits();
        }
        let model_latency = model.and_then(|s| self.net.as_ref()?.model_latency(s));
        let source = self.local(source).ok_or_else(|| {
            Error::Protocol(format!(
                "a multicast of communicator {} from world rank {source}, not a member",
                self.id()
            ))
        })?;
        Ok(Received {
            source,
            data,
            model_latency,
        })
    }
}
