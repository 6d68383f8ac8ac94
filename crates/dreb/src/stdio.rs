//! stdin and stdout for the serving loop.
//!
//! `tokio::io::stdin()`/`stdout()` do every read and write on a blocking-pool thread, so one request/response
//! round trip cost several thread hand-offs (pool thread → worker → pool thread → worker). The RPC server reads
//! stdin with blocking reads on a thread of its own that answers what it can itself ([`stdin_file`], see
//! `crate::server`). When stdout is a pipe or Unix socket (what a host spawning `dreb --mode rpc` gives), it is
//! put in non-blocking mode and driven by the runtime's event loop, and a response can be written by the thread
//! that made it; the same holds for stdin in the ACP front end. Anything else (a terminal, a regular file, stdout
//! sharing its pipe with stderr) keeps tokio's blocking handles.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

use crate::pipe_space::PipeSpace;

/// The process's stdin as an async reader (for the ACP front end; the RPC server reads stdin on a thread of its
/// own, [`stdin_file`]). Must be called inside the runtime.
pub fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    let Some(file) = duplicate(&io::stdin()) else {
        return Box::new(tokio::io::stdin());
    };
    match kind(&file) {
        Kind::Pipe => match pipe::Receiver::from_file(file) {
            Ok(reader) => Box::new(reader),
            Err(_) => Box::new(tokio::io::stdin()),
        },
        Kind::UnixSocket => match unix_stream(file) {
            Some(stream) => Box::new(stream),
            None => Box::new(tokio::io::stdin()),
        },
        Kind::Other => Box::new(tokio::io::stdin()),
    }
}

/// The process's stdin for blocking reads (whatever it is: pipe, socket, terminal, file), as a descriptor of its
/// own; `None` when it cannot be duplicated (closed).
pub fn stdin_file() -> Option<File> {
    duplicate(&io::stdin())
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
