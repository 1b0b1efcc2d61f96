//! Rank 0 multicasts to the odd ranks only; they receive it, the others
//! are not addressed.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/multicast`

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let odd: Vec<usize> = (1..comm.size()).step_by(2).collect();
    if comm.rank() == 0 {
        comm.multicast(&odd, b"to the odd ranks")?;
        println!("rank 0: multicast to {odd:?}");
    } else if odd.contains(&comm.rank()) {
        let m = comm.recv_multicast()?;
        let text = String::from_utf8_lossy(&m.data);
        println!("rank {}: from rank {}: {text:?}", comm.rank(), m.source);
    } else {
        println!("rank {}: not addressed", comm.rank());
    }
    comm.finalize()
}
