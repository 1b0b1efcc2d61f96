//! A PMI-2 wire client: how a task started by `srun --mpi=pmi2` meets its
//! peers without mclaunch. Pure Rust over the socket Slurm's step daemon
//! hands every task (`PMI_FD`, with `PMI_RANK`, `PMI_SIZE`, `PMI_JOBID`).
//!
//! The strings follow the two ends as published:
//!
//! * the server side, Slurm's `src/plugins/mpi/pmi2` (`agent.c`
//!   `_handle_pmi1_init`, `pmi2.c` handlers, `client.c`
//!   `client_resp_send`, `pmi.h` names);
//! * the client side, MPICH's simple PMI-2 client (`simple2pmi.c`:
//!   `PMI2_Init`, `PMI2_KVS_Put`/`Fence`/`Get`, `PMI2_Finalize`), whose
//!   command names Slurm's `pmi.h` says it copied.
//!
//! Checked against Slurm 22.05 on the test cluster (`tests/slurm.rs`).
//!
//! The conversation:
//!
//! 1. A PMI-1 style line, `cmd=init pmi_version=2 pmi_subversion=0\n`, in one
//!    write (Slurm reads it with one `read` of at most 64 bytes); the answer
//!    is a line `cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n`
//!    (Slurm's order; Hydra puts `rc` last).
//! 2. From then on every message, both ways, is a 6-byte ASCII decimal length
//!    (Slurm writes it `%-6d`, space padded; we write it zero padded, which
//!    Slurm's `atoi` reads the same) and that many bytes of
//!    `cmd=NAME;key=value;...;`. Slurm does not accept `;` escaped as `;;`
//!    (client.c: "No escape of ';' supported"), so values must not contain
//!    `;`: callers put hex ([`hex`]), and [`Client::put`] refuses anything
//!    else outside printable ASCII.
//! 3. `cmd=fullinit;pmijobid=J;pmirank=R;threaded=FALSE;` →
//!    `cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=R;size=N;appnum=-1;debugged=FALSE;pmiverbose=FALSE;`
//! 4. `cmd=kvs-put;key=K;value=V;` → `cmd=kvs-put-response;rc=0;`
//! 5. `cmd=kvs-fence;` → `cmd=kvs-fence-response;rc=0;` once every task of
//!    the step has fenced (an error carries `errmsg=`).
//! 6. `cmd=kvs-get;jobid=J;srcid=S;key=K;` →
//!    `cmd=kvs-get-response;rc=0;found=TRUE;value=V;` or `found=FALSE;`.
//!    After the fence Slurm answers gets from the step daemon's own copy, so
//!    [`Client::get_many`] pipelines them (a window at a time).
//! 7. `cmd=finalize;` → `cmd=finalize-response;rc=0;`, then Slurm closes
//!    the socket.
//!
//! Limits are Slurm's and MPICH's (`PMI2_MAX_KEYLEN` 64, `PMI2_MAX_VALLEN`
//! 1024). Every read is bounded by a deadline, a reply is at most
//! [`MAX_REPLY`] bytes, and the parser never panics on any bytes.
//!
//! This module imports nothing from the crate (a leaf): its errors are its
//! own [`Pmi2Error`], which the bootstrap turns into `Error::Protocol`.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// Longest key PMI-2 carries.
pub const MAX_KEY: usize = 64;
/// Longest value PMI-2 carries.
pub const MAX_VALUE: usize = 1024;
/// Largest reply body accepted.
pub const MAX_REPLY: usize = 16 * 1024;
/// Longest `response_to_init` line accepted.
const MAX_INIT_LINE: usize = 256;
/// Gets written before their replies are read (pipelining window).
const GET_WINDOW: usize = 64;

/// What went wrong talking PMI-2.
#[derive(Debug, thiserror::Error)]
pub enum Pmi2Error {
    #[error("PMI-2 socket: {0}")]
    Io(#[from] std::io::Error),
    #[error("PMI-2: no reply to {cmd} within {after:?}")]
    Timeout { cmd: String, after: Duration },
    #[error("PMI-2: malformed reply: {0}")]
    Malformed(String),
    #[error("PMI-2: {cmd} failed with rc={rc}{}", errmsg.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Failed {
        cmd: String,
        rc: i64,
        errmsg: Option<String>,
    },
    #[error("PMI-2: expected {expected}, got {got}")]
    Unexpected { expected: String, got: String },
    #[error("PMI-2: cannot send {what}: {why}")]
    Invalid { what: String, why: String },
    #[error("PMI-2: the inherited PMI_FD={fd} is {why}")]
    NoSocket { fd: i32, why: String },
}

/// A parsed PMI-2 message: its command and its other pairs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub cmd: String,
    pub pairs: Vec<(String, String)>,
}

impl Reply {
    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parse a message body `cmd=NAME;k=v;...;`. Never panics.
pub fn parse_body(body: &[u8]) -> Result<Reply, Pmi2Error> {
    let text =
        std::str::from_utf8(body).map_err(|_| Pmi2Error::Malformed("reply is not UTF-8".into()))?;
    let mut pairs = Vec::new();
    for field in text.split(';') {
        if field.is_empty() {
            continue;
        }
        let (k, v) = field
            .split_once('=')
            .ok_or_else(|| Pmi2Error::Malformed(format!("field {field:?} has no '='")))?;
        pairs.push((k.to_string(), v.to_string()));
    }
    match pairs.first() {
        Some((k, _)) if k == "cmd" => {
            let cmd = pairs.remove(0).1;
            Ok(Reply { cmd, pairs })
        }
        _ => Err(Pmi2Error::Malformed(format!(
            "reply does not begin with cmd=: {:?}",
            truncate(text)
        ))),
    }
}

/// Parse the 6-byte length header (digits, padded with spaces on either
/// side or with zeros). Never panics.
pub fn parse_len(head: &[u8; 6]) -> Result<usize, Pmi2Error> {
    let s = std::str::from_utf8(head)
        .ok()
        .map(|s| s.trim_matches(' '))
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| Pmi2Error::Malformed(format!("length field {head:?}")))?;
    let len: usize = s
        .parse()
        .map_err(|_| Pmi2Error::Malformed(format!("length field {s:?}")))?;
    if len > MAX_REPLY {
        return Err(Pmi2Error::Malformed(format!(
            "reply of {len} bytes exceeds the {MAX_REPLY}-byte limit"
        )));
    }
    Ok(len)
}

/// Encode a message: the 6-digit length and `cmd=NAME;k=v;...;`.
pub fn encode(cmd: &str, pairs: &[(&str, &str)]) -> Result<Vec<u8>, Pmi2Error> {
    let mut body = format!("cmd={cmd};");
    for (k, v) in pairs {
        check_field("key", k, MAX_KEY)?;
        check_field("value", v, MAX_VALUE)?;
        body += &format!("{k}={v};");
    }
    if body.len() > 999_999 {
        return Err(Pmi2Error::Invalid {
            what: cmd.into(),
            why: "longer than a 6-digit length".into(),
        });
    }
    Ok(format!("{:06}{body}", body.len()).into_bytes())
}

fn check_field(what: &str, s: &str, max: usize) -> Result<(), Pmi2Error> {
    if s.len() > max {
        return Err(Pmi2Error::Invalid {
            what: format!("{what} {:?}", truncate(s)),
            why: format!("{} bytes, PMI-2 carries at most {max}", s.len()),
        });
    }
    if let Some(c) = s.chars().find(|&c| c == ';' || !(' '..='~').contains(&c)) {
        return Err(Pmi2Error::Invalid {
            what: format!("{what} {:?}", truncate(s)),
            why: format!("character {c:?} cannot travel in PMI-2 (encode it: pmi2::hex)"),
        });
    }
    Ok(())
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

/// Lower-case hex of `bytes` (what mcast puts as a value).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a hex string, or `None` if it is not hex.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// An initialized PMI-2 connection.
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    jobid: String,
    /// This task's rank and the step's size, as the server says.
    pub rank: usize,
    pub size: usize,
    timeout: Duration,
}

impl Client {
    /// Greet the server (init line, then fullinit) as task `rank` of PMI job
    /// `jobid` (`PMI_JOBID`, `PMI_RANK`). Every read waits at most `timeout`.
    pub fn init(
        stream: UnixStream,
        jobid: &str,
        rank: usize,
        timeout: Duration,
    ) -> Result<Client, Pmi2Error> {
        let mut c = Client {
            stream,
            jobid: jobid.to_string(),
            rank,
            size: 0,
            timeout,
        };
        c.stream
            .write_all(b"cmd=init pmi_version=2 pmi_subversion=0\n")?;
        let line = c.read_line(Instant::now() + timeout)?;
        let mut cmd = None;
        let mut rc = None;
        for f in line.split_whitespace() {
            match f.split_once('=') {
                Some(("cmd", v)) => cmd = Some(v),
                Some(("rc", v)) => rc = Some(v),
                _ => {}
            }
        }
        if cmd != Some("response_to_init") {
            return Err(Pmi2Error::Unexpected {
                expected: "cmd=response_to_init".into(),
                got: truncate(&line),
            });
        }
        if rc != Some("0") {
            return Err(Pmi2Error::Failed {
                cmd: "init (PMI version 2.0)".into(),
                rc: rc.and_then(|r| r.parse().ok()).unwrap_or(-1),
                errmsg: Some(truncate(&line)),
            });
        }
        let r = c.call(
            "fullinit",
            &[
                ("pmijobid", jobid),
                ("pmirank", &rank.to_string()),
                ("threaded", "FALSE"),
            ],
        )?;
        let int = |k: &str| {
            r.get(k)
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or_else(|| Pmi2Error::Malformed(format!("fullinit-response without {k}")))
        };
        let (got_rank, size) = (int("rank")?, int("size")?);
        if got_rank != rank || size == 0 || rank >= size {
            return Err(Pmi2Error::Malformed(format!(
                "fullinit-response says rank {got_rank} of {size}, we are PMI_RANK={rank}"
            )));
        }
        c.size = size;
        Ok(c)
    }

    /// Put `key=value` into the job's key-value space (visible after a fence).
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), Pmi2Error> {
        self.call("kvs-put", &[("key", key), ("value", value)])
            .map(drop)
    }

    /// Wait until every task of the step has fenced.
    pub fn fence(&mut self) -> Result<(), Pmi2Error> {
        self.call("kvs-fence", &[]).map(drop)
    }

    /// Get `key` (put by task `src`, a hint), `None` if nobody put it.
    pub fn get(&mut self, src: usize, key: &str) -> Result<Option<String>, Pmi2Error> {
        Ok(self
            .get_many(&[(src, key.to_string())])?
            .pop()
            .unwrap_or_default())
    }

    /// Get many keys, pipelined [`GET_WINDOW`] at a time.
    pub fn get_many(&mut self, keys: &[(usize, String)]) -> Result<Vec<Option<String>>, Pmi2Error> {
        let mut out = Vec::with_capacity(keys.len());
        for window in keys.chunks(GET_WINDOW) {
            let mut msg = Vec::new();
            for (src, key) in window {
                let src = src.to_string();
                msg.extend(encode(
                    "kvs-get",
                    &[("jobid", &self.jobid), ("srcid", &src), ("key", key)],
                )?);
            }
            self.stream.write_all(&msg)?;
            for _ in window {
                let r = self.expect("kvs-get")?;
                out.push(match r.get("found") {
                    Some(f) if f.eq_ignore_ascii_case("TRUE") => {
                        Some(r.get("value").unwrap_or_default().to_string())
                    }
                    Some(_) => None,
                    None => {
                        return Err(Pmi2Error::Malformed(
                            "kvs-get-response without found".into(),
                        ))
                    }
                });
            }
        }
        Ok(out)
    }

    /// Say goodbye; the server closes the socket.
    pub fn finalize(mut self) -> Result<(), Pmi2Error> {
        self.call("finalize", &[]).map(drop)
    }

    /// Send one command and read its `-response`, checking `rc`.
    fn call(&mut self, cmd: &str, pairs: &[(&str, &str)]) -> Result<Reply, Pmi2Error> {
        self.stream.write_all(&encode(cmd, pairs)?)?;
        self.expect(cmd)
    }

    /// Read the reply to `cmd` and check it succeeded.
    fn expect(&mut self, cmd: &str) -> Result<Reply, Pmi2Error> {
        let r = self.read_reply(cmd)?;
        let want = format!("{cmd}-response");
        if r.cmd != want {
            return Err(Pmi2Error::Unexpected {
                expected: want,
                got: r.cmd,
            });
        }
        let rc = r
            .get("rc")
            .ok_or_else(|| Pmi2Error::Malformed(format!("{want} without rc")))?;
        let rc: i64 = rc
            .parse()
            .map_err(|_| Pmi2Error::Malformed(format!("{want} with rc={rc:?}")))?;
        if rc != 0 {
            return Err(Pmi2Error::Failed {
                cmd: cmd.into(),
                rc,
                errmsg: r.get("errmsg").map(str::to_string),
            });
        }
        Ok(r)
    }

    fn read_reply(&mut self, cmd: &str) -> Result<Reply, Pmi2Error> {
        let deadline = Instant::now() + self.timeout;
        let mut head = [0u8; 6];
        self.read_full(&mut head, deadline, cmd)?;
        let len = parse_len(&head)?;
        let mut body = vec![0u8; len];
        self.read_full(&mut body, deadline, cmd)?;
        parse_body(&body)
    }

    /// Fill `buf`, each read bounded by what is left until `deadline`.
    fn read_full(&mut self, buf: &mut [u8], deadline: Instant, cmd: &str) -> Result<(), Pmi2Error> {
        let mut at = 0;
        while at < buf.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.timed_out(cmd));
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut buf[at..]) {
                Ok(0) => {
                    return Err(Pmi2Error::Malformed(format!(
                        "connection closed after {at} of {} bytes of the reply to {cmd}",
                        buf.len()
                    )))
                }
                Ok(n) => at += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(self.timed_out(cmd))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn read_line(&mut self, deadline: Instant) -> Result<String, Pmi2Error> {
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while line.len() < MAX_INIT_LINE {
            self.read_full(&mut b, deadline, "init")?;
            if b[0] == b'\n' {
                return String::from_utf8(line)
                    .map_err(|_| Pmi2Error::Malformed("init reply is not UTF-8".into()));
            }
            line.push(b[0]);
        }
        Err(Pmi2Error::Malformed(format!(
            "init reply longer than {MAX_INIT_LINE} bytes"
        )))
    }

    fn timed_out(&self, cmd: &str) -> Pmi2Error {
        Pmi2Error::Timeout {
            cmd: cmd.into(),
            after: self.timeout,
        }
    }
}

/// Take the socket this process inherited as `PMI_FD`. Refused unless the
/// descriptor is open and a socket; call it once per process (the stream
/// owns the descriptor and closes it when dropped).
pub fn inherited(fd: i32) -> Result<UnixStream, Pmi2Error> {
    use std::os::unix::io::FromRawFd;
    // SAFETY: fstat only writes the struct it is given.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(Pmi2Error::NoSocket {
            fd,
            why: format!("not open: {}", std::io::Error::last_os_error()),
        });
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(Pmi2Error::NoSocket {
            fd,
            why: "not a socket".into(),
        });
    }
    // SAFETY: the descriptor is open and a socket; srun's step daemon gave
    // it to this process for PMI alone, and nothing else in mcast uses it.
    Ok(unsafe { UnixStream::from_raw_fd(fd) })
}

/// Read the job token: `len` random bytes from `/dev/urandom`, in hex.
pub fn random_token(len: usize) -> std::io::Result<String> {
    let mut b = vec![0u8; len];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(hex(&b))
}

/// Key under which rank 0 puts the job token.
pub const TOKEN_KEY: &str = "mcast-token";

/// Key under which `rank` puts its published address.
pub fn addr_key(rank: usize) -> String {
    format!("mcast-addr-{rank}")
}

/// The whole exchange, for a client after fullinit: rank 0 puts a fresh
/// token, every rank puts `my_addr`, one fence, every rank gets the token and
/// every address. Returns (token, addresses by rank). Values travel in hex.
pub fn exchange(c: &mut Client, my_addr: &str) -> Result<(String, Vec<String>), Pmi2Error> {
    if c.rank == 0 {
        let token = random_token(16)?;
        c.put(TOKEN_KEY, &hex(token.as_bytes()))?;
    }
    c.put(&addr_key(c.rank), &hex(my_addr.as_bytes()))?;
    c.fence()?;
    let mut keys = vec![(0, TOKEN_KEY.to_string())];
    keys.extend((0..c.size).map(|r| (r, addr_key(r))));
    let mut got = c.get_many(&keys)?.into_iter();
    let mut value = |key: &str| -> Result<String, Pmi2Error> {
        let v = got
            .next()
            .flatten()
            .ok_or_else(|| Pmi2Error::Malformed(format!("{key} not found after the fence")))?;
        unhex(&v)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| Pmi2Error::Malformed(format!("{key} is not hex-encoded text")))
    };
    let token = value(TOKEN_KEY)?;
    let addrs = (0..c.size)
        .map(|r| value(&addr_key(r)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((token, addrs))
}

#[cfg(test)]
mod tests;
