//! Non-blocking collectives (`ibcast`, `iallreduce`, `Request`) and the typed
//! bcast: ranks as threads of one process over the real TCP driver.

use std::time::{Duration, Instant};

use mcast::{Error, Op};

mod common;
use common::{pattern, run};

#[test]
fn test_is_false_until_the_root_starts_and_wait_gives_the_data() {
    run(
        3,
        |_| {},
        |c| {
            let me = c.rank();
            if me == 0 {
                // The root starts only once both others have tested.
                for _ in 0..2 {
                    let m = c.recv(None, Some(1))?;
                    assert_eq!(&m.data[..], b"tested");
                }
                let req = c.ibcast(0, pattern(7, 100_000))?;
                assert_eq!(req.wait()?, pattern(7, 100_000));
            } else {
                let mut req = c.ibcast(0, vec![0; 100_000])?;
                assert!(!req.test()?, "complete before the root started");
                c.send(0, 1, b"tested")?;
                // Computation overlapped with the transfer, then the result.
                let t = Instant::now();
                let mut x = 0u64;
                while !req.test()? {
                    x = x.wrapping_mul(31).wrapping_add(1);
                    assert!(t.elapsed() < Duration::from_secs(20), "no progress");
                }
                assert!(req.test()?);
                assert_eq!(req.wait()?, pattern(7, 100_000));
                std::hint::black_box(x);
            }
            c.finalize()
        },
    );
}

#[test]
fn many_requests_outstanding_with_blocking_calls_between() {
    run(
        4,
        |_| {},
        |c| {
            let me = c.rank();
            let dup = c.dup()?;
            let mut sums = Vec::new();
            for i in 0..6 {
                sums.push(c.iallreduce(vec![me as i64 + i; 3], Op::Sum)?);
            }
            let b = dup.ibcast(
                2,
                if me == 2 {
                    pattern(2, 5000)
                } else {
                    vec![0; 5000]
                },
            )?;
            // Blocking calls on the same communicators meanwhile.
            let mut v = [1.0f64];
            c.allreduce(&mut v, Op::Sum)?;
            assert_eq!(v[0], 4.0);
            dup.barrier()?;
            let floats = c.iallreduce(vec![0.1f64 * (me + 1) as f64; 5], Op::Sum)?;
            // Waited for in another order than started.
            assert_eq!(b.wait()?, pattern(2, 5000));
            for (i, r) in sums.into_iter().enumerate().rev() {
                assert_eq!(r.wait()?, vec![6 + 4 * i as i64; 3]);
            }
            // The same bits as the blocking call.
            let mut want = vec![0.1f64 * (me + 1) as f64; 5];
            c.allreduce(&mut want, Op::Sum)?;
            let got = floats.wait()?;
            assert_eq!(
                got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
            drop(dup);
            c.finalize()
        },
    );
}

#[test]
fn a_request_is_a_future_and_bad_arguments_fail_at_once() {
    run(
        2,
        |_| {},
        |c| {
            assert!(matches!(
                c.ibcast(2, vec![1]),
                Err(Error::InvalidArgument(_))
            ));
            assert!(matches!(
                c.iallreduce(vec![1.0f32], Op::BitXor),
                Err(Error::InvalidArgument(_))
            ));
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let req = c.iallreduce(vec![c.rank() as u32 + 1], Op::Prod)?;
            // Awaited in async code, beside another future.
            let got = rt.block_on(async {
                tokio::task::yield_now().await;
                req.await
            })?;
            assert_eq!(got, vec![2]);
            c.finalize()
        },
    );
}

#[test]
fn typed_bcast_of_elements() {
    run(
        3,
        |_| {},
        |c| {
            let want: Vec<f64> = (0..1000).map(|i| i as f64 / 3.0).collect();
            let mut buf = if c.rank() == 1 {
                want.clone()
            } else {
                vec![0.0; 1000]
            };
            c.bcast_elems(1, &mut buf)?;
            assert_eq!(buf, want);
            c.finalize()
        },
    );
}

#[test]
fn every_non_blocking_call_gives_what_its_blocking_twin_gives() {
    run(
        3,
        |_| {},
        |c| {
            let (me, n) = (c.rank(), c.size());
            let mine: Vec<i32> = (0..4).map(|i| (me * 10 + i) as i32).collect();
            // All started at once, waited for at the end.
            let bar = c.ibarrier()?;
            let red = c.ireduce(1, mine.clone(), Op::Max)?;
            let all = c.iallgather(mine.clone())?;
            let a2a = c.ialltoall((0..n * 2).map(|i| (me * 100 + i) as u16).collect())?;
            let scan = c.iscan(mine.clone(), Op::Sum)?;
            let mut want = mine.clone();
            c.reduce(1, &mut want, Op::Max)?;
            assert_eq!(red.wait()?, want);
            let mut want = vec![0i32; 4 * n];
            c.allgather(&mine, &mut want)?;
            assert_eq!(all.wait()?, want);
            let want: Vec<u16> = (0..n * 2)
                .map(|i| (i / 2 * 100 + me * 2 + i % 2) as u16)
                .collect();
            assert_eq!(a2a.wait()?, want);
            let mut want = mine.clone();
            c.scan(&mut want, Op::Sum)?;
            assert_eq!(scan.wait()?, want);
            bar.wait()?;
            assert!(matches!(
                c.ialltoall(vec![1u8; n + 1]),
                Err(Error::InvalidArgument(_))
            ));
            c.finalize()
        },
    );
}
