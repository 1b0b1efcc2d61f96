//! Every rank contributes its rank number; every rank gets the sum.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/allreduce`

use mcast::Op;

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let mut v = [comm.rank() as f64, 1.0];
    comm.allreduce(&mut v, Op::Sum)?;
    println!("rank {}: allreduce sum = {v:?}", comm.rank());
    comm.finalize()
}
