//! The client against a fake PMI-2 server on a socket pair (the server side
//! speaks as Slurm's `mpi/pmi2` plugin does: `%-6d` lengths).

use super::*;
use std::collections::HashMap;
use std::thread;

const T: Duration = Duration::from_secs(5);

/// A reply as Slurm frames it: `%-6d` then the body.
fn framed(body: &str) -> Vec<u8> {
    format!("{:<6}{body}", body.len()).into_bytes()
}

/// Read one framed request from the client, `None` at end of stream.
fn request(s: &mut UnixStream) -> Option<Reply> {
    let mut head = [0u8; 6];
    s.read_exact(&mut head).ok()?;
    let len = parse_len(&head).unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    Some(parse_body(&body).unwrap())
}

fn greet(s: &mut UnixStream) {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while b[0] != b'\n' {
        s.read_exact(&mut b).unwrap();
        line.push(b[0]);
    }
    assert_eq!(line, b"cmd=init pmi_version=2 pmi_subversion=0\n");
    s.write_all(b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n")
        .unwrap();
}

fn fullinit_reply(rank: usize, size: usize) -> String {
    format!(
        "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank={rank};size={size};appnum=-1;debugged=FALSE;pmiverbose=FALSE;"
    )
}

/// A fake server for one task: answers with `answer(request)` bytes.
fn server(
    mut answer: impl FnMut(&Reply) -> Vec<u8> + Send + 'static,
) -> (UnixStream, thread::JoinHandle<Vec<Reply>>) {
    let (a, mut b) = UnixStream::pair().unwrap();
    let h = thread::spawn(move || {
        greet(&mut b);
        let mut seen = Vec::new();
        while let Some(r) = request(&mut b) {
            let out = answer(&r);
            seen.push(r);
            if b.write_all(&out).is_err() {
                break;
            }
        }
        seen
    });
    (a, h)
}

/// A fake server that answers fullinit, then answers the next request with
/// `bytes` and hangs up.
fn server_once(bytes: Vec<u8>) -> (UnixStream, thread::JoinHandle<()>) {
    let (a, mut b) = UnixStream::pair().unwrap();
    let h = thread::spawn(move || {
        greet(&mut b);
        if request(&mut b).is_some() {
            let _ = b.write_all(framed(&fullinit_reply(0, 1)).as_slice());
        }
        if request(&mut b).is_some() {
            let _ = b.write_all(&bytes);
        }
    });
    (a, h)
}

/// A well-behaved single-task KVS.
fn kvs_server(rank: usize, size: usize) -> (UnixStream, thread::JoinHandle<Vec<Reply>>) {
    let mut kvs: HashMap<String, String> = HashMap::new();
    server(move |r| match r.cmd.as_str() {
        "fullinit" => framed(&fullinit_reply(rank, size)),
        "kvs-put" => {
            kvs.insert(r.get("key").unwrap().into(), r.get("value").unwrap().into());
            framed("cmd=kvs-put-response;rc=0;")
        }
        "kvs-fence" => framed("cmd=kvs-fence-response;rc=0;"),
        "kvs-get" => match kvs.get(r.get("key").unwrap()) {
            Some(v) => framed(&format!("cmd=kvs-get-response;rc=0;found=TRUE;value={v};")),
            None => framed("cmd=kvs-get-response;rc=0;found=FALSE;"),
        },
        "finalize" => framed("cmd=finalize-response;rc=0;"),
        other => panic!("unexpected {other}"),
    })
}

#[test]
fn a_whole_conversation() {
    let (s, h) = kvs_server(0, 1);
    let mut c = Client::init(s, "7.0", 0, T).unwrap();
    assert_eq!((c.rank, c.size), (0, 1));
    let (token, addrs) = exchange(&mut c, "10.0.0.1:5 unix=x host=y").unwrap();
    assert_eq!(token.len(), 32);
    assert_eq!(addrs, vec!["10.0.0.1:5 unix=x host=y".to_string()]);
    assert_eq!(c.get(0, "nobody").unwrap(), None);
    c.finalize().unwrap();
    let seen = h.join().unwrap();
    let cmds: Vec<&str> = seen.iter().map(|r| r.cmd.as_str()).collect();
    assert_eq!(
        cmds,
        [
            "fullinit",
            "kvs-put",
            "kvs-put",
            "kvs-fence",
            "kvs-get",
            "kvs-get",
            "kvs-get",
            "finalize"
        ]
    );
    assert_eq!(seen[0].get("pmijobid"), Some("7.0"));
    assert_eq!(seen[0].get("pmirank"), Some("0"));
    assert_eq!(seen[0].get("threaded"), Some("FALSE"));
    assert_eq!(seen[4].get("jobid"), Some("7.0"));
    assert_eq!(seen[4].get("key"), Some(TOKEN_KEY));
    assert_eq!(seen[5].get("key"), Some("mcast-addr-0"));
    assert_eq!(seen[6].get("key"), Some("nobody"));
}

#[test]
fn the_messages_are_framed_as_slurm_reads_them() {
    assert_eq!(
        encode("kvs-put", &[("key", "k"), ("value", "v")]).unwrap(),
        b"000026cmd=kvs-put;key=k;value=v;"
    );
    assert_eq!(encode("kvs-fence", &[]).unwrap(), b"000014cmd=kvs-fence;");
    assert_eq!(parse_len(b"38    ").unwrap(), 38);
    assert_eq!(parse_len(b"000038").unwrap(), 38);
    assert_eq!(parse_len(b"    38").unwrap(), 38);
}

#[test]
fn values_the_protocol_cannot_carry_are_refused() {
    for v in ["a;b", "a\nb", "é"] {
        assert!(matches!(
            encode("kvs-put", &[("key", "k"), ("value", v)]),
            Err(Pmi2Error::Invalid { .. })
        ));
    }
    let long = "x".repeat(MAX_VALUE + 1);
    assert!(encode("kvs-put", &[("key", "k"), ("value", &long)]).is_err());
    assert_eq!(unhex(&hex(b"a;b\n\xff")).unwrap(), b"a;b\n\xff");
    assert_eq!(unhex("abc"), None);
    assert_eq!(unhex("zz"), None);
}

#[test]
fn a_failed_command_names_rc_and_errmsg() {
    let (s, _h) = server(|r| match r.cmd.as_str() {
        "fullinit" => framed(&fullinit_reply(0, 2)),
        _ => framed("cmd=kvs-fence-response;rc=14;errmsg=mpi/pmi2: failed to send temp kvs;"),
    });
    let mut c = Client::init(s, "1.0", 0, T).unwrap();
    let e = c.fence().unwrap_err();
    assert!(matches!(e, Pmi2Error::Failed { rc: 14, .. }), "{e}");
    assert!(e.to_string().contains("failed to send temp kvs"), "{e}");
}

#[test]
fn a_refused_fullinit_is_an_error() {
    let (s, _h) = server(|_| framed("cmd=fullinit-response;rc=1;"));
    let e = Client::init(s, "1.0", 0, T).unwrap_err();
    assert!(matches!(e, Pmi2Error::Failed { rc: 1, .. }), "{e}");
}

#[test]
fn a_missing_address_is_an_error() {
    // The server says found=FALSE for everything: the token is missing.
    let (s, _h) = server(|r| match r.cmd.as_str() {
        "fullinit" => framed(&fullinit_reply(1, 2)),
        "kvs-put" => framed("cmd=kvs-put-response;rc=0;"),
        "kvs-fence" => framed("cmd=kvs-fence-response;rc=0;"),
        _ => framed("cmd=kvs-get-response;rc=0;found=FALSE;"),
    });
    let mut c = Client::init(s, "1.0", 1, T).unwrap();
    let e = exchange(&mut c, "a").unwrap_err();
    assert!(e.to_string().contains("mcast-token not found"), "{e}");
}

#[test]
fn a_truncated_reply_is_an_error() {
    // Claims 40 bytes, sends 10, then the server hangs up.
    let (s, h) = server_once(b"40    cmd=kvs-pu".to_vec());
    let mut c = Client::init(s, "1.0", 0, T).unwrap();
    let e = c.put("k", "v").unwrap_err();
    assert!(e.to_string().contains("closed after 10 of 40 bytes"), "{e}");
    h.join().unwrap();
}

#[test]
fn a_garbage_length_is_an_error() {
    let (s, _h) = server(|r| match r.cmd.as_str() {
        "fullinit" => framed(&fullinit_reply(0, 1)),
        _ => b"12x4  cmd=kvs-put-response;rc=0;".to_vec(),
    });
    let mut c = Client::init(s, "1.0", 0, T).unwrap();
    assert!(matches!(c.put("k", "v"), Err(Pmi2Error::Malformed(_))));
}

#[test]
fn a_reply_larger_than_the_cap_is_refused_before_reading_it() {
    let (s, _h) = server(|r| match r.cmd.as_str() {
        "fullinit" => framed(&fullinit_reply(0, 1)),
        _ => b"999999".to_vec(),
    });
    let mut c = Client::init(s, "1.0", 0, T).unwrap();
    let e = c.put("k", "v").unwrap_err();
    assert!(e.to_string().contains("exceeds"), "{e}");
}

#[test]
fn the_wrong_response_is_an_error() {
    let (s, _h) = server(|r| match r.cmd.as_str() {
        "fullinit" => framed(&fullinit_reply(0, 1)),
        _ => framed("cmd=kvs-get-response;rc=0;found=FALSE;"),
    });
    let mut c = Client::init(s, "1.0", 0, T).unwrap();
    assert!(matches!(c.fence(), Err(Pmi2Error::Unexpected { .. })));
}

#[test]
fn a_silent_server_times_out() {
    let (a, b) = UnixStream::pair().unwrap();
    let started = Instant::now();
    let e = Client::init(a, "1.0", 0, Duration::from_millis(100)).unwrap_err();
    assert!(matches!(e, Pmi2Error::Timeout { .. }), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(b);
}

#[test]
fn a_refused_init_line_is_an_error() {
    let (a, mut b) = UnixStream::pair().unwrap();
    let h = thread::spawn(move || {
        let mut buf = [0u8; 40];
        b.read_exact(&mut buf).unwrap();
        b.write_all(b"cmd=response_to_init rc=1 pmi_version=1 pmi_subversion=1\n")
            .unwrap();
        b
    });
    let e = Client::init(a, "1.0", 0, T).unwrap_err();
    assert!(matches!(e, Pmi2Error::Failed { rc: 1, .. }), "{e}");
    drop(h.join());
}

#[test]
fn many_gets_are_pipelined_and_in_order() {
    let (s, h) = kvs_server(0, 1);
    let mut c = Client::init(s, "1.0", 0, T).unwrap();
    for i in 0..150 {
        c.put(&format!("k{i}"), &format!("v{i}")).unwrap();
    }
    c.fence().unwrap();
    let keys: Vec<(usize, String)> = (0..150).map(|i| (0, format!("k{i}"))).collect();
    let got = c.get_many(&keys).unwrap();
    for (i, v) in got.iter().enumerate() {
        assert_eq!(v.as_deref(), Some(format!("v{i}").as_str()));
    }
    drop(c);
    drop(h.join());
}

#[test]
fn the_inherited_descriptor_must_be_a_socket() {
    let f = std::fs::File::open("/dev/null").unwrap();
    let fd = std::os::unix::io::AsRawFd::as_raw_fd(&f);
    let e = inherited(fd).unwrap_err().to_string();
    assert!(e.contains("is not a socket"), "{e}");
    let e = inherited(-1).unwrap_err().to_string();
    assert!(e.contains("is not open"), "{e}");
}

proptest::proptest! {
    #[test]
    fn random_replies_never_panic(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let _ = parse_body(&b);
        if b.len() >= 6 {
            let mut head = [0u8; 6];
            head.copy_from_slice(&b[..6]);
            let _ = parse_len(&head);
        }
        let _ = unhex(&String::from_utf8_lossy(&b));
        // And through the client: a server that greets, then sends b and
        // hangs up (so a reply cut short ends at once, not at a timeout).
        let (s, h) = server_once(b);
        let mut c = Client::init(s, "1.0", 0, T).unwrap();
        let _ = c.put("k", "v");
        drop(c);
        h.join().unwrap();
    }
}
