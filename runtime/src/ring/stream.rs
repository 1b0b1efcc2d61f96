//! The two ends of one ring: the sender's (append what fits, keep the rest)
//! and the owner's (parse the byte stream into packets).

use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};

use super::{Bell, Segment};
use crate::wire::{Header, Packet, Route, HEADER_LEN};

/// The sending end of the ring `me` writes in a peer's segment.
#[derive(Debug)]
pub struct Tx {
    me: usize,
    tail: u64,
    /// The owner's head when last read: it only moves forward, so room
    /// counted from it is never more than there is (the head's line is
    /// read again only when that room looks too small).
    head_seen: u64,
    /// Bytes not yet in the ring, oldest first.
    pending: std::collections::VecDeque<Bytes>,
    scratch: BytesMut,
    /// The owner asked for a poke on its socket (see [`Bell::Poke`]).
    poke: bool,
}

/// What a send left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Everything is in the ring.
    All,
    /// Some bytes wait in the sender's memory (the ring is full).
    Pending,
}

impl Tx {
    /// The sender `me`'s end of its ring in `seg` (the ring must be fresh:
    /// the stream starts at 0).
    pub fn new(me: usize, seg: &Segment) -> Result<Tx, String> {
        if me >= seg.ranks {
            return Err(format!(
                "rank {me} has no ring in a segment of {}",
                seg.ranks
            ));
        }
        let mut tx = Tx {
            me,
            tail: seg.tail(me).load(Ordering::Acquire),
            head_seen: 0,
            pending: Default::default(),
            scratch: BytesMut::new(),
            poke: false,
        };
        tx.room(seg)?;
        Ok(tx)
    }

    /// Whether bytes wait for room.
    pub fn pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Room in the ring now; `Err` if the owner's head is impossible.
    fn room(&mut self, seg: &Segment) -> Result<usize, String> {
        let head = seg.head(self.me).load(Ordering::Acquire);
        let used = self.tail.wrapping_sub(head);
        if used > seg.cap as u64 {
            return Err(format!(
                "ring head {head} is not within {} bytes behind tail {}",
                seg.cap, self.tail
            ));
        }
        self.head_seen = head;
        Ok(seg.cap - used as usize)
    }

    /// Room counted from the head last read, or read again if that is less
    /// than `want`.
    fn room_for(&mut self, seg: &Segment, want: usize) -> Result<usize, String> {
        // `head_seen` was within `cap` behind the tail when read, and the
        // tail has only moved forward by what the room allowed since.
        let room = seg.cap - self.tail.wrapping_sub(self.head_seen) as usize;
        if room >= want {
            return Ok(room);
        }
        self.room(seg)
    }

    /// Append as much of `src` as fits; returns how much went.
    fn write(&mut self, seg: &Segment, src: &[u8], room: &mut usize) -> usize {
        let n = src.len().min(*room);
        if n > 0 {
            seg.put(self.me, self.tail, &src[..n]);
            self.tail = self.tail.wrapping_add(n as u64);
            *room -= n;
        }
        n
    }

    /// Move pending bytes into the ring, as far as `room` allows.
    fn drain_pending(&mut self, seg: &Segment, room: &mut usize) {
        while let Some(front) = self.pending.front_mut() {
            let n = front.len().min(*room);
            if n == 0 {
                break;
            }
            seg.put(self.me, self.tail, &front[..n]);
            self.tail = self.tail.wrapping_add(n as u64);
            *room -= n;
            if n == front.len() {
                self.pending.pop_front();
            } else {
                let _ = front.split_to(n);
            }
        }
    }

    /// Append pending bytes, then `parts`, as far as the ring takes them
    /// (the rest waits here; `keep` are owned copies of `parts` to keep
    /// instead of copying); publish and ring the owner's bell. `Err`: the
    /// owner's ring index is impossible (a protocol violation).
    fn push(
        &mut self,
        seg: &Segment,
        parts: [&[u8]; 2],
        keep: [Option<Bytes>; 2],
    ) -> Result<Sent, String> {
        let before = self.tail;
        if self.pending.is_empty() {
            // The common case: nothing waits and the packet fits whole.
            let total = parts[0].len() + parts[1].len();
            if self.room_for(seg, total)? >= total {
                for part in parts {
                    if !part.is_empty() {
                        seg.put(self.me, self.tail, part);
                        self.tail = self.tail.wrapping_add(part.len() as u64);
                    }
                }
                return Ok(self.publish(seg, before, Sent::All));
            }
        }
        let mut room = self.room(seg)?;
        self.drain_pending(seg, &mut room);
        for (part, owned) in parts.into_iter().zip(keep) {
            if part.is_empty() {
                continue;
            }
            let n = if self.pending.is_empty() {
                self.write(seg, part, &mut room)
            } else {
                0
            };
            if n < part.len() {
                let rest = match owned {
                    Some(b) => b.slice(n..),
                    None => Bytes::copy_from_slice(&part[n..]),
                };
                self.pending.push_back(rest);
            }
        }
        let sent = loop {
            if self.pending.is_empty() {
                break Sent::All;
            }
            // Ask the owner to ring our bell when it frees room, then look
            // once more in case it freed some before it could see the flag.
            seg.waiting(self.me).store(1, Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            room = self.room(seg)?;
            if room == 0 {
                break Sent::Pending;
            }
            self.drain_pending(seg, &mut room);
        };
        Ok(self.publish(seg, before, sent))
    }

    /// Publish what was written since the tail was `before` and ring the
    /// owner's bell; returns `sent`.
    fn publish(&mut self, seg: &Segment, before: u64, sent: Sent) -> Sent {
        if self.tail != before {
            seg.tail(self.me).store(self.tail, Ordering::Release);
            self.poke |= seg.ring_bell() == Bell::Poke;
        }
        sent
    }

    /// Send `p` (its payload as an arena descriptor when `desc` is given).
    pub fn send(
        &mut self,
        seg: &Segment,
        p: &Packet,
        desc: Option<&crate::wire::ShmDesc>,
    ) -> Result<Sent, String> {
        let mut head = std::mem::take(&mut self.scratch);
        head.clear();
        let r = match desc {
            Some(d) => {
                p.encode_head_shm(&mut head, d);
                self.push(seg, [&head, &[]], [None, None])
            }
            None => {
                p.encode_head(&mut head);
                let payload = Some(p.payload.clone()).filter(|b| !b.is_empty());
                self.push(seg, [&head, &p.payload], [None, payload])
            }
        };
        self.scratch = head;
        r
    }

    /// Send the packet with `header`, `route` and `payload`, the payload
    /// borrowed: copied into the ring (or, what does not fit, into the
    /// pending queue). The bytes in the ring are those [`Tx::send`] writes
    /// for the same packet.
    pub fn send_parts(
        &mut self,
        seg: &Segment,
        header: Header,
        route: &Route,
        payload: &[u8],
    ) -> Result<Sent, String> {
        if let Some((b, n)) = crate::wire::encode_head_array(header, route, payload.len()) {
            return self.push(seg, [&b[..n], payload], [None, None]);
        }
        let mut head = std::mem::take(&mut self.scratch);
        head.clear();
        crate::wire::encode_head(header, route, payload.len(), &mut head);
        let r = self.push(seg, [&head, payload], [None, None]);
        self.scratch = head;
        r
    }

    /// Append what waits, if there is room now.
    pub fn flush(&mut self, seg: &Segment) -> Result<Sent, String> {
        if self.pending.is_empty() {
            return Ok(Sent::All);
        }
        self.push(seg, [&[], &[]], [None, None])
    }

    /// Whether the owner must be poked through its socket (once).
    pub fn take_poke(&mut self) -> bool {
        std::mem::take(&mut self.poke)
    }

    /// Forget what waits (the owner is gone).
    pub fn drop_pending(&mut self) {
        self.pending.clear();
    }
}

/// The owner's end of the ring from one sender.
#[derive(Debug, Default)]
pub struct Rx {
    head: u64,
    /// The start of a packet whose end has not arrived yet.
    partial: BytesMut,
    /// Header of `partial`, once decoded: its flags and whole length.
    want: Option<(Header, u8, usize)>,
}

/// A packet taken from a ring, with its wire flags.
pub type Taken = (Packet, u8);

impl Rx {
    /// Take every whole packet now in ring `from` of `seg`, handing each to
    /// `out` after `check` vetted its header (`check` and `out` may refuse:
    /// the stream is then given up). Returns whether any byte was taken and
    /// whether the sender asked to be told about the room (ring its bell).
    pub fn drain(
        &mut self,
        seg: &Segment,
        from: usize,
        check: &mut dyn FnMut(&Header) -> Result<(), String>,
        out: &mut dyn FnMut(Taken) -> Result<(), String>,
    ) -> Result<(bool, bool), String> {
        if from >= seg.ranks {
            return Err(format!("no ring for rank {from}"));
        }
        let mut took = false;
        loop {
            let tail = seg.tail(from).load(Ordering::Acquire);
            let avail = tail.wrapping_sub(self.head);
            if avail > seg.cap as u64 {
                return Err(format!(
                    "ring tail {tail} is not within {} bytes ahead of head {}",
                    seg.cap, self.head
                ));
            }
            if avail == 0 {
                break;
            }
            took = true;
            let avail = avail as usize;
            if self.want.is_none() && self.partial.is_empty() && avail >= HEADER_LEN {
                // Fast path: the header is here; maybe the whole packet.
                let mut hb = [0u8; HEADER_LEN];
                seg.get(from, self.head, &mut hb);
                let (h, flags, total) = header(&hb)?;
                check(&h)?;
                if avail >= total {
                    let p = whole(seg, from, self.head, h, total)?;
                    self.advance(seg, from, total);
                    out((p, flags))?;
                    continue;
                }
                self.want = Some((h, flags, total));
                self.partial.reserve(total);
            }
            // Slow path: collect the packet across several reads.
            let need = match self.want {
                Some((_, _, total)) => total - self.partial.len(),
                None => HEADER_LEN - self.partial.len(),
            };
            let n = need.min(avail);
            let at = self.partial.len();
            self.partial.resize(at + n, 0);
            seg.get(from, self.head, &mut self.partial[at..]);
            self.advance(seg, from, n);
            if self.want.is_none() && self.partial.len() == HEADER_LEN {
                let (h, flags, total) = header(&self.partial)?;
                check(&h)?;
                self.want = Some((h, flags, total));
                self.partial.reserve(total - HEADER_LEN);
            }
            if let Some((h, flags, total)) = self.want {
                if self.partial.len() == total {
                    self.want = None;
                    let b = self.partial.split().freeze();
                    out((assemble(h, b)?, flags))?;
                }
            }
        }
        let ask = took && {
            std::sync::atomic::fence(Ordering::SeqCst);
            seg.waiting(from).swap(0, Ordering::SeqCst) != 0
        };
        Ok((took, ask))
    }

    fn advance(&mut self, seg: &Segment, from: usize, n: usize) {
        self.head = self.head.wrapping_add(n as u64);
        seg.head(from).store(self.head, Ordering::Release);
    }
}

/// The whole packet of `total` bytes at `at` in ring `from` (its header
/// `h` already read): the route decoded from a copy on the stack, the
/// payload read into a buffer of its own, so that the packet owns exactly
/// its payload (no second allocation to share a larger one).
fn whole(seg: &Segment, from: usize, at: u64, h: Header, total: usize) -> Result<Packet, String> {
    let rl = h.route_len as usize;
    let mut rb: smallvec::SmallVec<[u8; 64]> = smallvec::smallvec![0; rl];
    seg.get(from, at.wrapping_add(HEADER_LEN as u64), &mut rb);
    let route =
        Route::decode(h.route_kind, &rb).map_err(|e| format!("malformed route header: {e}"))?;
    let start = HEADER_LEN + rl;
    let n = total - start;
    let mut payload = Vec::with_capacity(n);
    seg.get_uninit(
        from,
        at.wrapping_add(start as u64),
        &mut payload.spare_capacity_mut()[..n],
    );
    // SAFETY: `get_uninit` initialized the first `n` bytes.
    unsafe { payload.set_len(n) };
    Ok(Packet {
        header: h,
        route,
        payload: Bytes::from(payload),
    })
}

/// Decode a header: it, its flags and the packet's whole length.
fn header(hb: &[u8]) -> Result<(Header, u8, usize), String> {
    let (h, flags) = Header::decode_flagged(hb).map_err(|e| format!("malformed header: {e}"))?;
    let total = HEADER_LEN + h.route_len as usize + h.payload_len as usize;
    Ok((h, flags, total))
}

/// The packet whose whole encoding is `b` (header already decoded as `h`).
fn assemble(header: Header, b: Bytes) -> Result<Packet, String> {
    let rl = header.route_len as usize;
    let route = Route::decode(header.route_kind, &b[HEADER_LEN..HEADER_LEN + rl])
        .map_err(|e| format!("malformed route header: {e}"))?;
    Ok(Packet {
        header,
        route,
        payload: b.slice(HEADER_LEN + rl..),
    })
}
