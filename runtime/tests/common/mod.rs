//! What the in-process tests share: ranks as threads of one process, with
//! a minimal rendezvous (the real TCP driver and engine, without mclaunch).

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use mcast::bootstrap::{self, Hello, RendezvousReply};
use mcast::config::JobEnv;
use mcast::{Comm, Config, Error};

/// Serve one rendezvous for `n` ranks on a free port; returns its address.
pub fn rendezvous(n: usize, token: &str) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let token = token.to_string();
    std::thread::spawn(move || {
        let mut conns = Vec::new();
        let mut addrs = vec![String::new(); n];
        while conns.len() < n {
            let (mut s, _) = l.accept().unwrap();
            let h: Hello = bootstrap::read_frame(&mut s).unwrap();
            assert_eq!(h.token, token);
            addrs[h.rank as usize] = h.data_addr;
            conns.push(s);
        }
        for mut s in conns {
            bootstrap::write_frame(
                &mut s,
                &RendezvousReply::Table {
                    job: bootstrap::job_id_from_token(&token),
                    addrs: addrs.clone(),
                },
            )
            .unwrap();
        }
    });
    addr
}

pub fn run<F>(n: usize, tweak: impl Fn(&mut Config), f: F)
where
    F: Fn(Comm) -> Result<(), Error> + Send + Sync + 'static,
{
    let token = format!("tok{n}");
    let addr = rendezvous(n, &token);
    let f = Arc::new(f);
    let handles: Vec<_> = (0..n)
        .map(|rank| {
            let mut cfg = Config {
                job: Some(JobEnv {
                    rank,
                    size: n,
                    rendezvous: addr.clone(),
                    token: token.clone(),
                    slurm: None,
                    bind_toward: None,
                }),
                timeout: Duration::from_secs(20),
                ..Config::default()
            };
            tweak(&mut cfg);
            let f = f.clone();
            std::thread::spawn(move || -> Result<(), Error> {
                let comm = Comm::with_config(cfg)?;
                f(comm)
            })
        })
        .collect();
    for (r, h) in handles.into_iter().enumerate() {
        h.join()
            .unwrap()
            .unwrap_or_else(|e| panic!("rank {r}: {e}"));
    }
}

pub fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed) as u8)
        .collect()
}
