//! The even and the odd ranks each form a communicator (`split`); within
//! each, an allreduce of the world ranks and a bcast from its rank 0.
//! `cargo build --examples && target/debug/mclaunch -n 4 target/debug/examples/split`

use mcast::Op;

fn main() -> Result<(), mcast::Error> {
    let world = mcast::init()?;
    let me = world.rank();
    let half = world
        .split(Some(me as u32 % 2), me as i32)?
        .expect("every rank passed a colour");
    let mut sum = [me as u64];
    half.allreduce(&mut sum, Op::Sum)?;
    let mut word = [0u8; 17];
    if half.rank() == 0 {
        word.copy_from_slice(format!("from world rank {}", me % 10).as_bytes());
    }
    half.bcast(0, &mut word)?;
    println!(
        "rank {me}: rank {} of {} in communicator {}; sum of its world ranks = {}; bcast: {}",
        half.rank(),
        half.size(),
        half.id(),
        sum[0],
        String::from_utf8_lossy(&word)
    );
    drop(half);
    world.finalize()
}
