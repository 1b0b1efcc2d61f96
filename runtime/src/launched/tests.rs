use super::*;
use std::collections::HashMap;

fn detect_in(pairs: &[(&str, &str)]) -> Result<Launch, Error> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    detect(&|k: &str| m.get(k).cloned())
}

/// What srun --mpi=pmi2 -N3 -n6 gave task 4 on the test cluster (Slurm 22.05).
const SRUN_PMI2: &[(&str, &str)] = &[
    ("SLURM_JOB_ID", "12"),
    ("SLURM_JOBID", "12"),
    ("SLURM_STEP_ID", "0"),
    ("SLURM_PROCID", "4"),
    ("SLURM_LOCALID", "0"),
    ("SLURM_NODEID", "2"),
    ("SLURM_NTASKS", "6"),
    ("SLURM_NPROCS", "6"),
    ("SLURM_STEP_NUM_TASKS", "6"),
    ("SLURM_STEP_NODELIST", "h[1-3]"),
    ("SLURM_STEP_TASKS_PER_NODE", "2(x3)"),
    ("SLURM_LAUNCH_NODE_IPADDR", "10.77.0.254"),
    ("SLURM_SRUN_COMM_HOST", "10.77.0.254"),
    ("PMI_FD", "11"),
    ("PMI_JOBID", "12.0"),
    ("PMI_RANK", "4"),
    ("PMI_SIZE", "6"),
];

#[test]
fn an_srun_task_with_pmi2() {
    let Launch::Slurm(s) = detect_in(SRUN_PMI2).unwrap() else {
        panic!("not a Slurm step")
    };
    assert_eq!((s.rank, s.size, s.local_rank, s.node_index), (4, 6, 0, 2));
    assert_eq!(s.nodes, ["h1", "h2", "h3"]);
    assert_eq!((s.job_id.as_str(), s.step_id.as_str()), ("12", "0"));
    assert_eq!(
        s.bootstrap,
        Bootstrap::Pmi2 {
            fd: 11,
            jobid: "12.0".into()
        }
    );
    assert_eq!(s.toward(), Some("10.77.0.254".parse().unwrap()));
}

#[test]
fn mclaunch_wins_over_slurm() {
    let mut env = SRUN_PMI2.to_vec();
    env.push(("MCAST_RANK", "1"));
    assert_eq!(detect_in(&env).unwrap(), Launch::Mclaunch);
}

fn without_pmi(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut env: Vec<_> = SRUN_PMI2
        .iter()
        .copied()
        .filter(|(k, _)| !k.starts_with("PMI_"))
        .collect();
    for (k, v) in extra {
        env.retain(|(a, _)| a != k);
        env.push((k, v));
    }
    env
}

#[test]
fn plain_srun_with_many_tasks_meets_at_task_0s_rendezvous() {
    let Launch::Slurm(s) = detect_in(&without_pmi(&[("SLURM_JOB_UID", "1000")])).unwrap() else {
        panic!("not a Slurm step")
    };
    assert_eq!(
        s.bootstrap,
        Bootstrap::Rendezvous {
            host: "h1".into(),
            port: 20192,
            token: "srun-12.0-uid1000".into()
        }
    );
    let set = without_pmi(&[(ENV_RENDEZVOUS_PORT, "4242"), ("SLURM_JOB_ID", "x")]);
    let Launch::Slurm(s) = detect_in(&set).unwrap() else {
        panic!("not a Slurm step")
    };
    assert!(matches!(
        s.bootstrap,
        Bootstrap::Rendezvous { port: 4242, .. }
    ));
    // What cannot work says what was tried.
    for (env, says) in [
        (
            without_pmi(&[(ENV_RENDEZVOUS_PORT, "0")]),
            "MCAST_RENDEZVOUS_PORT=0",
        ),
        (without_pmi(&[("SLURM_JOB_ID", "x")]), "SLURM_JOB_ID=\"x\""),
        (
            without_pmi(&[("SLURM_PROCID", "0"), ("SLURM_NODEID", "1")]),
            "not on its first node h1",
        ),
    ] {
        let e = detect_in(&env).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("srun with 6 tasks"), "{e}");
    }
    let mut no_nodes = without_pmi(&[]);
    no_nodes.retain(|(k, _)| !k.ends_with("NODELIST"));
    let e = detect_in(&no_nodes).unwrap_err().to_string();
    assert!(e.contains("SLURM_STEP_NODELIST is unset"), "{e}");
}

#[test]
fn rendezvous_ports_differ_by_job_and_step_and_avoid_ephemeral_ports() {
    assert_eq!(rendezvous_port(0, 0), 20000);
    assert_eq!(rendezvous_port(12, 0), 20192);
    assert_eq!(rendezvous_port(12, 1), 20193);
    assert_eq!(rendezvous_port(13, 0), 20208);
    assert_eq!(rendezvous_port(750, 0), 20000); // 16 × 750 = 12000 wraps
    for (job, step) in [
        (1, 2),
        (99_999, 15),
        (u64::MAX, u64::MAX),
        (4_294_967_295, 0),
    ] {
        let p = rendezvous_port(job, step);
        assert!((20000..32000).contains(&p), "{job}.{step}: {p}");
    }
}

#[test]
fn plain_srun_with_one_task_is_a_single_rank() {
    let env = [
        ("SLURM_JOB_ID", "3"),
        ("SLURM_STEP_ID", "0"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "1"),
        ("SLURM_STEP_NODELIST", "h1"),
    ];
    let Launch::Slurm(s) = detect_in(&env).unwrap() else {
        panic!()
    };
    assert_eq!((s.rank, s.size, s.bootstrap), (0, 1, Bootstrap::Alone));
}

#[test]
fn the_step_size_wins_over_the_allocation_size() {
    let env = [
        ("SLURM_STEP_ID", "1"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "6"),
        ("SLURM_STEP_NUM_TASKS", "1"),
    ];
    let Launch::Slurm(s) = detect_in(&env).unwrap() else {
        panic!()
    };
    assert_eq!(s.size, 1);
    // SLURM_NPROCS alone (older Slurm).
    let env = [
        ("SLURM_STEP_ID", "1"),
        ("SLURM_PROCID", "2"),
        ("SLURM_NPROCS", "3"),
        ("PMI_FD", "5"),
    ];
    let Launch::Slurm(s) = detect_in(&env).unwrap() else {
        panic!()
    };
    assert_eq!((s.rank, s.size), (2, 3));
}

#[test]
fn a_batch_script_or_salloc_shell_is_a_single_rank() {
    // sbatch -n2: SLURM_PROCID but no SLURM_STEP_ID; salloc -n2: neither.
    let batch = [
        ("SLURM_JOB_ID", "4"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "2"),
        ("SLURM_NPROCS", "2"),
    ];
    assert_eq!(detect_in(&batch).unwrap(), Launch::Single);
    assert_eq!(
        detect_in(&[("SLURM_NTASKS", "2"), ("SLURM_NPROCS", "2")]).unwrap(),
        Launch::Single
    );
    assert_eq!(detect_in(&[]).unwrap(), Launch::Single);
}

#[test]
fn mpirun_and_mpiexec_are_refused() {
    for env in [
        vec![("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "4")],
        vec![("PMI_RANK", "1"), ("PMI_SIZE", "4"), ("PMI_FD", "7")],
        // mpirun inside salloc: its daemons are srun tasks, whose step
        // variables its processes inherit (seen on the test cluster).
        vec![
            ("OMPI_COMM_WORLD_SIZE", "6"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "3"),
        ],
    ] {
        let e = detect_in(&env).unwrap_err().to_string();
        assert!(e.contains("launch mcast programs with mclaunch or"), "{e}");
        assert!(!e.contains("srun with"), "{e}");
    }
    // One process is a single rank.
    assert_eq!(
        detect_in(&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "1")]).unwrap(),
        Launch::Single
    );
}

#[test]
fn bad_values_are_errors() {
    for env in [
        vec![
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "x"),
            ("SLURM_NTASKS", "2"),
        ],
        vec![
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "2"),
            ("SLURM_NTASKS", "2"),
        ],
        vec![
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("PMI_FD", "-1"),
        ],
        vec![
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("PMI_FD", "3"),
            ("PMI_RANK", "1"),
        ],
        vec![
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("PMI_FD", "3"),
            ("SLURM_STEP_NODELIST", "h[3-1]"),
        ],
    ] {
        assert!(detect_in(&env).is_err(), "{env:?}");
    }
}

#[test]
fn toward_falls_back_to_a_first_node_written_as_an_address() {
    let env = [
        ("SLURM_STEP_ID", "0"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "2"),
        ("PMI_FD", "3"),
        ("SLURM_STEP_NODELIST", "10.0.0.7"),
    ];
    let Launch::Slurm(s) = detect_in(&env).unwrap() else {
        panic!()
    };
    assert_eq!(s.toward(), Some("10.0.0.7".parse().unwrap()));
}

/// Config::from_lookup over the same environments.
mod config {
    use crate::config::*;
    use crate::launched::Bootstrap;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, crate::Error> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    /// A task of `srun --mpi=pmi2 -N3 -n6` (task 4, on the third node).
    const SRUN: &[(&str, &str)] = &[
        ("SLURM_JOB_ID", "12"),
        ("SLURM_STEP_ID", "0"),
        ("SLURM_PROCID", "4"),
        ("SLURM_NTASKS", "6"),
        ("SLURM_NODEID", "2"),
        ("SLURM_STEP_NODELIST", "h[1-3]"),
        ("SLURM_LAUNCH_NODE_IPADDR", "10.77.0.254"),
        ("PMI_FD", "11"),
        ("PMI_JOBID", "12.0"),
        ("PMI_RANK", "4"),
        ("PMI_SIZE", "6"),
    ];

    #[test]
    fn an_srun_task_joins_through_pmi2() {
        let j = cfg(SRUN).unwrap().job.unwrap();
        assert_eq!((j.rank, j.size), (4, 6));
        assert!(j.token.is_empty() && j.rendezvous.is_empty());
        assert_eq!(j.bind_toward, Some("10.77.0.254".parse().unwrap()));
        let s = j.slurm.unwrap();
        assert_eq!(s.nodes, ["h1", "h2", "h3"]);
        assert!(matches!(s.bootstrap, Bootstrap::Pmi2 { fd: 11, .. }));
        // MCAST_BIND set: listen there.
        let mut env = SRUN.to_vec();
        env.push((ENV_BIND, "10.1.2.3"));
        let c = cfg(&env).unwrap();
        assert_eq!(c.bind.as_deref(), Some("10.1.2.3"));
        assert_eq!(c.job.unwrap().bind_toward, None);
        // mclaunch wins.
        let mut env = SRUN.to_vec();
        env.extend([
            (ENV_RANK, "1"),
            (ENV_SIZE, "2"),
            (ENV_RENDEZVOUS, "127.0.0.1:9"),
            (ENV_TOKEN, "t"),
        ]);
        let j = cfg(&env).unwrap().job.unwrap();
        assert_eq!((j.rank, j.size, j.slurm), (1, 2, None));
    }

    #[test]
    fn srun_without_pmi_meets_on_the_first_node_and_a_fabric_is_refused() {
        let env: Vec<_> = SRUN
            .iter()
            .copied()
            .filter(|(k, _)| !k.starts_with("PMI_"))
            .collect();
        let j = cfg(&env).unwrap().job.unwrap();
        assert_eq!(j.rendezvous, "h1:20192");
        assert_eq!(j.token, "srun-12.0-uid");
        let mut env = SRUN.to_vec();
        env.push((ENV_FABRIC, "127.0.0.1:1"));
        assert!(cfg(&env).is_err());
    }
}
