//! Room left in the stdout pipe, so that the writer starts a frame only when the pipe can take all of it.
//!
//! A frame written in part and then never read on (a host that stopped for good) would leave a torn JSON line at
//! the end of stdout when the process gives up. On Linux the writer asks the pipe how much it holds (`FIONREAD`)
//! and how much it can hold (`F_GETPIPE_SZ`), grows it for a frame larger than that (`F_SETPIPE_SZ`, up to the
//! system's `pipe-max-size`), and waits until the frame fits. A frame larger than the largest pipe waits for an empty
//! pipe and is then written in parts: the one case left where a reader that stops mid-frame could be left with a
//! partial line. Elsewhere (other systems, sockets, files,
//! terminals) there is no probe and frames are written as they come.

use std::os::fd::OwnedFd;

/// A probe of the pipe behind stdout.
pub struct PipeSpace {
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fd: OwnedFd,
    capacity: usize,
    /// The system's largest pipe, read once when a frame first outgrows the pipe.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    max_capacity: Option<usize>,
}

/// Slack for the kernel's page-granular accounting: a partly read page still takes a whole slot.
#[cfg(target_os = "linux")]
const PAGE: usize = 4096;

impl PipeSpace {
    /// A probe for `fd` if it is a pipe this system can measure.
    #[cfg(target_os = "linux")]
    pub fn new(fd: OwnedFd) -> Option<PipeSpace> {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor we own; F_GETPIPE_SZ takes no argument.
        let capacity = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) };
        (capacity > 0).then(|| PipeSpace {
            fd,
            capacity: capacity as usize,
            max_capacity: None,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn new(_fd: OwnedFd) -> Option<PipeSpace> {
        None
    }

    /// A second probe of the same pipe.
    pub fn try_clone(&self) -> Option<PipeSpace> {
        Some(PipeSpace {
            fd: self.fd.try_clone().ok()?,
            capacity: self.capacity,
            max_capacity: self.max_capacity,
        })
    }

    /// Bytes written and not yet read by the other end.
    #[cfg(target_os = "linux")]
    pub fn pending(&self) -> Option<usize> {
        use std::os::fd::AsRawFd;
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int through the pointer, which points at `n`.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::FIONREAD, &mut n) };
        (rc == 0 && n >= 0).then_some(n as usize)
    }

    #[cfg(not(target_os = "linux"))]
    pub fn pending(&self) -> Option<usize> {
        None
    }

    /// Make room for a frame of `len` bytes if the pipe is smaller (best effort, up to `pipe-max-size`).
    #[cfg(target_os = "linux")]
    fn grow_for(&mut self, len: usize) {
        use std::os::fd::AsRawFd;
        let want = (len + PAGE).next_power_of_two();
        if want <= self.capacity {
            return;
        }
        let max = *self.max_capacity.get_or_insert_with(|| {
            std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .unwrap_or(1 << 20)
        });
        let target = want.min(max);
        if target <= self.capacity {
            return;
        }
        // SAFETY: fcntl on a descriptor we own; the kernel rounds and caps the size, and returns the new one.
        let rc = unsafe {
            libc::fcntl(
                self.fd.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                target as libc::c_int,
            )
        };
        if rc > 0 {
            self.capacity = rc as usize;
        }
    }

    /// Whether a frame of `len` bytes can be written whole now (growing the pipe first if it is too small for it).
    /// `None`: the pipe cannot be measured; write as usual.
    pub fn fits(&mut self, len: usize) -> Option<bool> {
        self.room(len).map(|room| len <= room)
    }

    /// How many bytes can be written whole now, asked for a frame of `len` bytes (the pipe is grown first if it is
    /// too small for it). A frame larger than any pipe we can have gets its own length once the pipe is empty (it
    /// is then written in parts), and 0 before. `None`: the pipe cannot be measured.
    #[cfg(target_os = "linux")]
    pub fn room(&mut self, len: usize) -> Option<usize> {
        if len + PAGE > self.capacity {
            self.grow_for(len);
        }
        let pending = self.pending()?;
        if len + PAGE > self.capacity {
            return Some(if pending == 0 { len } else { 0 });
        }
        Some(self.capacity.saturating_sub(pending + PAGE))
    }

    #[cfg(not(target_os = "linux"))]
    pub fn room(&mut self, _len: usize) -> Option<usize> {
        None
    }
}

/// Writes of at most this many bytes into a pipe are atomic: all of it or (non-blocking) nothing.
pub const PIPE_BUF: usize = 4096;

impl PipeSpace {
    /// Whether the pipe's file description is in non-blocking mode (so a write through [`PipeSpace::write`] never
    /// waits).
    #[cfg(target_os = "linux")]
    pub fn is_nonblocking(&self) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor we own; F_GETFL takes no argument.
        let flags = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_GETFL) };
        flags >= 0 && flags & libc::O_NONBLOCK != 0
    }

    #[cfg(not(target_os = "linux"))]
    pub fn is_nonblocking(&self) -> bool {
        false
    }

    /// Write `parts` in one `writev` on the pipe (non-blocking when [`PipeSpace::is_nonblocking`]). Returns the
    /// bytes taken.
    #[cfg(target_os = "linux")]
    pub fn write(&self, parts: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        use std::os::fd::AsRawFd;
        // SAFETY: `IoSlice` is ABI-compatible with `iovec`; the slices outlive the call; at most IOV_MAX of them
        // are passed (the caller's batches are far smaller, and the count is capped here too).
        let n = unsafe {
            libc::writev(
                self.fd.as_raw_fd(),
                parts.as_ptr().cast::<libc::iovec>(),
                parts.len().min(1024) as libc::c_int,
            )
        };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn write(&self, _parts: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::Unsupported.into())
    }

    /// Wait until the pipe can take a byte, for at most `timeout` (a producer that writes through, on a thread
    /// that cannot wait on the runtime).
    #[cfg(target_os = "linux")]
    pub fn wait_writable(&self, timeout: std::time::Duration) {
        use std::os::fd::AsRawFd;
        let mut poll = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd; the result only tells whether it is ready, which the next write finds out too.
        unsafe { libc::poll(&mut poll, 1, ms) };
    }

    #[cfg(not(target_os = "linux"))]
    pub fn wait_writable(&self, timeout: std::time::Duration) {
        std::thread::sleep(timeout);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn pipe() -> (std::fs::File, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into the array, which we then own.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        use std::os::fd::FromRawFd;
        // SAFETY: both descriptors were just created and are owned by nobody else.
        unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        }
    }

    #[test]
    fn measures_what_the_pipe_holds_and_waits_for_room() {
        let (mut reader, mut writer) = pipe();
        let mut space = PipeSpace::new(OwnedFd::from(writer.try_clone().unwrap())).unwrap();
        assert_eq!(space.pending(), Some(0));
        assert_eq!(space.fits(1000), Some(true));
        writer.write_all(&vec![b'x'; 40_000]).unwrap();
        assert_eq!(space.pending(), Some(40_000));
        // 40,000 + 30,000 does not fit a 64 KiB pipe; once read, it does.
        let capacity = space.capacity;
        if capacity == 65536 {
            assert_eq!(space.fits(30_000), Some(false));
        }
        let mut buf = vec![0; 40_000];
        reader.read_exact(&mut buf).unwrap();
        assert_eq!(space.fits(30_000), Some(true));
    }

    #[test]
    fn grows_for_a_frame_larger_than_the_pipe() {
        let (_reader, writer) = pipe();
        let mut space = PipeSpace::new(OwnedFd::from(writer)).unwrap();
        let before = space.capacity;
        assert_eq!(space.fits(before * 2), Some(true), "an empty pipe takes it");
        assert!(space.capacity >= before, "never shrinks");
    }
}
