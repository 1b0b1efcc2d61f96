//! Rank s sends 10·s + d to rank d: every rank gets a column of the matrix.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/alltoall`

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let (r, n) = (comm.rank() as i64, comm.size() as i64);
    let send: Vec<i64> = (0..n).map(|d| 10 * r + d).collect();
    let mut recv = vec![0i64; send.len()];
    comm.alltoall(&send, &mut recv)?;
    println!("rank {r}: sent {send:?}, alltoall gave {recv:?}");
    comm.finalize()
}
