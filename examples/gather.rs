//! Each rank's two values, gathered at rank 0 in rank order.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/gather`

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let r = comm.rank() as u32;
    let mut all = vec![0u32; if r == 0 { 2 * comm.size() } else { 0 }];
    comm.gather(0, &[r, r * r], &mut all)?;
    if r == 0 {
        println!("rank 0: gathered {all:?}");
    } else {
        println!("rank {r}: sent [{r}, {}]", r * r);
    }
    comm.finalize()
}
