//! One arena: a file in `/dev/shm`, created by its owner and mapped by
//! every rank of the host.

use std::ffi::CString;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use super::ALIGN;
use crate::sync::lock;

/// Where arenas live.
pub const ARENA_DIR: &str = "/dev/shm";
/// How every arena's file name starts: `mcast-PID-RANK-NONCE`.
pub const ARENA_PREFIX: &str = "mcast-";

/// How the file names of the arenas process `pid` creates start (mclaunch
/// removes those of a rank that died before unlinking its own).
pub fn arena_prefix(pid: u32) -> String {
    format!("{ARENA_PREFIX}{pid}-")
}

/// One mapped arena.
pub(crate) struct Arena {
    pub(super) base: *mut u8,
    pub(super) len: usize,
    /// Our own arena's file until it is unlinked.
    path: Mutex<Option<CString>>,
}

// The mapping is plain shared memory; all access goes through bounds-checked
// slices and atomics.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena").field("len", &self.len).finish()
    }
}

fn last_err(what: &str) -> std::io::Error {
    let e = std::io::Error::last_os_error();
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Arena {
    fn map(fd: libc::c_int, len: usize, what: &str) -> std::io::Result<*mut u8> {
        // SAFETY: a fresh shared mapping of an open file; checked for failure.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(last_err(&format!("mapping {what}")));
        }
        Ok(p as *mut u8)
    }

    /// Create this rank's arena of `len` bytes (pages are only allocated
    /// when first written).
    pub(crate) fn create(rank: usize, len: usize) -> std::io::Result<(Arena, String)> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = format!(
            "{ARENA_DIR}/{}{rank}-{nanos:08x}",
            arena_prefix(std::process::id())
        );
        let c = CString::new(path.clone()).map_err(std::io::Error::other)?;
        // SAFETY: plain system calls on a path we own; results checked.
        unsafe {
            let fd = libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600,
            );
            if fd < 0 {
                return Err(last_err(&format!("creating {path}")));
            }
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                let e = last_err(&format!("sizing {path}"));
                libc::close(fd);
                libc::unlink(c.as_ptr());
                return Err(e);
            }
            let base = Self::map(fd, len, &path);
            libc::close(fd);
            match base {
                Ok(base) => Ok((
                    Arena {
                        base,
                        len,
                        path: Mutex::new(Some(c)),
                    },
                    path,
                )),
                Err(e) => {
                    libc::unlink(c.as_ptr());
                    Err(e)
                }
            }
        }
    }

    /// Map a peer's arena.
    pub(crate) fn open(path: &str) -> std::io::Result<Arena> {
        let ours = path
            .strip_prefix(ARENA_DIR)
            .and_then(|p| p.strip_prefix('/'))
            .is_some_and(|name| name.starts_with(ARENA_PREFIX));
        if !ours || path.contains("..") {
            return Err(std::io::Error::other(format!("not an mcast arena: {path}")));
        }
        let c = CString::new(path).map_err(std::io::Error::other)?;
        // SAFETY: plain system calls; results checked.
        unsafe {
            let fd = libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(last_err(&format!("opening {path}")));
            }
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0 {
                let e = last_err(&format!("stat of {path}"));
                libc::close(fd);
                return Err(e);
            }
            let len = st.st_size as usize;
            if len < ALIGN as usize {
                libc::close(fd);
                return Err(std::io::Error::other(format!("{path} is too small")));
            }
            let base = Self::map(fd, len, path);
            libc::close(fd);
            Ok(Arena {
                base: base?,
                len,
                path: Mutex::new(None),
            })
        }
    }

    /// Remove our arena's file (the mappings stay valid).
    pub(crate) fn unlink(&self) {
        if let Some(c) = lock(&self.path).take() {
            // SAFETY: unlinking our own file.
            unsafe {
                libc::unlink(c.as_ptr());
            }
        }
    }

    pub(super) fn contains(&self, ptr: *const u8, len: usize) -> Option<u64> {
        let (b, p) = (self.base as usize, ptr as usize);
        (p >= b && p + len <= b + self.len).then(|| (p - b) as u64)
    }

    /// Whether a slot header of `header` bytes at `slot` lies in the arena,
    /// aligned.
    pub(super) fn slot_ok(&self, slot: u64, header: u64) -> bool {
        slot & (ALIGN - 1) == 0
            && slot
                .checked_add(header)
                .is_some_and(|e| e <= self.len as u64)
    }

    /// The u64 at `at`, if it lies in the arena, 8-byte aligned.
    pub(super) fn word(&self, at: u64) -> Option<&AtomicU64> {
        let fits = at & 7 == 0 && at.checked_add(8).is_some_and(|e| e <= self.len as u64);
        // SAFETY: in bounds and 8-byte aligned inside a page-aligned mapping.
        fits.then(|| unsafe { &*(self.base.add(at as usize) as *const AtomicU64) })
    }

    pub(super) fn bytes(&self, off: u64, len: usize) -> &[u8] {
        // SAFETY: callers check off + len <= self.len.
        unsafe { std::slice::from_raw_parts(self.base.add(off as usize), len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        self.unlink();
        // SAFETY: unmapping our own mapping; no slices outlive the Arena
        // (every `Bytes` into it holds an `Arc<Arena>`).
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}
