//! The channel between mclaunch and a host's proxy: postcard frames
//! ([`mcast::bootstrap::write_frame`]: a little-endian u32 length, then the
//! postcard bytes) on the launch agent's stdin (mclaunch → proxy, [`Down`])
//! and stdout (proxy → mclaunch, [`Up`]). The agent (ssh, srun) carries the
//! bytes; the job token travels inside [`ProxyJob`], never on a command line.
//!
//! Both ends send a heartbeat every [`HEARTBEAT`] and read with a deadline
//! ([`PollReader`]): a host that vanishes without closing the connection is
//! noticed by the silence, as a rank notices a silent peer.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Version of this channel; a proxy of another version refuses the job.
pub(crate) const PROXY_VERSION: u16 = 2;

/// How often each end says it is alive.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(1);

/// Bytes of a string that is not necessarily UTF-8 (program, arguments,
/// environment), as the OS has them.
pub(crate) type Raw = Vec<u8>;

/// What one proxy is to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProxyJob {
    pub version: u16,
    /// The host's name as mclaunch knows it (from the hostfile).
    pub host: String,
    pub program: Raw,
    pub args: Vec<Raw>,
    /// mclaunch's working directory; the ranks start there if it exists on
    /// the host (a shared file system), else in the proxy's own.
    pub cwd: Raw,
    pub ranks: Vec<ProxyRank>,
    /// `--tag-output`: prefix every line with `[rank] `.
    pub tagged: bool,
    /// Time between SIGTERM and SIGKILL when the proxy tears its ranks down.
    pub kill_grace_ms: u64,
    /// mclaunch silent this long: the proxy takes it for gone and stops its ranks.
    pub silence_ms: u64,
    /// `--bind-to core`: bind each rank to a CPU of the host, round-robin.
    pub bind_core: bool,
}

/// One rank of a proxy's host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProxyRank {
    pub rank: u32,
    /// Its whole `MCAST_*` and `-x` environment, on top of the proxy's own.
    pub env: Vec<(Raw, Raw)>,
}

/// mclaunch → proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Down {
    /// The job; always the first frame.
    Job(ProxyJob),
    /// Send `signal` to a rank's process group, or to every rank's.
    Signal { rank: Option<u32>, signal: i32 },
    /// mclaunch is alive.
    Heartbeat,
    /// The job is over: stop what still runs (SIGTERM, then SIGKILL after
    /// the grace period), forward the last output, say [`Up::Done`], exit.
    Finish,
}

/// proxy → mclaunch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Up {
    /// The proxy runs, on the host that calls itself `hostname`.
    Ready { hostname: String, pid: u32 },
    /// A rank's process started.
    Started { rank: u32, pid: u32 },
    /// A rank could not be started: `errno` (if the OS gave one) and why.
    SpawnFailed {
        rank: u32,
        errno: Option<i32>,
        message: String,
    },
    /// Output of a rank: whole lines (tagged if the job says so).
    Output { rank: u32, stderr: bool, bytes: Raw },
    /// Rank `by` declared rank `peer` lost (its report pipe, as on one host).
    Lost { by: u32, peer: u32, reason: String },
    /// A rank ended: its raw wait status.
    Exited { rank: u32, status: i32 },
    /// The proxy is alive.
    Heartbeat,
    /// The proxy cannot run the job (bad version, bad frame); it exits.
    Refused { reason: String },
    /// Everything of the job on this host has ended; the proxy exits.
    Done,
}

/// A reader that waits at most `timeout` for each read, so a silent peer
/// becomes an [`io::ErrorKind::TimedOut`] error instead of a hang.
pub(crate) struct PollReader<R> {
    inner: R,
    fd: RawFd,
    pub timeout: Duration,
}

impl<R: Read + AsRawFd> PollReader<R> {
    pub(crate) fn new(inner: R, timeout: Duration) -> Self {
        let fd = inner.as_raw_fd();
        PollReader { inner, fd, timeout }
    }
}

impl<R: Read> Read for PollReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX);
        loop {
            // SAFETY: poll on one pollfd we own.
            match unsafe { libc::poll(&mut pfd, 1, ms) } {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("nothing for {}", crate::status::format_secs(self.timeout)),
                    ))
                }
                n if n > 0 => return self.inner.read(buf),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcast::bootstrap::{read_frame, write_frame};

    fn job() -> ProxyJob {
        ProxyJob {
            version: PROXY_VERSION,
            host: "h2".into(),
            program: b"/bin/prog".to_vec(),
            args: vec![b"-x".to_vec(), vec![0xff, 0xfe]],
            cwd: b"/work".to_vec(),
            ranks: vec![ProxyRank {
                rank: 3,
                env: vec![(b"MCAST_RANK".to_vec(), b"3".to_vec())],
            }],
            tagged: true,
            kill_grace_ms: 2000,
            silence_ms: 5000,
            bind_core: false,
        }
    }

    #[test]
    fn frames_round_trip() {
        let downs = [
            Down::Job(job()),
            Down::Signal {
                rank: Some(3),
                signal: 15,
            },
            Down::Signal {
                rank: None,
                signal: 9,
            },
            Down::Heartbeat,
            Down::Finish,
        ];
        for d in downs {
            let mut buf = Vec::new();
            write_frame(&mut buf, &d).unwrap();
            assert_eq!(read_frame::<_, Down>(&mut buf.as_slice()).unwrap(), d);
        }
        let ups = [
            Up::Ready {
                hostname: "h2".into(),
                pid: 7,
            },
            Up::Started { rank: 3, pid: 8 },
            Up::SpawnFailed {
                rank: 3,
                errno: Some(2),
                message: "no such file".into(),
            },
            Up::Output {
                rank: 3,
                stderr: true,
                bytes: b"[3] hi\n".to_vec(),
            },
            Up::Lost {
                by: 1,
                peer: 3,
                reason: "silent".into(),
            },
            Up::Exited { rank: 3, status: 9 },
            Up::Heartbeat,
            Up::Refused { reason: "x".into() },
            Up::Done,
        ];
        for u in ups {
            let mut buf = Vec::new();
            write_frame(&mut buf, &u).unwrap();
            assert_eq!(read_frame::<_, Up>(&mut buf.as_slice()).unwrap(), u);
        }
    }

    proptest::proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = read_frame::<_, Down>(&mut b.as_slice());
            let _ = read_frame::<_, Up>(&mut b.as_slice());
        }
    }

    #[test]
    fn a_silent_pipe_times_out() {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into the array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        use std::os::fd::FromRawFd;
        // SAFETY: just created; owned here.
        let (r, _w) = unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        };
        let mut p = PollReader::new(r, Duration::from_millis(20));
        let err = read_frame::<_, Up>(&mut p).unwrap_err();
        assert!(err.to_string().contains("nothing for"), "{err}");
    }
}
