//! The QG versus dual-path / multipath / column-path table: mean phases, link
//! visits, additional traffic, network-level latency and the arrival-time
//! coefficient of variation on a 16×16 mesh, 100 seeded random multicasts for
//! each of k = 16, 32, 64 destinations, under the paper's contention-free
//! model (T_s = 33, β = 1, L = 64 flits, preparation DP 2, MP 2, CP 4, QG 16).
//!
//! `cargo run -p mcast-algorithms --release --example qg_table`

use mcast_algorithms::mesh::compare::{compare, markdown};
use mcast_algorithms::mesh::{Mesh, MeshAlgorithm, MeshCost};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mesh = Mesh::new(&[16, 16])?;
    let cost = MeshCost::paper(64.0);
    let mut rows = Vec::new();
    for (i, k) in [16usize, 32, 64].into_iter().enumerate() {
        rows.extend(compare(
            &mesh,
            &MeshAlgorithm::ALL,
            k,
            100,
            100 + i as u64,
            &cost,
        )?);
    }
    println!("16x16 mesh, 100 random multicasts per k (seeds 100, 101, 102), L = 64 flits");
    print!("{}", markdown(&rows));
    Ok(())
}
