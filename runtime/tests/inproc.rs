//! Ranks as threads of one process, with a minimal rendezvous: exercises the
//! real TCP driver and engine without mclaunch. (Whole-process tests through
//! mclaunch live in the workspace root's tests/.)

use std::time::Duration;

use mcast::{Algorithm, Comm, Error, Forwarding};

mod common;
use common::{pattern, run};

#[test]
fn bcast_all_roots_algorithms_sizes() {
    for fw in [Forwarding::Fpfs, Forwarding::Fcfs] {
        run(
            5,
            |c| {
                c.packet_bytes = 100;
                c.shm_packet_bytes = 100;
                c.forwarding = fw;
            },
            |comm| {
                let mut case = 0;
                for root in 0..comm.size() {
                    for algo in Algorithm::ALL
                        .into_iter()
                        .chain([Algorithm::KBinomial { k: Some(2) }])
                    {
                        for len in [0usize, 1, 99, 100, 101, 307, 5000] {
                            case += 1;
                            let want = pattern(case, len);
                            let mut buf = if comm.rank() == root {
                                want.clone()
                            } else {
                                vec![0; len]
                            };
                            comm.bcast_with(root, &mut buf, algo)?;
                            assert!(buf == want, "root {root} {algo} len {len}");
                        }
                    }
                }
                comm.finalize()
            },
        );
    }
}

#[test]
fn multicast_subsets_and_order() {
    run(
        4,
        |c| {
            c.packet_bytes = 64;
            c.shm_packet_bytes = 64;
        },
        |comm| {
            let me = comm.rank();
            // Source 0 sends three multicasts to {1,3}, then one to {2}; source 3 to {1}.
            if me == 0 {
                comm.multicast(&[], b"nothing")?;
                assert!(matches!(
                    comm.multicast(&[0], b"self"),
                    Err(Error::InvalidArgument(_))
                ));
                assert!(matches!(
                    comm.multicast(&[1, 0], b"self"),
                    Err(Error::InvalidArgument(_))
                ));
                assert!(matches!(
                    comm.multicast(&[3, 1, 1], b"dup"),
                    Err(Error::InvalidArgument(_))
                ));
                for i in 0..3u8 {
                    comm.multicast(&[3, 1], &[i; 200])?;
                }
                comm.multicast(&[2], b"two")?;
            }
            if me == 3 {
                comm.multicast(&[1], b"from three")?;
            }
            match me {
                1 => {
                    let mut from0 = Vec::new();
                    let mut from3 = 0;
                    for _ in 0..4 {
                        let r = comm.recv_multicast()?;
                        if r.source == 0 {
                            from0.push(r.data[0]);
                            assert_eq!(r.data.len(), 200);
                        } else {
                            assert_eq!(r.source, 3);
                            assert_eq!(&r.data[..], b"from three");
                            from3 += 1;
                        }
                    }
                    assert_eq!(from0, vec![0, 1, 2]);
                    assert_eq!(from3, 1);
                }
                2 => assert_eq!(&comm.recv_multicast()?.data[..], b"two"),
                3 => {
                    for i in 0..3u8 {
                        let r = comm.recv_multicast()?;
                        assert_eq!((r.source, r.data[0]), (0, i));
                    }
                }
                _ => {}
            }
            assert!(matches!(
                comm.multicast(&[9], b"x"),
                Err(Error::InvalidArgument(_))
            ));
            assert!(matches!(
                comm.bcast(4, &mut [0u8; 3]),
                Err(Error::InvalidArgument(_))
            ));
            comm.finalize()
        },
    );
}

/// Run one mismatched collective on `n` ranks: `call` makes this rank's
/// (mismatched) call. Every rank must get `Error::Mismatch` containing `what`,
/// from that call or, if it had already returned (a bcast root), from its next
/// call; every later collective must fail the same way.
fn mismatch_everywhere<F>(n: usize, what: &'static str, call: F)
where
    F: Fn(&Comm) -> Result<(), Error> + Send + Sync + 'static,
{
    run(
        n,
        |c| {
            c.timeout = Duration::from_secs(30);
            c.probe_after = Duration::from_millis(50);
        },
        move |comm| {
            let first = call(&comm);
            let err = match first {
                Err(e) => e,
                Ok(()) => comm
                    .barrier()
                    .expect_err("the next call reports the mismatch"),
            };
            match &err {
                Error::Mismatch { detail, .. } => {
                    assert!(detail.contains(what), "rank {}: {err}", comm.rank())
                }
                other => panic!("rank {}: expected a mismatch, got {other}", comm.rank()),
            }
            let mut b = [0u8; 4];
            assert!(matches!(comm.bcast(0, &mut b), Err(Error::Mismatch { .. })));
            assert!(matches!(comm.finalize(), Err(Error::Mismatch { .. })));
            Ok(())
        },
    );
}

#[test]
fn mismatched_lengths_are_reported_everywhere() {
    mismatch_everywhere(3, "bytes", |comm| {
        let mut buf = vec![1u8; if comm.rank() == 2 { 10 } else { 20 }];
        comm.bcast(0, &mut buf)
    });
}

#[test]
fn mismatched_roots_are_reported_everywhere() {
    mismatch_everywhere(4, "root", |comm| {
        let root = if comm.rank() == 3 { 1 } else { 0 };
        comm.bcast(root, &mut [5u8; 100])
    });
}

#[test]
fn roots_naming_each_other_do_not_hang() {
    // No rank thinks it is the root, so no data flows: only the probes can
    // find this one.
    mismatch_everywhere(2, "root", |comm| {
        let other = 1 - comm.rank();
        comm.bcast(other, &mut [0u8; 8])
    });
}

#[test]
fn mismatched_algorithms_are_reported_everywhere() {
    mismatch_everywhere(5, "algorithm", |comm| {
        let algo = if comm.rank() == 4 {
            Algorithm::Flat
        } else {
            Algorithm::Binomial
        };
        comm.bcast_with(0, &mut [9u8; 64], algo)
    });
}

#[test]
fn different_collectives_are_reported_everywhere() {
    mismatch_everywhere(3, "called", |comm| {
        if comm.rank() == 1 {
            comm.barrier()
        } else {
            comm.bcast(0, &mut [1u8; 16])
        }
    });
}

#[test]
fn same_tree_under_different_names_is_not_a_mismatch() {
    // `auto` on 4 ranks and 10 bytes resolves to some tree (on one host's
    // shared-memory rings the flat tree, else a k-binomial tree); naming
    // that tree explicitly is the same call.
    run(
        4,
        |_| {},
        |comm| {
            let auto = comm
                .algorithm_for(Algorithm::Auto, 4, 10)
                .resolve_for(4, 1, None, comm.medium())?
                .tree();
            let named = match auto {
                Some(mcast::algorithm::TreeKind::Chain(mcast_algorithms::Shape::KBinomial {
                    k,
                })) => Algorithm::KBinomial { k: Some(k) },
                Some(mcast::algorithm::TreeKind::Chain(mcast_algorithms::Shape::Flat)) => {
                    Algorithm::Flat
                }
                other => panic!("auto resolved to {other:?}"),
            };
            let algo = if comm.rank() == 2 {
                named
            } else {
                Algorithm::Auto
            };
            let mut buf = [comm.rank() as u8; 10];
            comm.bcast_with(1, &mut buf, algo)?;
            assert_eq!(buf, [1u8; 10]);
            comm.finalize()
        },
    );
}

#[test]
fn bcast_value_round_trips() {
    run(
        3,
        |_| {},
        |comm| {
            let mut v: (String, Vec<u32>) = if comm.rank() == 1 {
                ("hi".into(), vec![1, 2, 3])
            } else {
                Default::default()
            };
            comm.bcast_value(1, &mut v)?;
            assert_eq!(v, ("hi".to_string(), vec![1, 2, 3]));
            comm.finalize()
        },
    );
}

/// Ranks of one host meet on Unix-domain sockets by default and on TCP with
/// `MCAST_TRANSPORT=tcp`; both carry a multi-packet bcast intact.
#[test]
fn same_host_peers_use_unix_sockets_unless_told_tcp() {
    for transport in [mcast::Transport::Auto, mcast::Transport::Tcp] {
        run(
            3,
            move |c| {
                c.transport = transport;
                c.packet_bytes = 1000;
                c.shm_packet_bytes = 1000;
            },
            move |comm| {
                let want = match transport {
                    mcast::Transport::Auto | mcast::Transport::Quic => mcast::Link::Ring,
                    mcast::Transport::Tcp => mcast::Link::Tcp,
                    mcast::Transport::QuicAll => mcast::Link::Quic,
                };
                let medium = match transport {
                    mcast::Transport::Auto | mcast::Transport::Quic => mcast::Medium::SharedMemory,
                    mcast::Transport::Tcp | mcast::Transport::QuicAll => mcast::Medium::Network,
                };
                assert_eq!(comm.medium(), medium);
                for peer in 0..comm.size() {
                    let got = comm.link_to(peer);
                    let expect = (peer != comm.rank()).then_some(want);
                    assert_eq!(got, expect, "rank {} to {peer}", comm.rank());
                }
                let mut buf = if comm.rank() == 1 {
                    pattern(7, 10_000)
                } else {
                    vec![0; 10_000]
                };
                comm.bcast(1, &mut buf)?;
                assert_eq!(buf, pattern(7, 10_000));
                comm.finalize()
            },
        );
    }
}

/// The NI forwards without its host: in a chain 0 → 1 → 2, rank 1's host is
/// busy elsewhere (not in mcast) until rank 2 has the whole message, so rank 1's
/// NI must have forwarded every packet on its own (the background thread
/// takes over the NI when the host is away).
#[test]
fn a_busy_host_does_not_stall_forwarding() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static RANK2_DONE: AtomicBool = AtomicBool::new(false);
    run(
        3,
        |c| {
            c.packet_bytes = 4096;
            c.shm_packet_bytes = 4096;
        },
        |comm| {
            let len = 100_000;
            let mut buf = if comm.rank() == 0 {
                pattern(3, len)
            } else {
                vec![0; len]
            };
            let algo = mcast::Algorithm::Chain;
            match comm.rank() {
                1 => {
                    // "Compute" until rank 2 is done, bounded by 20 s.
                    let start = std::time::Instant::now();
                    while !RANK2_DONE.load(Ordering::Acquire) {
                        assert!(
                            start.elapsed() < Duration::from_secs(20),
                            "rank 2 never got the message while rank 1's host was busy"
                        );
                        std::thread::yield_now();
                    }
                    comm.bcast_with(0, &mut buf, algo)?;
                }
                2 => {
                    comm.bcast_with(0, &mut buf, algo)?;
                    RANK2_DONE.store(true, Ordering::Release);
                }
                _ => comm.bcast_with(0, &mut buf, algo)?,
            }
            assert_eq!(buf, pattern(3, len));
            comm.finalize()
        },
    );
}

/// Large payloads between ranks of one host go through the shared-memory
/// arenas, also when an arena is too small for the traffic (then they go
/// inline); either way every byte arrives, and no arena file is left behind.
#[test]
fn shared_memory_arenas_carry_large_payloads_and_leave_nothing_behind() {
    let mine = |name: &str| name.starts_with(&format!("mcast-{}-", std::process::id()));
    for arena in [64 << 20, 150_000, 0] {
        run(
            4,
            move |c| {
                c.shm_bytes = arena;
                c.packet_bytes = 32 * 1024;
                c.shm_packet_bytes = 32 * 1024;
            },
            move |comm| {
                for (i, len) in [1usize, 20_000, 100_000, 1 << 20, 3 << 20]
                    .iter()
                    .enumerate()
                {
                    let root = i % comm.size();
                    let mut buf = if comm.rank() == root {
                        pattern(i, *len)
                    } else {
                        vec![0; *len]
                    };
                    comm.bcast(root, &mut buf)?;
                    assert_eq!(buf, pattern(i, *len), "arena {arena}, {len} bytes");
                }
                // A multicast of a large payload to a subset.
                if comm.rank() == 1 {
                    comm.multicast(&[0, 3], &pattern(99, 500_000))?;
                } else if comm.rank() != 2 {
                    let got = comm.recv_multicast()?;
                    assert_eq!((got.source, &got.data[..]), (1, &pattern(99, 500_000)[..]));
                }
                let sent = comm.shm_packets_sent();
                if arena == 0 {
                    assert_eq!(sent, 0, "rank {}: no arena, no descriptors", comm.rank());
                } else if comm.rank() == 0 {
                    // Rank 0 was root of two large bcasts.
                    assert!(sent > 0, "arena {arena}: rank 0 sent no descriptor");
                }
                comm.finalize()
            },
        );
        let left: Vec<String> = std::fs::read_dir("/dev/shm")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| mine(n))
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "arena files left behind: {left:?}");
    }
}

/// A large payload a rank has not taken yet (a one-packet multicast)
/// holds its slot in the sender's arena; the sender's later payloads still
/// go through the arena around it, not inline.
#[test]
fn a_payload_left_untaken_does_not_push_later_ones_out_of_the_arena() {
    const ROUNDS: usize = 10;
    run(
        2,
        |c| {
            // Room for the untaken payload and about one bcast beside it.
            c.shm_bytes = 2 << 20;
            c.packet_bytes = 256 * 1024;
            c.shm_packet_bytes = 256 * 1024;
        },
        |comm| {
            let kept = pattern(7, 200_000);
            if comm.rank() == 0 {
                comm.multicast(&[1], &kept)?;
            }
            comm.barrier()?;
            let before = comm.shm_packets_sent();
            for i in 0..ROUNDS {
                let mut buf = if comm.rank() == 0 {
                    pattern(i, 1 << 20)
                } else {
                    vec![0; 1 << 20]
                };
                comm.bcast(0, &mut buf)?;
                assert_eq!(buf, pattern(i, 1 << 20), "round {i}");
                comm.barrier()?;
            }
            if comm.rank() == 0 {
                // Four packets of 256 KiB per bcast, each a descriptor.
                let sent = comm.shm_packets_sent() - before;
                assert_eq!(sent, 4 * ROUNDS as u64, "descriptors for {ROUNDS} bcasts");
            } else {
                let got = comm.recv_multicast()?;
                assert_eq!((got.source, &got.data[..]), (0, &kept[..]));
            }
            comm.finalize()
        },
    );
}

/// A program may call mcast from inside its own tokio runtime (a blocking
/// call, like any blocking I/O there): the NI is then driven from a helper
/// thread instead of the caller's.
#[test]
fn calls_from_inside_a_tokio_runtime_work() {
    run(
        3,
        |_| {},
        |comm| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                let mut buf = if comm.rank() == 2 {
                    pattern(5, 300_000)
                } else {
                    vec![0; 300_000]
                };
                comm.bcast(2, &mut buf)?;
                assert_eq!(buf, pattern(5, 300_000));
                comm.barrier()
            })?;
            comm.finalize()
        },
    );
}
