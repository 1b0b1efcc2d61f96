//! A file in `/dev/shm` mapped shared: what the arenas (`shm`) and the ring
//! segments (`ring`) are made of. The creator keeps the path until it
//! unlinks the file (once every peer has it mapped); the mapping lives until
//! the value is dropped.

use std::ffi::CString;
use std::sync::Mutex;

fn last_err(what: &str) -> std::io::Error {
    let e = std::io::Error::last_os_error();
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// One shared mapping of a whole file.
pub(crate) struct Mapping {
    base: *mut u8,
    len: usize,
    /// The file, while we created it and have not unlinked it.
    path: Mutex<Option<CString>>,
}

// Plain shared memory; its users check every access.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

/// Whether a mapping's pages are made present when it is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pages {
    /// When first touched (the arenas: most of their pages never are).
    OnTouch,
    /// At once (`MAP_POPULATE`: the creator's mapping allocates every page
    /// and a peer's maps them), so that no access faults later.
    Now,
}

/// Map `len` bytes of `fd`, shared.
fn map(fd: libc::c_int, len: usize, what: &str, pages: Pages) -> std::io::Result<*mut u8> {
    let flags = match pages {
        Pages::OnTouch => libc::MAP_SHARED,
        Pages::Now => libc::MAP_SHARED | libc::MAP_POPULATE,
    };
    // SAFETY: a fresh shared mapping of an open file; checked for failure.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_err(&format!("mapping {what}")));
    }
    Ok(p as *mut u8)
}

impl Mapping {
    /// Create the file `path` (it must not exist) of `len` bytes and map it
    /// (its pages allocated when first written, or at once: `pages`).
    pub(crate) fn create(path: &str, len: usize, pages: Pages) -> std::io::Result<Mapping> {
        let c = CString::new(path).map_err(std::io::Error::other)?;
        // SAFETY: plain system calls on a path we own; results checked.
        let base = unsafe {
            let fd = libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600,
            );
            if fd < 0 {
                return Err(last_err(&format!("creating {path}")));
            }
            let base = if libc::ftruncate(fd, len as libc::off_t) != 0 {
                Err(last_err(&format!("sizing {path}")))
            } else {
                map(fd, len, path, pages)
            };
            libc::close(fd);
            if base.is_err() {
                libc::unlink(c.as_ptr());
            }
            base?
        };
        Ok(Mapping {
            base,
            len,
            path: Mutex::new(Some(c)),
        })
    }

    /// Map the whole of a peer's file `path`, which must hold at least
    /// `min` bytes (its pages mapped when first touched, or at once).
    pub(crate) fn open(path: &str, min: usize, pages: Pages) -> std::io::Result<Mapping> {
        let c = CString::new(path).map_err(std::io::Error::other)?;
        // SAFETY: plain system calls; results checked.
        let (base, len) = unsafe {
            let fd = libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(last_err(&format!("opening {path}")));
            }
            let mut st: libc::stat = std::mem::zeroed();
            let mapped = if libc::fstat(fd, &mut st) != 0 {
                Err(last_err(&format!("stat of {path}")))
            } else if (st.st_size as usize) < min {
                Err(std::io::Error::other(format!("{path} is too small")))
            } else {
                let len = st.st_size as usize;
                map(fd, len, path, pages).map(|b| (b, len))
            };
            libc::close(fd);
            mapped?
        };
        Ok(Mapping {
            base,
            len,
            path: Mutex::new(None),
        })
    }

    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Remove our file (the mappings stay valid).
    pub(crate) fn unlink(&self) {
        let taken = self.path.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(c) = taken {
            // SAFETY: unlinking our own file.
            unsafe {
                libc::unlink(c.as_ptr());
            }
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        self.unlink();
        // SAFETY: our own mapping; its users hold the Mapping (or what owns
        // it) as long as they read it.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}
