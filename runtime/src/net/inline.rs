//! The root's fast path for a small bcast on one host's rings: the
//! engine plans, the driver writes the caller's bytes into each child's
//! ring (ARCHITECTURE "Shared-memory rings").

use mcast_algorithms::Shape;

use super::Net;
use crate::sync::lock;

impl Net {
    /// The root's fast path for a small bcast over the world whose every
    /// child is reached through a shared-memory ring: the engine plans it
    /// (the packet's header and the children with their routes:
    /// [`crate::engine::NiEngine::bcast_source_plan`]), and the packet goes into each
    /// child's ring straight from `buf`, without a `Packet`, a copy of the
    /// payload or the engine's action queue. The ring bytes are those the
    /// general path writes, so the receivers (and their engines, which
    /// forward it) cannot tell. `false`, with nothing sent, where it does
    /// not apply (more than one packet, a payload that would travel as an
    /// arena descriptor, a child not on a ring): take the general path.
    pub(crate) fn bcast_inline(&self, seq: u64, buf: &[u8], shape: Shape) -> bool {
        if buf.is_empty() || buf.len() >= crate::shm::SHM_MIN_PAYLOAD || self.is_closed() {
            return false;
        }
        let links = &self.sh.links;
        let (header, children) = {
            let mut eng = lock(&self.sh.engine);
            let Ok(Some((header, children))) = eng.bcast_source_plan(seq, buf.len(), shape) else {
                return false;
            };
            if !children.iter().all(|&(to, _)| links.inline_to(to)) {
                return false;
            }
            eng.sent_copies(children.len());
            (header, children)
        };
        // Sent outside the engine's lock, as `with_engine` does.
        for (to, route) in children.iter() {
            links.send_inline(*to, header, route, buf);
        }
        // Only the rings took bytes here: what waits for room there needs
        // the NI to come back for it (the sockets' queues are not this
        // call's, and locking each to look costs more than the sends).
        if links.rings().is_some_and(|r| !r.flushed()) {
            self.drive.tick();
        }
        true
    }
}
