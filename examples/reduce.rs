//! The largest rank number, reduced to rank 0 (the others keep their input).
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/reduce`

use mcast::Op;

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let mut v = [comm.rank() as i32 * 10];
    comm.reduce(0, &mut v, Op::Max)?;
    if comm.rank() == 0 {
        println!("rank 0: reduce max = {}", v[0]);
    } else {
        println!("rank {}: sent {}", comm.rank(), v[0]);
    }
    comm.finalize()
}
