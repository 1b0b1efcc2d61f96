//! A job of ranks as threads gives back every descriptor it opened once its
//! communicators are dropped: a program that starts and ends many jobs in
//! one process (a test suite, a service) must not run out of them. Its own
//! test binary: no other test opens descriptors meanwhile.

use std::time::{Duration, Instant};

use mcast::Transport;

mod common;
use common::{pattern, run};

fn open_fds() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| match std::fs::read_link(e.path()) {
                    Ok(p) => p.display().to_string(),
                    Err(_) => "?".into(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A 3-rank job over `transport`: a bcast through shared memory (where
/// the transport has it), a small one from another root, a barrier.
fn one_job(transport: Transport) {
    run(
        3,
        |c| c.transport = transport,
        |comm| {
            let want = pattern(7, 20_000);
            let mut buf = match comm.rank() {
                0 => want.clone(),
                _ => vec![0; want.len()],
            };
            comm.bcast(0, &mut buf)?;
            assert!(buf == want, "rank {}: the bcast's bytes", comm.rank());
            let mut small = [comm.rank() as u8; 8];
            comm.bcast(1, &mut small)?;
            assert_eq!(small, [1; 8], "rank {}: the second bcast", comm.rank());
            comm.barrier()
        },
    );
}

#[test]
fn jobs_give_their_descriptors_back() {
    // The first jobs open what lives as long as the process (globals made
    // on first use).
    for t in [Transport::Auto, Transport::Tcp] {
        one_job(t);
    }
    let before = open_fds().len();
    for _ in 0..3 {
        for t in [Transport::Auto, Transport::Tcp] {
            one_job(t);
        }
    }
    // Each rank's NI thread ends before its `Comm` drop returns, but the
    // test's rendezvous thread may still hold its sockets: look again
    // until the count is down, for at most 10 s.
    let end = Instant::now() + Duration::from_secs(10);
    let mut now = open_fds();
    while now.len() > before && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
        now = open_fds();
    }
    assert!(
        now.len() <= before,
        "{} descriptors open after six more jobs, {before} before: {now:?}",
        now.len()
    );
}
