//! stdin and stdout for the serving loop.
//!
//! `tokio::io::stdin()`/`stdout()` do every read and write on a blocking-pool thread, so one request/response
//! round trip cost several thread hand-offs (pool thread → worker → pool thread → worker); that, not the command
//! itself, was most of the time of a sequential `get_state`. When the host connects through pipes or Unix sockets
//! (what a host spawning `dreb --mode rpc` does), the descriptors are put in non-blocking mode and driven by the
//! runtime's event loop instead: the thread that wakes up for a request reads it, answers it and writes the
//! response without waking another thread. Anything else (a terminal, a regular file, stdout sharing its pipe with
//! stderr) keeps tokio's blocking handles.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

use crate::pipe_space::PipeSpace;

/// The process's stdin as an async reader. Must be called inside the runtime.
pub fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    stdin_with_poll().0
}

/// [`stdin`], and an [`InputPoll`] of it when it is a non-blocking pipe or socket. Must be called inside the
/// runtime.
pub fn stdin_with_poll() -> (Box<dyn AsyncRead + Unpin + Send>, Option<InputPoll>) {
    let Some(file) = duplicate(&io::stdin()) else {
        return (Box::new(tokio::io::stdin()), None);
    };
    let poll = duplicate(&file).and_then(|f| InputPoll::new(OwnedFd::from(f)));
    let reader: Box<dyn AsyncRead + Unpin + Send> = match kind(&file) {
        Kind::Pipe => match pipe::Receiver::from_file(file) {
            Ok(reader) => Box::new(reader),
            Err(_) => return (Box::new(tokio::io::stdin()), None),
        },
        Kind::UnixSocket => match unix_stream(file) {
            Some(stream) => Box::new(stream),
            None => return (Box::new(tokio::io::stdin()), None),
        },
        Kind::Other => return (Box::new(tokio::io::stdin()), None),
    };
    reading_what_is_there(reader, poll)
}

/// `reader` reading what `poll` finds there at once ([`ReadWhatIsThere`]), and the poll, when the reader has made
/// the description non-blocking (checked after it did: a poll must never wait); else `reader` alone.
fn reading_what_is_there(
    reader: Box<dyn AsyncRead + Unpin + Send>,
    poll: Option<InputPoll>,
) -> (Box<dyn AsyncRead + Unpin + Send>, Option<InputPoll>) {
    let Some(poll) = poll.filter(InputPoll::is_non_blocking) else {
        return (reader, None);
    };
    let reader = Box::new(ReadWhatIsThere {
        inner: reader,
        input: poll.clone(),
    });
    (reader, Some(poll))
}

/// stdin read at once when something is there, before asking the runtime: the runtime learns that a descriptor
/// is readable only when it next looks at its events, which on a current-thread runtime comes after every task
/// that is ready has run (at start-up: the deferred discovery, before the host's first command would be read).
struct ReadWhatIsThere {
    inner: Box<dyn AsyncRead + Unpin + Send>,
    input: InputPoll,
}

impl AsyncRead for ReadWhatIsThere {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        // A read counts against the task's budget, as the runtime's own reads do: a host that never stops sending
        // does not keep the serving loop from yielding to the commands it spawned and to the stdout writer.
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        loop {
            match self.input.read_now(buf.initialize_unfilled()) {
                Ok(n) => {
                    coop.made_progress();
                    buf.advance(n);
                    return std::task::Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Nothing there (or an error, which the runtime's read meets as well): wait as usual.
                Err(_) => return std::pin::Pin::new(&mut self.inner).poll_read(cx, buf),
            }
        }
    }
}

/// Reads stdin without the runtime, for a moment after answering (see `ServeOptions::input_poll`): a descriptor of
/// the same non-blocking pipe or socket the serving loop's reader reads, which reads only what is there.
#[derive(Clone, Debug)]
pub struct InputPoll {
    fd: std::sync::Arc<OwnedFd>,
}

impl InputPoll {
    fn new(fd: OwnedFd) -> Option<InputPoll> {
        Some(InputPoll {
            fd: std::sync::Arc::new(fd),
        })
    }

    /// A poll of `fd` if it is in non-blocking mode (a poll must never wait).
    pub fn of_non_blocking(fd: OwnedFd) -> Option<InputPoll> {
        InputPoll::new(fd).filter(InputPoll::is_non_blocking)
    }

    fn is_non_blocking(&self) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: F_GETFL on a descriptor we own takes no argument.
        let flags = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_GETFL) };
        flags >= 0 && flags & libc::O_NONBLOCK != 0
    }

    /// What is in the pipe now, up to `buf.len()` bytes: `Ok(0)` at the end of input, `WouldBlock` when nothing
    /// is there.
    pub fn read_now(&self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        // SAFETY: reads at most `buf.len()` bytes into `buf`, which is valid for writes of that length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// The process's stdout as an async writer, with a probe of the pipe behind it when it is one (so frames can be
/// started only when they fit whole; see [`crate::pipe_space`]). Must be called inside the runtime.
pub fn stdout_with_probe() -> (Box<dyn AsyncWrite + Unpin + Send>, Option<PipeSpace>) {
    let probe = duplicate(&io::stdout())
        .filter(|f| matches!(kind(f), Kind::Pipe))
        .and_then(|f| PipeSpace::new(OwnedFd::from(f)));
    (stdout(), probe)
}

/// The process's stdout as an async writer (unbuffered: the caller writes whole frames). Must be called inside
/// the runtime.
pub fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    // With `2>&1` into one pipe, stdout and stderr share a file description: non-blocking mode would leak into
    // stderr, where log writes (and children inheriting it) could fail with EAGAIN.
    let (Some(file), Some(stderr)) = (duplicate(&io::stdout()), duplicate(&io::stderr())) else {
        return Box::new(tokio::io::stdout());
    };
    if same_file(&file, &stderr) {
        return Box::new(tokio::io::stdout());
    }
    match kind(&file) {
        Kind::Pipe => match pipe::Sender::from_file(file) {
            Ok(writer) => Box::new(writer),
            Err(_) => Box::new(tokio::io::stdout()),
        },
        Kind::UnixSocket => match unix_stream(file) {
            Some(stream) => Box::new(stream),
            None => Box::new(tokio::io::stdout()),
        },
        Kind::Other => Box::new(tokio::io::stdout()),
    }
}

enum Kind {
    Pipe,
    UnixSocket,
    Other,
}

/// A duplicate descriptor: it shares the file description (so the non-blocking flag set through it applies to
/// the standard descriptor as well; children never inherit these, they get their own pipes or /dev/null), and
/// closing it when the handle drops leaves fds 0 and 1 open.
fn duplicate(fd: &impl AsFd) -> Option<File> {
    fd.as_fd().try_clone_to_owned().ok().map(File::from)
}

fn kind(file: &File) -> Kind {
    match file.metadata() {
        Ok(m) if m.file_type().is_fifo() => Kind::Pipe,
        Ok(m) if m.file_type().is_socket() => Kind::UnixSocket,
        _ => Kind::Other,
    }
}

fn unix_stream(file: File) -> Option<UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
    // Only Unix-domain sockets: the local address of any other family does not parse as one.
    socket.local_addr().ok()?;
    socket.set_nonblocking(true).ok()?;
    UnixStream::from_std(socket).ok()
}

fn same_file(a: &File, b: &File) -> bool {
    match (a.metadata(), b.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::FromRawFd;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::AsyncReadExt;

    /// A pipe's read end as the serving loop gets it (non-blocking, in the runtime), and its write end.
    fn piped_reader() -> (Box<dyn AsyncRead + Unpin + Send>, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two fresh descriptors into the array; we take ownership of both.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (read_end, write_end) =
            unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        let poll = duplicate(&read_end).and_then(|f| InputPoll::new(OwnedFd::from(f)));
        let inner = pipe::Receiver::from_file(read_end).unwrap();
        let (reader, poll) = reading_what_is_there(Box::new(inner), poll);
        assert!(poll.is_some(), "a non-blocking pipe");
        (reader, write_end)
    }

    /// What the host sent before the read is read at once, ahead of the tasks that are ready (on a current-thread
    /// runtime, those run before the runtime looks at its descriptors); then reading waits as usual, to the end.
    #[test]
    fn what_is_in_the_pipe_is_read_before_the_ready_tasks_run() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (mut reader, mut host) = piped_reader();
            host.write_all(b"{\"type\":\"get_state\"}\n").unwrap();
            let ran = Arc::new(AtomicBool::new(false));
            tokio::spawn({
                let ran = ran.clone();
                async move { ran.store(true, Ordering::Release) }
            });
            let mut buf = [0u8; 64];
            let n = reader.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"{\"type\":\"get_state\"}\n");
            assert!(
                !ran.load(Ordering::Acquire),
                "the ready task ran before the line was read"
            );
            let writer = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                host.write_all(b"later\n").unwrap();
            });
            let mut rest = Vec::new();
            reader.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, b"later\n");
            writer.join().unwrap();
        });
    }
}
