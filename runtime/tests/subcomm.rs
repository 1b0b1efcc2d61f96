//! Sub-communicators (`split`, `dup`): ranks as threads of one process over
//! the real TCP driver. Every collective, bcast, multicast and
//! point-to-point call on a sub-communicator, with ranks numbered in it.

use mcast::{Comm, Error, Op};

mod common;
use common::{pattern, run};

/// The sum of `world` ranks' values `f(w)`.
fn sum(world: &[usize], f: impl Fn(usize) -> i64) -> i64 {
    world.iter().map(|&w| f(w)).sum()
}

/// Every kind of call on `c`, checked against what its members (world
/// ranks `world`, in the communicator's order) must get.
fn exercise(c: &Comm, world: &[usize]) -> Result<(), Error> {
    let (me, n) = (c.rank(), c.size());
    assert_eq!(n, world.len());
    assert_eq!(c.world_rank(me), Some(world[me]));
    // Reductions and data movement, in the communicator's numbering.
    let mut v = [world[me] as i64, 1];
    c.allreduce(&mut v, Op::Sum)?;
    assert_eq!(v, [sum(world, |w| w as i64), n as i64]);
    let mut got = vec![0u64; n];
    c.allgather(&[world[me] as u64], &mut got)?;
    assert_eq!(got, world.iter().map(|&w| w as u64).collect::<Vec<_>>());
    let mut s = [1i32];
    c.scan(&mut s, Op::Sum)?;
    assert_eq!(s[0], me as i32 + 1);
    for root in 0..n {
        let mut buf = if me == root {
            pattern(root, 3000)
        } else {
            vec![0; 3000]
        };
        c.bcast(root, &mut buf)?;
        assert_eq!(buf, pattern(root, 3000), "bcast from rank {root}");
    }
    let mut r = [world[me] as f64];
    c.reduce(n - 1, &mut r, Op::Max)?;
    if me == n - 1 {
        assert_eq!(r[0], *world.iter().max().unwrap() as f64);
    }
    c.barrier()?;
    // Point-to-point around the communicator's ring.
    if n > 1 {
        c.send((me + 1) % n, 5, &[me as u8; 7])?;
        let m = c.recv(None, Some(5))?;
        assert_eq!(m.source, (me + n - 1) % n);
        assert_eq!(&m.data[..], &[m.source as u8; 7]);
        // Multicast from the last rank to the others.
        if me == n - 1 {
            let dests: Vec<usize> = (0..n - 1).collect();
            c.multicast(&dests, b"sub")?;
        } else {
            let got = c.recv_multicast()?;
            assert_eq!((got.source, &got.data[..]), (n - 1, &b"sub"[..]));
        }
    }
    Ok(())
}

#[test]
fn split_into_odd_and_even_ranks() {
    run(
        5,
        |_| {},
        |world| {
            let me = world.rank();
            let sub = world.split(Some(me as u32 % 2), me as i32)?.unwrap();
            let members: Vec<usize> = (0..5).filter(|r| r % 2 == me % 2).collect();
            assert_eq!(sub.rank(), me / 2);
            assert_ne!(sub.id(), 0);
            // A message on the world and one on the sub-communicator, with
            // the same tag to the same rank: each is received on its own.
            let to = (me + 2) % 5;
            world.send(to, 9, b"world")?;
            if members.contains(&to) {
                let local = members.iter().position(|&r| r == to).unwrap();
                sub.send(local, 9, b"sub")?;
            }
            exercise(&sub, &members)?;
            let from = (me + 3) % 5;
            if members.contains(&from) {
                let m = sub.recv(None, Some(9))?;
                assert_eq!((&m.data[..], members[m.source]), (&b"sub"[..], from));
            }
            let m = world.recv(None, Some(9))?;
            assert_eq!((&m.data[..], m.source), (&b"world"[..], from));
            // The world goes on after its sub-communicator's calls.
            exercise(&world, &[0, 1, 2, 3, 4])?;
            sub.finalize()?;
            world.finalize()
        },
    );
}

#[test]
fn none_colours_and_reversed_keys() {
    run(
        4,
        |_| {},
        |world| {
            let me = world.rank();
            // Rank 0 stays out; the others reverse their order.
            let color = (me != 0).then_some(7);
            let sub = world.split(color, -(me as i32))?;
            match sub {
                None => assert_eq!(me, 0),
                Some(sub) => {
                    assert_eq!(sub.size(), 3);
                    assert_eq!(sub.rank(), 3 - me);
                    exercise(&sub, &[3, 2, 1])?;
                }
            }
            // A dup of the world: the same ranks, apart calls.
            let dup = world.dup()?;
            assert_eq!((dup.rank(), dup.size()), (me, 4));
            exercise(&dup, &[0, 1, 2, 3])?;
            // Splits of a split: ids stay apart at every rank.
            let half = dup.split(Some(me as u32 / 2), 0)?.unwrap();
            let quarter = half.split(Some(0), 0)?.unwrap();
            assert_ne!(half.id(), dup.id());
            assert_ne!(quarter.id(), half.id());
            let pair = [me / 2 * 2, me / 2 * 2 + 1];
            exercise(&quarter, &pair)?;
            world.finalize()
        },
    );
}

#[test]
fn collectives_run_concurrently_on_two_sub_communicators() {
    run(
        4,
        |_| {},
        |world| {
            let a = world.dup()?;
            let b = world.dup()?;
            // b's calls run on another thread while a's run here.
            let other = std::thread::spawn(move || -> Result<(), Error> {
                for i in 0..20 {
                    let mut v = [i as i64];
                    b.allreduce(&mut v, Op::Sum)?;
                    assert_eq!(v[0], 4 * i as i64);
                    let mut buf = vec![i as u8; 5000];
                    b.bcast(i % 4, &mut buf)?;
                }
                Ok(())
            });
            for i in 0..20 {
                let mut v = [i as f64, 1.0];
                a.allreduce(&mut v, Op::Max)?;
                assert_eq!(v, [i as f64, 1.0]);
                a.barrier()?;
            }
            other.join().unwrap()?;
            world.finalize()
        },
    );
}

#[test]
fn bad_arguments_on_a_sub_communicator() {
    run(
        3,
        |_| {},
        |world| {
            let sub = world.split(Some(0), 0)?.unwrap();
            // Ranks are the sub-communicator's: 3 is out of range here.
            assert!(matches!(
                sub.send(3, 0, b"x"),
                Err(Error::InvalidArgument(_))
            ));
            let mut b = [0u8; 4];
            assert!(matches!(
                sub.bcast(3, &mut b),
                Err(Error::InvalidArgument(_))
            ));
            world.finalize()
        },
    );
}

/// One step of a random program on a sub-communicator.
#[derive(Debug, Clone)]
enum Step {
    Allreduce(usize),
    Bcast { root: usize, len: usize },
    Allgather(usize),
    Alltoall(usize),
    Scan,
    ReduceScatter(usize),
    Gather { root: usize, len: usize },
    Barrier,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        (0usize..600).prop_map(Step::Allreduce),
        (0usize..8, 0usize..9000).prop_map(|(root, len)| Step::Bcast { root, len }),
        (0usize..300).prop_map(Step::Allgather),
        (0usize..50).prop_map(Step::Alltoall),
        Just(Step::Scan),
        (0usize..40).prop_map(Step::ReduceScatter),
        (0usize..8, 0usize..100).prop_map(|(root, len)| Step::Gather { root, len }),
        Just(Step::Barrier),
    ]
}

/// Run `steps` on `c`, whose members are world ranks `world` (in its
/// order), checking each result against a local computation.
fn program(c: &Comm, world: &[usize], steps: &[Step]) -> Result<(), Error> {
    let (me, n) = (c.rank(), c.size());
    let val = |w: usize, i: usize| (w as i64 + 1) * 1000 + i as i64;
    for (k, s) in steps.iter().enumerate() {
        match *s {
            Step::Allreduce(len) => {
                let mut v: Vec<i64> = (0..len).map(|i| val(world[me], i)).collect();
                c.allreduce(&mut v, Op::Sum)?;
                let want: Vec<i64> = (0..len).map(|i| sum(world, |w| val(w, i))).collect();
                assert_eq!(v, want, "step {k}");
            }
            Step::Bcast { root, len } => {
                let root = root % n;
                let mut b = if me == root {
                    pattern(k, len)
                } else {
                    vec![0; len]
                };
                c.bcast(root, &mut b)?;
                assert_eq!(b, pattern(k, len), "step {k}");
            }
            Step::Allgather(len) => {
                let mine: Vec<u32> = (0..len).map(|i| val(world[me], i) as u32).collect();
                let mut all = vec![0u32; n * len];
                c.allgather(&mine, &mut all)?;
                let want: Vec<u32> = world
                    .iter()
                    .flat_map(|&w| (0..len).map(move |i| val(w, i) as u32))
                    .collect();
                assert_eq!(all, want, "step {k}");
            }
            Step::Alltoall(len) => {
                // Block d of rank s: s * 100 + d, repeated.
                let send: Vec<u16> = (0..n * len).map(|i| (me * 100 + i / len) as u16).collect();
                let mut recv = vec![0u16; n * len];
                c.alltoall(&send, &mut recv)?;
                let want: Vec<u16> = (0..n * len).map(|i| (i / len * 100 + me) as u16).collect();
                assert_eq!(recv, want, "step {k}");
            }
            Step::Scan => {
                let mut v = [world[me] as u64];
                c.scan(&mut v, Op::Sum)?;
                assert_eq!(v[0], world[..=me].iter().sum::<usize>() as u64, "step {k}");
            }
            Step::ReduceScatter(len) => {
                let send: Vec<i32> = (0..n * len).map(|i| (world[me] + i) as i32).collect();
                let mut recv = vec![0i32; len];
                c.reduce_scatter(&send, &mut recv, Op::Max)?;
                let top = *world.iter().max().unwrap();
                let want: Vec<i32> = (0..len).map(|i| (top + me * len + i) as i32).collect();
                assert_eq!(recv, want, "step {k}");
            }
            Step::Gather { root, len } => {
                let root = root % n;
                let mine = vec![world[me] as u8; len];
                let mut all = if me == root {
                    vec![0u8; n * len]
                } else {
                    Vec::new()
                };
                c.gather(root, &mine, &mut all)?;
                if me == root {
                    let want: Vec<u8> = world.iter().flat_map(|&w| vec![w as u8; len]).collect();
                    assert_eq!(all, want, "step {k}");
                }
            }
            Step::Barrier => c.barrier()?,
        }
    }
    Ok(())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..Default::default()
    })]

    /// Random colours (some `None`) and keys, then a random program on
    /// each sub-communicator, then one on the world: every result checked.
    #[test]
    fn random_programs_on_random_sub_communicators(
        n in 1usize..=5,
        colors in proptest::collection::vec(proptest::option::weighted(0.85, 0u32..3), 5),
        keys in proptest::collection::vec(-3i32..3, 5),
        steps in proptest::collection::vec(step(), 1..6),
        world_steps in proptest::collection::vec(step(), 0..3),
    ) {
        run(n, |_| {}, move |world| {
            let me = world.rank();
            let sub = world.split(colors[me], keys[me])?;
            match (colors[me], sub) {
                (None, None) => {}
                (Some(color), Some(sub)) => {
                    let mut members: Vec<(i32, usize)> = (0..n)
                        .filter(|&r| colors[r] == Some(color))
                        .map(|r| (keys[r], r))
                        .collect();
                    members.sort();
                    let members: Vec<usize> = members.into_iter().map(|(_, r)| r).collect();
                    assert_eq!(sub.world_rank(sub.rank()), Some(me));
                    program(&sub, &members, &steps)?;
                }
                (c, s) => panic!("colour {c:?} gave {s:?}"),
            }
            let all: Vec<usize> = (0..n).collect();
            program(&world, &all, &world_steps)?;
            world.finalize()
        });
    }
}
