//! Fuzz what mcast reads from Slurm: the PMI-2 server's replies
//! (`mcast::pmi2::parse_len` on the 6-byte length, `parse_body` on the
//! rest, `unhex` on values) and Slurm's hostlists (`mcast::hostlist::expand`,
//! e.g. `SLURM_STEP_NODELIST`): never a panic, and an expansion within its
//! caps. The first byte picks the decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick % 3 {
        0 => {
            if let Some(head) = rest.get(..6) {
                let head: [u8; 6] = head.try_into().unwrap();
                let _ = mcast::pmi2::parse_len(&head);
            }
            let _ = mcast::pmi2::parse_body(rest);
        }
        1 => {
            let _ = mcast::pmi2::unhex(&String::from_utf8_lossy(rest));
        }
        _ => {
            if let Ok(names) = mcast::hostlist::expand(&String::from_utf8_lossy(rest)) {
                assert!(names.len() as u64 <= mcast::hostlist::MAX_NAMES);
            }
        }
    }
});
