//! Learning the job before the mesh: the rendezvous (mclaunch's, or task
//! 0's under a plain `srun` step) or PMI-2.
//!
//! Under QUIC (`MCAST_TRANSPORT=quic` or `quic-all`) the rendezvous is
//! mclaunch's and runs over TLS 1.3: the rank presents the certificate of
//! its bundle (`MCAST_QUIC_IDENTITY`) and accepts only the rendezvous
//! certificate of its job's CA (`crate::rendezvous::tls`, `crate::quic::rdv`). A rank in
//! QUIC mode under `srun` without mclaunch, whose rendezvous has no TLS,
//! fails at once.

use std::net::{TcpStream as StdStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::link::io_err;
use crate::bootstrap::{self, Hello, RendezvousReply, PROTOCOL_VERSION};
use crate::config::{Config, JobEnv, ENV_QUIC_IDENTITY};
use crate::error::Error;
use crate::launched::Bootstrap;
use crate::pmi2;
use crate::quic::RankIdentity;

/// Pause between attempts to reach a rendezvous not yet listening.
const RETRY_CONNECT: Duration = Duration::from_millis(100);

/// Learn the job: from mclaunch's rendezvous, or under `srun --mpi=pmi2`
/// through PMI-2 (`crate::pmi2::exchange`, then finalize: the socket is not
/// needed afterwards). Returns (job id, address of every rank, job token);
/// everything after is the same for both. With `tls` (QUIC mode: this
/// rank's identity) the rendezvous must be mclaunch's, over TLS.
pub(crate) fn exchange(
    job: &JobEnv,
    data_addr: &str,
    timeout: Duration,
    tls: Option<&RankIdentity>,
) -> Result<(u32, Vec<String>, String), Error> {
    let bootstrap = job.slurm.as_ref().map(|s| &s.bootstrap);
    if tls.is_some() && bootstrap.is_some() {
        return Err(Error::InvalidArgument(
            "MCAST_TRANSPORT=quic and quic-all need mclaunch (--transport quic or \
             quic-all: its rendezvous runs over TLS); this rank was started by srun \
             without mclaunch, whose rendezvous or PMI-2 exchange is not encrypted"
                .into(),
        ));
    }
    let Some(Bootstrap::Pmi2 { fd, jobid }) = bootstrap else {
        // Plain srun: task 0 serves the rendezvous while it registers too.
        let _server = match bootstrap {
            Some(Bootstrap::Rendezvous { port, token, .. }) if job.rank == 0 => Some(
                crate::rendezvous::Server::serve_step(*port, job.size, token, timeout)?,
            ),
            _ => None,
        };
        let (id, addrs) = rendezvous(job, data_addr, timeout, tls)?;
        return Ok((id, addrs, job.token.clone()));
    };
    let fail = |e: pmi2::Pmi2Error| {
        Error::Protocol(format!(
            "mcast: joining the srun step as task {} of {} through PMI-2 (PMI_FD={fd}) failed: {e}",
            job.rank, job.size
        ))
    };
    let started = Instant::now();
    let mut client = pmi2::inherited(*fd)
        .and_then(|s| pmi2::Client::init(s, jobid, job.rank, timeout))
        .map_err(fail)?;
    if client.size != job.size {
        return Err(fail(pmi2::Pmi2Error::Malformed(format!(
            "the PMI server says {} tasks, Slurm's environment {}",
            client.size, job.size
        ))));
    }
    let (token, addrs) = pmi2::exchange(&mut client, data_addr).map_err(fail)?;
    if let Err(e) = client.finalize() {
        tracing::debug!("PMI-2 finalize: {e}");
    }
    tracing::debug!(
        "PMI-2: {} addresses in {:?}",
        addrs.len(),
        started.elapsed()
    );
    Ok((bootstrap::job_id_from_token(&token), addrs, token))
}

/// Register with the rendezvous, over TLS with `tls` (this rank's
/// identity); returns (job id, address of every rank).
pub(crate) fn rendezvous(
    job: &JobEnv,
    data_addr: &str,
    timeout: Duration,
    tls: Option<&RankIdentity>,
) -> Result<(u32, Vec<String>), Error> {
    let addr = job
        .rendezvous
        .to_socket_addrs()
        .map_err(|e| io_err(&format!("resolving rendezvous {}", job.rendezvous), e))?
        .next()
        .ok_or_else(|| {
            Error::InvalidArgument(format!("rendezvous {} has no address", job.rendezvous))
        })?;
    // Under plain srun task 0 may not be listening yet: retry until the
    // deadline (mclaunch's rendezvous is up before any rank starts).
    let deadline = Instant::now() + timeout;
    let s = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match StdStream::connect_timeout(&addr, left.max(Duration::from_millis(1))) {
            Ok(s) => break s,
            Err(e) if Instant::now() + RETRY_CONNECT < deadline => {
                tracing::debug!("rendezvous {addr}: {e}; retrying");
                std::thread::sleep(RETRY_CONNECT);
            }
            Err(e) => {
                let what = format!(
                    "connecting to rendezvous {} ({addr}, tried for {:?})",
                    job.rendezvous, timeout
                );
                return Err(io_err(&what, e));
            }
        }
    };
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let hello = Hello {
        version: PROTOCOL_VERSION,
        token: job.token.clone(),
        rank: job.rank as u32,
        size: job.size as u32,
        data_addr: data_addr.to_string(),
        pid: std::process::id(),
    };
    let reply = match tls {
        None => {
            let mut s = s;
            bootstrap::write_frame(&mut s, &hello)
                .and_then(|()| bootstrap::read_frame::<_, RendezvousReply>(&mut s))
        }
        Some(id) => crate::rendezvous::tls::exchange(s, addr, id, &hello, timeout),
    };
    let reply = reply.map_err(|e| match e {
        Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Error::Timeout {
                op: "rendezvous".into(),
                after: timeout,
                detail: format!("no address table from {addr}"),
            }
        }
        other => other,
    })?;
    match reply {
        RendezvousReply::Table { job: id, addrs } if addrs.len() == job.size => Ok((id, addrs)),
        RendezvousReply::Table { addrs, .. } => Err(Error::Protocol(format!(
            "rendezvous sent {} addresses for {} ranks",
            addrs.len(),
            job.size
        ))),
        RendezvousReply::Failed { reason } => {
            Err(Error::Protocol(format!("rendezvous failed: {reason}")))
        }
    }
}

/// The identity a rank presents to the rendezvous: under QUIC, its bundle
/// from `MCAST_QUIC_IDENTITY` (for a transport that does not read it
/// itself, such as the fabric link); otherwise none.
pub(crate) fn rendezvous_identity(
    cfg: &Config,
    job: &JobEnv,
) -> Result<Option<RankIdentity>, Error> {
    if !cfg.transport.is_quic() {
        return Ok(None);
    }
    identity_from(std::env::var(ENV_QUIC_IDENTITY), job.rank).map(Some)
}

/// This rank's QUIC identity from the value of `MCAST_QUIC_IDENTITY` (hex
/// of its bundle, set by mclaunch); an error names the variable when it is
/// missing, malformed, or for another rank.
pub(crate) fn identity_from(
    value: Result<String, std::env::VarError>,
    rank: usize,
) -> Result<RankIdentity, Error> {
    let bad = |why: String| {
        Error::InvalidArgument(format!(
            "MCAST_TRANSPORT=quic and quic-all need this rank's identity in \
             {ENV_QUIC_IDENTITY} (set by mclaunch --transport quic): {why}"
        ))
    };
    let hex = value.map_err(|e| bad(e.to_string()))?;
    let bytes = pmi2::unhex(hex.trim()).ok_or_else(|| bad("not hex".into()))?;
    let identity = RankIdentity::from_bytes(&bytes).map_err(|e| bad(e.to_string()))?;
    if identity.rank() as usize != rank {
        return Err(bad(format!(
            "it is rank {}'s, this is rank {rank}",
            identity.rank()
        )));
    }
    Ok(identity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launched::SlurmStep;
    use crate::quic::{JobCa, Validity};

    /// A QUIC rank of a plain srun step stops before it dials anything
    /// (task 0's rendezvous, or PMI-2, has no TLS), with a word on why.
    #[test]
    fn a_quic_rank_under_plain_srun_fails_at_once() {
        let ca = JobCa::new(7, Validity::starting_now(Duration::from_secs(60))).unwrap();
        let id = ca.issue(1).unwrap();
        let step = |bootstrap| SlurmStep {
            rank: 1,
            size: 2,
            local_rank: 0,
            node_index: 1,
            nodes: vec!["a".into(), "b".into()],
            job_id: "9".into(),
            step_id: "0".into(),
            launch_host: None,
            bootstrap,
        };
        let bootstraps = [
            Bootstrap::Rendezvous {
                host: "127.0.0.1".into(),
                port: 1,
                token: "t".into(),
            },
            Bootstrap::Pmi2 {
                fd: -1,
                jobid: "9.0".into(),
            },
        ];
        for b in bootstraps {
            let job = JobEnv {
                rank: 1,
                size: 2,
                rendezvous: "127.0.0.1:1".into(),
                token: "t".into(),
                slurm: Some(step(b)),
                bind_toward: None,
            };
            let started = Instant::now();
            let e = exchange(&job, "127.0.0.1:5", Duration::from_secs(30), Some(&id));
            let text = e.unwrap_err().to_string();
            assert!(text.contains("need mclaunch"), "{text}");
            assert!(started.elapsed() < Duration::from_secs(5));
        }
    }
}
