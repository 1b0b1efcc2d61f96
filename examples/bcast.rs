//! Rank 0 broadcasts a greeting; every rank prints what it has.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/bcast`

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let mut buf = [0u8; 12];
    if comm.rank() == 0 {
        buf.copy_from_slice(b"hello, ranks");
    }
    comm.bcast(0, &mut buf)?;
    println!(
        "rank {}: bcast {:?}",
        comm.rank(),
        String::from_utf8_lossy(&buf)
    );
    comm.finalize()
}
