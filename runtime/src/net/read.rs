//! Reading from a link: packet framing on a byte stream, the silence timer
//! that declares a quiet peer lost, payload reads without extra copies, and
//! the reader task of a mesh link that is not TCP (a Unix-domain socket,
//! QUIC; TCP links are read by `tcprx`).

use std::sync::Arc;
use std::time::Duration;

use bytes::BufMut;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::intake::{Host, Intake};
use super::link::{Ambient, Link, Links};
use super::mesh::Mesh;
use crate::bufpool::POOL;
use crate::outq::SHUTDOWN_FLUSH;
use crate::shm::Shm;
use crate::wire::{Header, Kind, Packet, Route, ShmDesc, FLAG_SHM, HEADER_LEN};

/// The read half of a connection (TCP or Unix-domain).
pub(crate) type Rd = Box<dyn AsyncRead + Unpin + Send>;

/// Why a read from a peer stopped.
pub(crate) enum ReadFail {
    Io(std::io::Error),
    Silent,
}

/// Declares a peer silent when nothing has come from it for `within`.
///
/// One timer per connection, pushed back lazily: a completed read only
/// notes the time, and when the timer fires early it is re-armed for the
/// real deadline (a timer per read cost a timer-wheel insertion and removal
/// for every packet).
pub(crate) struct Silence {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    heard: tokio::time::Instant,
    within: Duration,
    /// Nothing has come yet: until the first packet, silence counts for
    /// this long instead of `within` (see [`Silence::until_first`]).
    first: Option<Duration>,
}

impl Silence {
    pub(crate) fn new(within: Duration) -> Silence {
        let now = tokio::time::Instant::now();
        Silence {
            sleep: Box::pin(tokio::time::sleep_until(now + within)),
            heard: now,
            within,
            first: None,
        }
    }

    /// Until the peer's first packet, allow it `first` instead: a peer
    /// starts beating only once its own start-up is done (its whole mesh
    /// connected), which with many ranks comes seconds after ours.
    pub(crate) fn until_first(mut self, first: Duration) -> Silence {
        self.first = Some(first);
        let due = self.heard + first;
        self.sleep.as_mut().reset(due);
        self
    }

    /// Whether anything has come from the peer yet.
    pub(crate) fn heard_any(&self) -> bool {
        self.first.is_none()
    }

    /// Something arrived.
    pub(crate) fn heard(&mut self) {
        self.heard = tokio::time::Instant::now();
        // The first packet: the timer, armed for the start-up allowance,
        // is re-armed for the bound (later ones push it back lazily).
        if self.first.take().is_some() {
            self.sleep.as_mut().reset(self.heard + self.within);
        }
    }

    /// From now on, silence for `within` counts.
    pub(crate) fn allow(&mut self, within: Duration) {
        self.within = within;
    }

    /// Run `read` to its end, unless the peer goes silent first. (`read`
    /// need not be cancel-safe: it is dropped only when the peer is given up.)
    pub(crate) async fn guard<T>(
        &mut self,
        read: impl std::future::Future<Output = std::io::Result<T>>,
    ) -> Result<T, ReadFail> {
        tokio::pin!(read);
        loop {
            tokio::select! {
                biased;
                r = &mut read => return r.map_err(ReadFail::Io),
                _ = self.sleep.as_mut() => {
                    let due = self.heard + self.first.unwrap_or(self.within);
                    if tokio::time::Instant::now() >= due {
                        return Err(ReadFail::Silent);
                    }
                    self.sleep.as_mut().reset(due);
                }
            }
        }
    }
}

/// Read exactly `n` bytes into `buf`'s spare capacity (no zeroing first;
/// a large payload bypasses the reader's buffer, so it is copied only once).
pub(crate) async fn read_payload<R: AsyncReadExt + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    n: usize,
) -> std::io::Result<()> {
    while buf.len() < n {
        let want = n - buf.len();
        if r.read_buf(&mut (&mut *buf).limit(want)).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
    }
    Ok(())
}

/// Where a reader puts what a peer sends besides its own buffers.
pub(super) struct Landing {
    /// The host's arenas, to open the peer's shared-memory descriptors
    /// with: only on a link to a rank of this host that mapped them; a
    /// descriptor from anyone else is a protocol violation.
    pub(super) desc: Option<Arc<Shm>>,
    /// This rank's own arena, if it has one: a large payload from any peer
    /// (another host's too) is read straight into a slot of it, so that
    /// forwarding it to the ranks of this host costs a descriptor, not a
    /// copy into each ring, and no heap buffer is allocated (and its pages
    /// faulted in anew) per packet.
    pub(super) arena: Option<Arc<Shm>>,
}

impl Landing {
    /// For a link of `kind`, given the host's arenas (`shm`, if this rank
    /// has them).
    pub(super) fn on(kind: Link, shm: Option<&Arc<Shm>>) -> Landing {
        let desc = match kind {
            Link::Unix | Link::Ring => shm.cloned(),
            Link::Tcp | Link::Quic | Link::Fabric => None,
        };
        Landing {
            desc,
            arena: shm.cloned(),
        }
    }
}

/// Why no packet came out of a stream.
pub(crate) enum Stop {
    /// The stream failed or went silent.
    Read(ReadFail),
    /// The peer broke the protocol: its bytes no longer line up.
    Violation(String),
}

/// Read the next packet of a byte stream (header, route, payload), with its
/// wire flags; `check` vets the header before the rest is read and returns
/// the sender's rank. With `arena` (this host's shared memory), a large
/// payload is read straight into a slot of this rank's arena when there is
/// room: forwarding it to a rank of this host then costs a descriptor, not
/// a copy into the ring and another out of it.
pub(crate) async fn next_packet<R: AsyncRead + Unpin>(
    r: &mut R,
    silence: &mut Silence,
    check: impl FnOnce(&Header) -> Result<usize, String>,
    arena: Option<&Arc<Shm>>,
) -> Result<(usize, Packet, u8), Stop> {
    let mut hb = [0u8; HEADER_LEN];
    silence
        .guard(r.read_exact(&mut hb))
        .await
        .map_err(Stop::Read)?;
    silence.heard();
    let (header, flags) = Header::decode_flagged(&hb)
        .map_err(|e| Stop::Violation(format!("malformed header: {e}")))?;
    let from = check(&header).map_err(Stop::Violation)?;
    let mut rb = vec![0u8; header.route_len as usize];
    silence
        .guard(r.read_exact(&mut rb))
        .await
        .map_err(Stop::Read)?;
    let route = Route::decode(header.route_kind, &rb)
        .map_err(|e| Stop::Violation(format!("malformed route header: {e}")))?;
    let n = header.payload_len as usize;
    let payload = match arena.and_then(|a| a.slot(n)) {
        Some(mut slot) => {
            silence
                .guard(r.read_exact(slot.buf()))
                .await
                .map_err(Stop::Read)?;
            slot.into_bytes()
        }
        // Without a slot: a kept buffer if one fits (a fresh one of
        // 256 KiB would be faulted in page by page, every packet).
        None => {
            let mut payload = POOL.take(n);
            silence
                .guard(read_payload(r, &mut payload, n))
                .await
                .map_err(Stop::Read)?;
            POOL.freeze(payload)
        }
    };
    silence.heard();
    let packet = Packet {
        header,
        route,
        payload,
    };
    Ok((from, packet, flags))
}

/// Why a peer whose read failed with `f` is lost, `heard_any` saying
/// whether anything ever came from it, under the silence bound and the
/// bound before its first packet.
pub(super) fn lost_reason(
    f: ReadFail,
    heard_any: bool,
    (failure_timeout, first): (Duration, Duration),
) -> String {
    match f {
        ReadFail::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "connection closed without goodbye (process died?)".to_string()
        }
        // A process that ends with bytes unread resets its connections (a
        // forgotten `Comm` at exit, say).
        ReadFail::Io(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            "connection reset without goodbye (process died?)".to_string()
        }
        ReadFail::Io(e) => format!("connection failed: {e}"),
        ReadFail::Silent if !heard_any => {
            format!("nothing from it for {first:?} after connecting (hung in start-up?)")
        }
        ReadFail::Silent => {
            format!("no data and no heartbeat for {failure_timeout:?} (hung or unreachable)")
        }
    }
}

/// The reader's buffer: many small packets per read system call, while a
/// payload larger than this is read straight into its own buffer.
pub(super) const READ_BUFFER: usize = 16 * 1024;

/// Read packets from `peer` until its connection ends.
pub(super) async fn reader(
    peer: usize,
    rd: Rd,
    links: Arc<Mesh>,
    intake: Intake,
    (failure_timeout, first): (Duration, Duration),
    landing: Landing,
) {
    let mut r = tokio::io::BufReader::with_capacity(READ_BUFFER, rd);
    // A peer that broke the protocol is cut off like a dead one: its bytes can
    // no longer be trusted to line up.
    let violation = |what: String| {
        let why = format!("protocol violation: {what}");
        intake.inbox().lost(peer, why)
    };
    // Until the peer's first packet (its writer beats at once, but only
    // when its own mesh is complete), silence counts for the start-up bound.
    let mut silence = Silence::new(failure_timeout).until_first(first);
    loop {
        let check = |h: &_| intake.check(h, Some(peer));
        let next = next_packet(&mut r, &mut silence, check, landing.arena.as_ref()).await;
        // What the peer put in its ring came before anything its socket says.
        if let Some(rings) = links.rings() {
            rings.drain_from(peer);
        }
        let (from, packet, flags) = match next {
            Ok(x) => x,
            Err(Stop::Violation(what)) => return violation(what),
            Err(Stop::Read(f)) => {
                let reason = lost_reason(f, silence.heard_any(), (failure_timeout, first));
                return links.broken(peer, reason);
            }
        };
        let data = |host: &dyn Host, p: Packet| {
            let p = if flags == FLAG_SHM {
                open_shm(p, landing.desc.as_ref())?
            } else {
                p
            };
            host.engine_in(from, p, Ambient::Idle)
                .map_err(|e| format!("bad packet: {e}"))
        };
        match intake.dispatch(from, packet, data) {
            // No heartbeats follow a goodbye; the close comes soon.
            Ok(Kind::Bye) => silence.allow(SHUTDOWN_FLUSH.max(failure_timeout)),
            Ok(_) => {}
            Err(e) => return violation(e),
        }
    }
}

/// Turn a packet whose payload is a shared-memory descriptor back into one
/// with the payload itself (pointing into the owner's arena).
pub(super) fn open_shm(mut p: Packet, shm: Option<&Arc<Shm>>) -> Result<Packet, String> {
    let h = &mut p.header;
    let b = match shm {
        Some(s) => ShmDesc::decode(&p.payload)
            .map_err(|e| e.to_string())
            .and_then(|d| s.open_desc(&d))?,
        None => return Err("a shared-memory descriptor on a link without one".into()),
    };
    // The same bound `Header::decode` puts on inline payloads.
    let fits = h
        .offset
        .checked_add(b.len() as u64)
        .is_some_and(|e| e <= h.msg_len);
    if !fits {
        return Err(format!(
            "shared-memory payload of {} bytes at offset {} of a {}-byte message",
            b.len(),
            h.offset,
            h.msg_len
        ));
    }
    h.payload_len = b.len() as u32;
    p.payload = b;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Kind, ShmDesc};
    use bytes::BytesMut;

    /// A payload from any peer lands in this rank's arena (so a leader
    /// forwards another host's data to its host as descriptors), but only a
    /// peer of this host may send descriptors.
    #[test]
    fn every_link_lands_large_payloads_in_the_arena_and_only_host_links_open_descriptors() {
        let shm = crate::shm::tests::one_host(2, 1 << 20).swap_remove(0);
        for kind in [Link::Tcp, Link::Quic, Link::Fabric, Link::Unix, Link::Ring] {
            let l = Landing::on(kind, Some(&shm));
            assert!(l.arena.is_some(), "{kind:?}: no arena to read into");
            let host = matches!(kind, Link::Unix | Link::Ring);
            assert_eq!(l.desc.is_some(), host, "{kind:?}: descriptors");
            let none = Landing::on(kind, None);
            assert!(none.arena.is_none() && none.desc.is_none());
        }
    }

    fn packet(len: usize) -> (Vec<u8>, Vec<u8>) {
        let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let header = Header::new(Kind::Bcast, 9, 4, 1, 1, len as u64);
        let p = Packet {
            header,
            route: Route::None,
            payload: bytes::Bytes::from(payload.clone()),
        };
        let mut wire = BytesMut::new();
        p.encode_head(&mut wire);
        wire.extend_from_slice(&payload);
        (wire.to_vec(), payload)
    }

    async fn read(wire: &[u8], arena: Option<&Arc<Shm>>) -> Packet {
        let mut silence = Silence::new(Duration::from_secs(5));
        let mut r = wire;
        match next_packet(&mut r, &mut silence, |_| Ok(1), arena).await {
            Ok((_, p, _)) => p,
            Err(_) => panic!("no packet"),
        }
    }

    #[test]
    fn a_large_payload_is_read_into_the_arena_and_a_small_one_is_not() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let hosts = crate::shm::tests::one_host(2, 1 << 20);
        let describe = |p: &Packet| -> Option<ShmDesc> { hosts[0].describe(&p.payload, 1) };
        let (wire, payload) = packet(100_000);
        let p = rt.block_on(read(&wire, Some(&hosts[0])));
        assert_eq!(&p.payload[..], &payload[..]);
        let d = describe(&p).expect("read into the arena");
        hosts[0].undo(&d, 1);
        let p = rt.block_on(read(&wire, None));
        assert_eq!(&p.payload[..], &payload[..]);
        assert!(describe(&p).is_none());
        let (wire, payload) = packet(100);
        let p = rt.block_on(read(&wire, Some(&hosts[0])));
        assert_eq!(&p.payload[..], &payload[..]);
        assert!(describe(&p).is_none());
    }
}
