//! `--tag-output`: forward a rank's stdout or stderr line by line with a `[rank] ` prefix.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::mpsc::Sender;
use std::thread::{self, JoinHandle};

/// Longest piece forwarded as one line; a longer line is split (each piece tagged).
pub const MAX_LINE: usize = 64 * 1024;

/// Which of mclaunch's streams a rank stream goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// mclaunch's stdout.
    Stdout,
    /// mclaunch's stderr.
    Stderr,
}

/// Copy `src` to `sink`, prefixing every line with `[rank] `. A final line
/// without a newline is printed with one. Returns when `src` reaches end of file
/// or `sink` can no longer be written (then `src` is closed, and the rank sees
/// a broken pipe as it would in a shell pipeline).
pub fn tag_lines<R: Read>(rank: u32, src: R, sink: Sink) {
    tag_into(rank, src, |line| match sink {
        // One write per line under the stream's lock: lines of different ranks
        // never interleave.
        Sink::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(line).and_then(|_| out.flush())
        }
        Sink::Stderr => io::stderr().lock().write_all(line),
    })
}

/// The loop of [`tag_lines`], writing each finished line with `emit`.
fn tag_into<R: Read>(rank: u32, src: R, emit: impl FnMut(&[u8]) -> io::Result<()>) {
    lines_into(&format!("[{rank}] "), src, emit)
}

/// Split `src` into lines (at most [`MAX_LINE`] bytes each, a final one
/// given its newline), each after `prefix`, and hand them to `emit` until
/// `src` ends or `emit` fails.
pub(crate) fn lines_into<R: Read>(
    prefix: &str,
    src: R,
    mut emit: impl FnMut(&[u8]) -> io::Result<()>,
) {
    let mut reader = BufReader::with_capacity(MAX_LINE, src);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        line.extend_from_slice(prefix.as_bytes());
        match (&mut reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        if line.last() != Some(&b'\n') {
            line.push(b'\n');
        }
        if emit(&line).is_err() {
            return;
        }
    }
}

/// Start a thread running [`tag_lines`]; it sends `()` on `done` when it finishes.
pub fn spawn_forwarder<R: Read + Send + 'static>(
    rank: u32,
    src: R,
    sink: Sink,
    done: Sender<()>,
) -> io::Result<JoinHandle<()>> {
    let name = match sink {
        Sink::Stdout => format!("rank{rank}-stdout"),
        Sink::Stderr => format!("rank{rank}-stderr"),
    };
    thread::Builder::new().name(name).spawn(move || {
        tag_lines(rank, src, sink);
        let _ = done.send(());
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(rank: u32, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        tag_into(rank, input, |l| {
            out.extend_from_slice(l);
            Ok(())
        });
        out
    }

    #[test]
    fn prefixes_every_line() {
        assert_eq!(tagged(3, b"a\nb\n"), b"[3] a\n[3] b\n");
        assert_eq!(tagged(0, b"a\n\nlast"), b"[0] a\n[0] \n[0] last\n");
        assert_eq!(tagged(1, b""), b"");
        assert_eq!(tagged(1, b"\xff\xfe\n"), b"[1] \xff\xfe\n");
    }

    #[test]
    fn splits_very_long_lines() {
        let long = vec![b'x'; MAX_LINE + 10];
        let out = tagged(2, &long);
        assert_eq!(out.iter().filter(|&&c| c == b'\n').count(), 2);
        assert!(out.starts_with(b"[2] x"));
        assert_eq!(out.len(), long.len() + 2 * (4 + 1));
    }
}
