//! Every rank contributes the vector 0, 1, 2, ...; rank r gets element r
//! of the sum (size × r).
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/reduce_scatter`

use mcast::Op;

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let send: Vec<u64> = (0..comm.size() as u64).collect();
    let mut mine = [0u64; 1];
    comm.reduce_scatter(&send, &mut mine, Op::Sum)?;
    println!("rank {}: reduce_scatter gave {mine:?}", comm.rank());
    comm.finalize()
}
