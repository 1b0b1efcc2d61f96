//! Rank 0 deals one block of two values to each rank.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/scatter`

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let send: Vec<u16> = if comm.rank() == 0 {
        (0..2 * comm.size() as u16).map(|x| x * 100).collect()
    } else {
        Vec::new() // only the root's send buffer is read
    };
    let mut mine = [0u16; 2];
    comm.scatter(0, &send, &mut mine)?;
    println!("rank {}: scatter gave {mine:?}", comm.rank());
    comm.finalize()
}
