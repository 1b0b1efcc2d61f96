//! A non-blocking allreduce overlapped with computation: every rank starts
//! `iallreduce`, works while it progresses, then waits for the sum.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/nonblocking`

use mcast::Op;

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let me = comm.rank();
    let mut req = comm.iallreduce(vec![me as u64 + 1; 1000], Op::Sum)?;
    // Work that does not need the result, while the request progresses.
    let mut work = 0u64;
    let mut polls = 0u64;
    while !req.test()? {
        work = work.wrapping_mul(6364136223846793005).wrapping_add(1);
        polls += 1;
    }
    let sum = req.wait()?;
    std::hint::black_box(work);
    println!(
        "rank {me}: iallreduce sum = {} (tested {polls} times before it completed)",
        sum[0]
    );
    comm.finalize()
}
