//! Bcast: the NI forwards its packets down the tree their headers name.
//!
//! On the world, chain trees travel with a range route over every rank; on
//! a sub-communicator, the root's NI sends the packets with a list route
//! over the members (its chain: the communicator's ranks from the root on),
//! as a multicast's, and they stay bcast packets, numbered in the
//! communicator's sequence.

use serde::{de::DeserializeOwned, Serialize};

use super::elem::{from_bytes, to_bytes, Element};
use super::{Comm, ModelLatency, MAX_VALUE_BYTES};
use crate::algorithm::{bcast_waits_for, Resolved, TreeKind};
use crate::control::Fingerprint;
use crate::inbox::{message_cost, Post};
use crate::net::Cmd;
use crate::wire::{Kind, Member};
use crate::{Algorithm, Error};

impl Comm {
    /// Broadcast `buf` from `root` to every rank, with the configured algorithm
    /// (`MCAST_ALGORITHM`, default `auto`). Every rank passes a buffer of the
    /// same length; the root's bytes end up in all of them.
    pub fn bcast(&self, root: usize, buf: &mut [u8]) -> Result<(), Error> {
        self.bcast_with(root, buf, self.cfg.algorithm)
    }

    /// Broadcast with an explicit algorithm. Only the root's choice matters:
    /// the headers carry the tree, so the other ranks just follow them.
    pub fn bcast_with(&self, root: usize, buf: &mut [u8], algo: Algorithm) -> Result<(), Error> {
        if root >= self.size {
            return Err(Error::InvalidArgument(format!(
                "bcast root {root} is not a rank of a {}-rank communicator",
                self.size
            )));
        }
        let seq = self.next_seq();
        let _span = tracing::debug_span!("bcast", seq, %algo, root, bytes = buf.len()).entered();
        if self.size == 1 {
            return Ok(());
        }
        let resolved = self.bcast_tree(algo, buf.len(), false)?;
        // The root as the packets name it: its world rank.
        let fp = Fingerprint::bcast_code(self.world(root), buf.len(), resolved.tree_code());
        self.begin(seq, fp)?;
        self.last_model.set(None);
        if self.rank == root {
            return self.bcast_post(seq, fp, buf, resolved);
        }
        self.bcast_take(seq, fp, root, buf, resolved)
    }

    /// Levels of the tree a bcast of `len` bytes from `root` takes under
    /// `algo` on this communicator: the most hops from the root to any
    /// rank, host-aware trees included (on the job's hosts). `None` for a
    /// worm scheme, an algorithm this communicator refuses, a root outside
    /// it, or a tree other than a chain shape on a sub-communicator.
    pub fn bcast_depth(&self, root: usize, len: usize, algo: Algorithm) -> Option<usize> {
        if root >= self.size {
            return None;
        }
        if self.size == 1 {
            return Some(0);
        }
        let resolved = self.bcast_tree(algo, len, false).ok()?;
        match (resolved.tree()?, &self.group) {
            (TreeKind::Chain(_), _) | (_, None) => {
                resolved.bcast_depth_on(root, self.size, self.cfg.topology.as_ref(), self.hosts())
            }
            (_, Some(_)) => None,
        }
    }

    /// The tree (or worm scheme) of a bcast of `len` bytes under `algo`.
    /// A worm needs the whole job: on a sub-communicator it is refused, or
    /// (`trees_only`) replaced by the `auto` tree.
    pub(super) fn bcast_tree(
        &self,
        algo: Algorithm,
        len: usize,
        trees_only: bool,
    ) -> Result<Resolved, Error> {
        let net = self.net()?;
        let m = self.packet_count(len);
        let algo = self.algorithm_for(algo, self.size, len);
        let medium = self.medium_all();
        let topo = self.cfg.topology.as_ref();
        let resolved = algo.resolve_for(self.size, m, topo, medium)?;
        if let Resolved::Worm(w) = resolved {
            if trees_only {
                let auto = self.algorithm_for(Algorithm::Auto, self.size, len);
                return auto.resolve_for(self.size, m, topo, medium);
            }
            if self.group.is_some() {
                return Err(Error::InvalidArgument(format!(
                    "algorithm {algo}: switch-based worms carry bcasts over the whole \
                     job only; a sub-communicator's bcast takes a tree"
                )));
            }
            net.check_worm(w)?;
        }
        Ok(resolved)
    }

    /// The root's part of bcast `seq` (entered with call `fp`): post `buf`
    /// down `resolved` once every rank has room for it.
    pub(super) fn bcast_post(
        &self,
        seq: u64,
        fp: Fingerprint,
        buf: &[u8],
        resolved: Resolved,
    ) -> Result<(), Error> {
        let net = self.net()?;
        // Room at every rank first (flow control): the root never runs
        // more than a window ahead of the slowest rank.
        let cost = message_cost(buf.len(), self.packet_count(buf.len()));
        let op = || fp.op_name(seq);
        let others = self.others();
        let post = match &others {
            None => Post::Bcast { seq },
            Some(dests) => Post::BcastAmong { seq, dests },
        };
        self.inbox.reserve(post, cost, self.cfg.timeout, &op)?;
        // One small packet to ranks of this host: straight into their rings.
        if let (Resolved::Tree(TreeKind::Chain(shape)), None) = (resolved, &others) {
            if net.bcast_inline(seq, buf, shape) {
                return Ok(());
            }
        }
        let (data, stage) = net.staged(buf);
        let cmd = match resolved {
            Resolved::Worm(worm) => Cmd::Worm {
                kind: Kind::Bcast,
                seq,
                members: Vec::new(),
                data,
                worm,
            },
            Resolved::Tree(tree) => Cmd::Bcast {
                seq,
                data,
                tree,
                among: others.map_or_else(Vec::new, |o| {
                    o.iter()
                        .map(|&r| Member {
                            rank: r as u32,
                            ordinal: 0,
                        })
                        .collect()
                }),
            },
        };
        net.send_filling(cmd, stage)
    }

    /// A receiver's part of bcast `seq` from `root` (entered with call
    /// `fp`): its packets into `buf` as they come.
    pub(super) fn bcast_take(
        &self,
        seq: u64,
        fp: Fingerprint,
        root: usize,
        buf: &mut [u8],
        resolved: Resolved,
    ) -> Result<(), Error> {
        let net = self.net()?;
        let mut stall = self.stall_probe(seq, fp);
        let (me, size) = (self.rank, self.size);
        let topo = self.cfg.topology.as_ref();
        let hosts = self.hosts();
        let world_root = self.world(root);
        let waiting_for = || match &self.group {
            None => bcast_waits_for(root, me, size, resolved, topo, hosts),
            Some(_) => format!(
                "waiting for the packets of the bcast from rank {root} (world rank \
                 {world_root}) of communicator {}",
                self.id()
            ),
        };
        let mut got = 0u64;
        let mut total: Option<u32> = None;
        while total.is_none_or(|t| got < t as u64) {
            for p in self
                .inbox
                .take_bcast(seq, self.cfg.timeout, &waiting_for, &mut stall)?
            {
                // The inbox checked root, length and tree against this call,
                // and header decoding guarantees offset + payload <= msg_len.
                let h = p.header;
                let off = h.offset as usize;
                let dst = buf.get_mut(off..off + p.payload.len()).ok_or_else(|| {
                    Error::Protocol(format!("{}: packet outside the buffer", fp.op_name(seq)))
                })?;
                dst.copy_from_slice(&p.payload);
                got += 1;
                total = Some(h.pkt_count);
            }
        }
        if let Some(s) = self.inbox.take_bcast_model(seq) {
            self.last_model.set(net.model_latency(s));
        }
        net.return_credits();
        Ok(())
    }

    /// Under an emulated fabric: the model latency of the last `bcast` at
    /// this rank (from the root's post to this rank's completion); `None`
    /// at the root, outside a fabric, or before any bcast.
    pub fn last_model_latency(&self) -> Option<ModelLatency> {
        self.last_model.get()
    }

    /// The fabric this job runs on (`mclaunch --fabric`), if any: its spec,
    /// without cost knobs.
    pub fn fabric(&self) -> Option<&str> {
        self.net.as_ref()?.fabric().map(|w| w.spec.as_str())
    }

    /// Broadcast a slice of elements from `root` (typed [`Comm::bcast`]):
    /// every rank passes a slice of the same length; the root's elements
    /// end up in all of them (little-endian on the wire, so ranks of any
    /// byte order agree).
    pub fn bcast_elems<T: Element>(&self, root: usize, buf: &mut [T]) -> Result<(), Error> {
        let mut bytes = if self.rank == root {
            to_bytes(buf)
        } else {
            vec![0u8; buf.len() * T::SIZE]
        };
        self.bcast(root, &mut bytes)?;
        if self.rank != root {
            from_bytes(&bytes, buf, "bcast_elems")?;
        }
        Ok(())
    }

    /// Broadcast any serde value from `root`: on return, every rank's `value`
    /// equals the root's. (Two bcasts: the encoded length, then the bytes.)
    pub fn bcast_value<T: Serialize + DeserializeOwned>(
        &self,
        root: usize,
        value: &mut T,
    ) -> Result<(), Error> {
        let mut bytes = if self.rank == root {
            postcard::to_stdvec(value)
                .map_err(|e| Error::InvalidArgument(format!("cannot encode value: {e}")))?
        } else {
            Vec::new()
        };
        let mut len = (bytes.len() as u64).to_le_bytes();
        self.bcast(root, &mut len)?;
        let len = u64::from_le_bytes(len);
        if len > MAX_VALUE_BYTES {
            return Err(Error::Protocol(format!("bcast_value of {len} bytes")));
        }
        bytes.resize(len as usize, 0);
        self.bcast(root, &mut bytes)?;
        if self.rank != root {
            *value = postcard::from_bytes(&bytes).map_err(|e| Error::Mismatch {
                op: "bcast_value".into(),
                detail: format!("the root's value does not decode as this rank's type: {e}"),
            })?;
        }
        Ok(())
    }
}
