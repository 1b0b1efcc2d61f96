//! Every rank gets every rank's value, in rank order.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/allgather`

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let mut all = vec![0u8; comm.size()];
    comm.allgather(&[b'a' + comm.rank() as u8], &mut all)?;
    println!(
        "rank {}: allgather = {}",
        comm.rank(),
        String::from_utf8_lossy(&all)
    );
    comm.finalize()
}
