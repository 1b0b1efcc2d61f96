//! Fuzz the shared-memory ring's reader (`mcast::ring`): whatever bytes a
//! peer writes into its ring, in whatever pieces, and whatever tail index it
//! publishes, the reader takes whole packets (decoding the arena descriptor
//! of each flagged one) or gives the stream up with an error: never a
//! panic, never a read outside the ring. Byte 0 says where to cut the
//! input in two writes, bytes 1-2 how far past the data the tail points.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let cut = (head[0] as usize * rest.len() / 255).min(rest.len());
    let skew = u16::from_le_bytes([head[1], head[2]]) as u64;
    let (a, b) = rest.split_at(cut);
    let _ = mcast::ring::fuzz_stream(&[a, b], skew);
});
