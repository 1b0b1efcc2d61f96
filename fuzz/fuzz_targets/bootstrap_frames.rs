//! Fuzz the control-plane frames of the rendezvous and the peer handshake
//! (`mcast::bootstrap::read_frame` into `Hello`, `RendezvousReply` and
//! `PeerHello`): never a panic, never an allocation beyond the frame bound
//! (a hostile length prefix is refused before anything is allocated), and an
//! accepted frame round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcast::bootstrap::{read_frame, write_frame, Hello, PeerHello, RendezvousReply};

fn check<T>(data: &[u8])
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let mut r = data;
    if let Ok(v) = read_frame::<_, T>(&mut r) {
        let mut out = Vec::new();
        write_frame(&mut out, &v).expect("re-encode");
        let mut again = &out[..];
        assert_eq!(read_frame::<_, T>(&mut again).ok(), Some(v));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 3 {
        0 => check::<Hello>(rest),
        1 => check::<RendezvousReply>(rest),
        _ => check::<PeerHello>(rest),
    }
});
