//! Inclusive prefix sum of rank + 1: rank r gets 1 + 2 + ... + (r + 1).
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/scan`

use mcast::Op;

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let mut v = [comm.rank() as f32 + 1.0];
    comm.scan(&mut v, Op::Sum)?;
    println!("rank {}: scan sum = {}", comm.rank(), v[0]);
    comm.finalize()
}
