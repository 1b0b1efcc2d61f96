//! A token passed around the ring with tagged point-to-point messages:
//! rank 0 starts it, each rank adds its number and passes it on.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/send_recv`

const TAG: u32 = 7;

fn main() -> Result<(), mcast::Error> {
    let comm = mcast::init()?;
    let (r, n) = (comm.rank(), comm.size());
    if n == 1 {
        println!("rank 0: alone, nothing to pass");
        return comm.finalize();
    }
    let next = (r + 1) % n;
    let prev = (r + n - 1) % n;
    if r == 0 {
        comm.send(next, TAG, &0u64.to_le_bytes())?;
    }
    let m = comm.recv(Some(prev), Some(TAG))?;
    let token = u64::from_le_bytes(m.data[..].try_into().expect("8 bytes"));
    if r == 0 {
        println!("rank 0: token back from rank {} = {token}", m.source);
    } else {
        comm.send(next, TAG, &(token + r as u64).to_le_bytes())?;
        println!(
            "rank {r}: got {token} from rank {}, passed {}",
            m.source,
            token + r as u64
        );
    }
    comm.finalize()
}
