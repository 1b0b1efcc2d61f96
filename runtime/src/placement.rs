//! Where a rank starts running: spread over the CPUs it may use.
//!
//! A launcher forks every rank of a host from one process, so the kernel
//! starts them all on the CPU that forked them; the load balancer then
//! moves them apart one at a time. Ranks that poll while they wait never
//! sleep, so nothing wakes them onto an idle CPU: on a 2-CPU host, 4 ranks
//! started all on one CPU, ran 3 on it and 1 on the other for the next 100
//! to 150 ms, and in most runs of 1,000 iterations (the OSU default) bcast
//! + barrier took about 7 µs a round instead of 5 (README "Performance").
//!
//! So each rank, once it knows its place among its host's ranks, moves to
//! a CPU of its own (the `index`-th of those it may run on, round-robin, as
//! `mclaunch --bind-to core` places ranks) and then lets itself run
//! anywhere it could before. Its CPU mask ends as it began; only its start
//! changes. A rank bound to one CPU (`--bind-to core`, a cpuset of one)
//! stays where it is.

/// The CPUs the calling thread may run on, in increasing order (empty if
/// the kernel will not say).
pub fn allowed_cpus() -> Vec<usize> {
    match mask() {
        Some(set) => cpus_of(&set),
        None => Vec::new(),
    }
}

fn mask() -> Option<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
            .then_some(set)
    }
}

fn cpus_of(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

/// The set holding only `cpu` (taken modulo `CPU_SETSIZE`).
pub fn cpu_set(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET checks
    // nothing, so `cpu` is kept below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % libc::CPU_SETSIZE as usize, &mut set);
        set
    }
}

/// Let the calling thread run on `set` only: one system call,
/// async-signal-safe (mclaunch binds a rank with it between fork and exec),
/// and an error built from errno without allocating.
pub fn set_mask(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: a valid set of the size passed; 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The CPU the `index`-th rank of a host starts on, among `cpus`: `None`
/// with fewer than two (nothing to spread over).
pub fn start_cpu(cpus: &[usize], index: usize) -> Option<usize> {
    (cpus.len() >= 2).then(|| cpus[index % cpus.len()])
}

/// Move the calling thread onto its start CPU (see the module doc), then
/// give it back the CPUs it had; returns the CPU it moved to. Best effort:
/// `None` if there was nothing to spread over or the kernel refused.
pub(crate) fn spread(index: usize) -> Option<usize> {
    let before = mask()?;
    let cpu = start_cpu(&cpus_of(&before), index)?;
    let one = cpu_set(cpu);
    // The kernel moves the thread onto `cpu` before the first call
    // returns; the second leaves it there, free to go anywhere it could.
    let moved = set_mask(&one).is_ok();
    if set_mask(&before).is_err() {
        tracing::warn!(
            cpu,
            "could not give this rank its CPUs back after placing it"
        );
    }
    moved.then_some(cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_start_round_robin_over_the_allowed_cpus() {
        let cpus = [2, 3, 5];
        let got: Vec<_> = (0..7).map(|i| start_cpu(&cpus, i)).collect();
        assert_eq!(got, [2, 3, 5, 2, 3, 5, 2].map(Some).to_vec());
        assert_eq!(start_cpu(&[4], 1), None, "one CPU: nothing to spread over");
        assert_eq!(start_cpu(&[], 0), None);
    }

    #[test]
    fn spreading_leaves_the_mask_as_it_was() {
        // On a thread of its own: the mask is per thread.
        std::thread::spawn(|| {
            let before = allowed_cpus();
            let got = spread(1);
            assert_eq!(allowed_cpus(), before);
            match start_cpu(&before, 1) {
                Some(c) => {
                    assert_eq!(got, Some(c));
                    // SAFETY: sched_getcpu has no preconditions.
                    let now = unsafe { libc::sched_getcpu() };
                    assert!(now >= 0 && before.contains(&(now as usize)));
                }
                None => assert_eq!(got, None),
            }
        })
        .join()
        .unwrap();
    }
}
