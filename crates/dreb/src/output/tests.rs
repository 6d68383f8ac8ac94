use super::*;
use dreb_protocol::DeltaKey;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

fn options(budget: usize, coalesce_over: usize, stall: Option<Duration>) -> OutputOptions {
    OutputOptions {
        budget_bytes: budget,
        coalesce_over_bytes: coalesce_over,
        stall_timeout: stall,
        pipe: None,
    }
}

/// A delta frame whose wire form names its key, the joined delta and the sequence number of the newest delta in it.
fn delta(kind: &'static str, index: u64, text: &str, seq: usize) -> DeltaFrame {
    DeltaFrame::new(
        DeltaKey {
            kind,
            content_index: index,
        },
        text.to_string(),
        move |joined: &str| {
            encode_frame(&json!({"type": "message_update", "kind": kind, "i": index, "delta": joined, "seq": seq}))
                .unwrap()
        },
    )
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("whole JSON lines"))
        .collect()
}

/// Poll a future once: whether it is already complete.
async fn is_ready<F: std::future::Future>(future: F) -> bool {
    tokio::pin!(future);
    std::future::poll_fn(|cx| std::task::Poll::Ready(future.as_mut().poll(cx).is_ready())).await
}

#[tokio::test]
async fn frames_are_written_whole_and_in_order() {
    let (client, mut server) = tokio::io::duplex(64);
    let (out, task) = Output::start(client, OutputOptions::default());
    for i in 0..100 {
        out.send(&json!({"type": "n", "i": i, "text": "x\u{2028}y"}))
            .unwrap();
    }
    let mut adjacent = encode_frame(&json!({"type": "barrier"})).unwrap();
    adjacent.extend(encode_frame(&json!({"type": "response"})).unwrap());
    out.send_encoded(adjacent).unwrap();
    drop(out);
    let mut text = String::new();
    server.read_to_string(&mut text).await.unwrap();
    task.await.unwrap().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 102);
    for (i, line) in lines[..100].iter().enumerate() {
        assert_eq!(
            *line,
            format!(r#"{{"type":"n","i":{i},"text":"x\u2028y"}}"#)
        );
    }
    assert_eq!(
        &lines[100..],
        [r#"{"type":"barrier"}"#, r#"{"type":"response"}"#]
    );
}

#[tokio::test]
async fn a_reader_that_pauses_gets_everything_afterwards_and_nothing_is_refused() {
    // Far more than the budget is sent while nobody reads: every frame is taken, none refused, nothing lost.
    let (client, mut server) = tokio::io::duplex(1024);
    let (out, task) = Output::start(client, options(16 * 1024, usize::MAX, None));
    let pad = "p".repeat(1000);
    for i in 0..2000 {
        out.send(&json!({"type": "n", "i": i, "pad": pad})).unwrap();
    }
    assert!(out.queued_bytes() > 1_000_000);
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(out);
    let mut text = String::new();
    server.read_to_string(&mut text).await.unwrap();
    task.await.unwrap().unwrap();
    let frames = lines(&text);
    assert_eq!(frames.len(), 2000);
    assert!(frames.iter().enumerate().all(|(i, f)| f["i"] == i));
}

#[tokio::test]
async fn ready_holds_producers_while_over_budget_and_releases_them_as_the_reader_drains() {
    let (client, mut server) = tokio::io::duplex(1024);
    let (out, _task) = Output::start(client, options(10_000, usize::MAX, None));
    assert!(is_ready(out.ready()).await, "an empty queue is ready");
    for i in 0..30 {
        out.send(&json!({"type": "n", "i": i, "pad": "p".repeat(1000)}))
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!is_ready(out.ready()).await, "over budget: producers wait");
    let waiter = {
        let out = out.clone();
        tokio::spawn(async move { out.ready().await })
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = 0;
    while read < 25_000 {
        read += server.read(&mut buf).await.unwrap();
    }
    tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("released once the reader drained the queue below the budget")
        .unwrap();
    assert!(out.queued_bytes() <= 10_000);
}

#[tokio::test]
async fn deltas_merge_only_while_the_writer_is_behind_and_the_merge_is_lossless() {
    let (client, mut server) = tokio::io::duplex(256);
    let (out, task) = Output::start(client, options(usize::MAX, 1, None));
    // A plain frame big enough to fill the pipe keeps the writer busy, so the deltas wait in the queue.
    out.send(&json!({"type": "big", "pad": "b".repeat(4096)}))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(out.is_behind());
    for (seq, piece) in ["Hel", "lo", ", wor", "ld"].iter().enumerate() {
        out.send_delta(delta("text_delta", 0, piece, seq)).unwrap();
    }
    // Another block's delta does not merge into the text's; the next text delta after it starts a new frame.
    out.send_delta(delta("thinking_delta", 1, "hmm", 4))
        .unwrap();
    out.send_delta(delta("text_delta", 0, "!", 5)).unwrap();
    out.send(&json!({"type": "message_end"})).unwrap();
    drop(out);
    let mut text = String::new();
    server.read_to_string(&mut text).await.unwrap();
    task.await.unwrap().unwrap();
    let frames = lines(&text);
    let types: Vec<_> = frames.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "big",
            "message_update",
            "message_update",
            "message_update",
            "message_end"
        ]
    );
    assert_eq!(frames[1]["delta"], "Hello, world");
    assert_eq!(
        frames[1]["seq"], 3,
        "the merged frame carries the newest state"
    );
    assert_eq!(frames[2]["delta"], "hmm");
    assert_eq!(frames[3]["delta"], "!");
}

#[tokio::test]
async fn a_reader_that_keeps_up_sees_every_delta_in_its_own_frame() {
    let (client, mut server) = tokio::io::duplex(1 << 20);
    let (out, task) = Output::start(client, OutputOptions::default());
    for seq in 0..200 {
        // What the runtime does: a mergeable frame only when the writer is behind.
        assert!(!out.is_behind());
        out.send_delta(delta("text_delta", 0, "x", seq)).unwrap();
        out.ready().await;
    }
    drop(out);
    let mut text = String::new();
    server.read_to_string(&mut text).await.unwrap();
    task.await.unwrap().unwrap();
    assert_eq!(lines(&text).len(), 200);
}

#[tokio::test]
async fn a_reader_that_never_reads_trips_the_stall_rule_and_releases_every_waiter() {
    let (client, _server) = tokio::io::duplex(1024);
    let (out, _task) = Output::start(
        client,
        options(4096, usize::MAX, Some(Duration::from_millis(200))),
    );
    for i in 0..20 {
        out.send(&json!({"type": "n", "i": i, "pad": "p".repeat(1000)}))
            .unwrap();
    }
    tokio::time::timeout(Duration::from_secs(10), out.stalled().cancelled())
        .await
        .expect("the stall rule fired");
    assert!(out.since_progress() >= Duration::from_millis(200));
    assert!(is_ready(out.ready()).await, "waiters are released");
    assert!(!out.flush().await, "nothing more will drain");
}

#[tokio::test]
async fn an_idle_writer_does_not_stall_when_frames_arrive_after_a_long_quiet() {
    let (client, mut server) = tokio::io::duplex(1 << 16);
    let (out, _task) = Output::start(
        client,
        options(usize::MAX, usize::MAX, Some(Duration::from_millis(100))),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    out.send(&json!({"type": "late"})).unwrap();
    let mut buf = vec![0u8; 64];
    let n = server.read(&mut buf).await.unwrap();
    assert_eq!(&buf[..n], b"{\"type\":\"late\"}\n");
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(!out.stalled().is_cancelled());
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn into_a_pipe_nobody_reads_only_whole_lines_are_written() {
    use std::io::Read;
    let (reader, writer, probe) = pipe_sink();
    let sender = tokio::net::unix::pipe::Sender::from_owned_fd(writer).unwrap();
    let (out, _task) = Output::start(
        sender,
        OutputOptions {
            pipe: Some(probe),
            ..options(usize::MAX, usize::MAX, Some(Duration::from_millis(200)))
        },
    );
    // Frames of 3,000 to 30,000 bytes: a 64 KiB pipe fills part way through one of them.
    for i in 0..40 {
        out.send(&json!({"type": "n", "i": i, "pad": "p".repeat(3000 + 700 * i)}))
            .unwrap();
    }
    tokio::time::timeout(Duration::from_secs(10), out.stalled().cancelled())
        .await
        .expect("the stall rule fired");
    // What the pipe holds ends on a whole line.
    let mut reader = reader;
    let mut held = Vec::new();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&reader);
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) };
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => held.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(!held.is_empty());
    assert_eq!(held.last(), Some(&b'\n'), "no torn line");
    let frames = lines(std::str::from_utf8(&held).unwrap());
    assert!(frames.iter().enumerate().all(|(i, f)| f["i"] == i));
}

/// One thing a producer sends.
#[derive(Debug, Clone)]
enum Sent {
    Frame,
    Delta(u8, String),
}

fn sent() -> impl Strategy<Value = Sent> {
    prop_oneof![
        1 => Just(Sent::Frame),
        6 => (0u8..2, "[a-z\u{e9}\u{1f600}]{0,6}").prop_map(|(k, t)| Sent::Delta(k, t)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the reader's pace: frames keep their order, every written delta frame is a run of consecutive
    /// same-key deltas with their text joined and the newest one's state, and the concatenated deltas equal what
    /// was sent.
    #[test]
    fn coalescing_is_lossless(items in proptest::collection::vec(sent(), 1..120), chunk in 1usize..512,
                              pause_every in 1usize..40) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let text = runtime.block_on(async {
            let (client, mut server) = tokio::io::duplex(64);
            let (out, task) = Output::start(client, options(usize::MAX, 1, None));
            let reader = tokio::spawn(async move {
                let mut text = Vec::new();
                let mut buf = vec![0u8; chunk];
                loop {
                    let n = server.read(&mut buf).await.unwrap();
                    if n == 0 { break; }
                    text.extend_from_slice(&buf[..n]);
                    tokio::task::yield_now().await;
                }
                String::from_utf8(text).unwrap()
            });
            for (seq, item) in items.iter().enumerate() {
                match item {
                    Sent::Frame => out.send(&json!({"type": "other", "seq": seq})).unwrap(),
                    Sent::Delta(k, t) => {
                        let kind = if *k == 0 { "text_delta" } else { "thinking_delta" };
                        out.send_delta(delta(kind, *k as u64, t, seq)).unwrap();
                    }
                }
                if seq % pause_every == 0 { tokio::task::yield_now().await; }
            }
            drop(out);
            task.await.unwrap().unwrap();
            reader.await.unwrap()
        });
        let frames = lines(&text);
        // Walk the sent items, consuming one written frame per group.
        let mut i = 0;
        for frame in &frames {
            prop_assert!(i < items.len());
            match &items[i] {
                Sent::Frame => {
                    prop_assert_eq!(&frame["type"], "other");
                    prop_assert_eq!(&frame["seq"], i);
                    i += 1;
                }
                Sent::Delta(k, _) => {
                    let last = frame["seq"].as_u64().unwrap() as usize;
                    let mut joined = String::new();
                    while i <= last {
                        match &items[i] {
                            Sent::Delta(k2, t) if k2 == k => joined.push_str(t),
                            other => prop_assert!(false, "item {} ({:?}) merged across a boundary", i, other),
                        }
                        i += 1;
                    }
                    prop_assert_eq!(frame["delta"].as_str().unwrap(), joined.as_str());
                    prop_assert_eq!(frame["i"].as_u64().unwrap(), *k as u64);
                }
            }
        }
        prop_assert_eq!(i, items.len(), "every item written");
    }
}

#[tokio::test]
async fn a_frame_in_parts_is_written_in_order_between_whole_frames() {
    use dreb_protocol::FrameSink;
    let (client, mut server) = tokio::io::duplex(16);
    let (out, task) = Output::start(client, OutputOptions::default());
    assert!(out.takes_parts());
    out.send(&json!({"type": "before"})).unwrap();
    for part in [&b"{\"type\":\"big\",\"t"[..], b"ext\":\"", b"abc\"}\n"] {
        out.send_frame_part(part.to_vec());
    }
    out.send(&json!({"type": "after"})).unwrap();
    // A second frame in parts starts as a frame again.
    out.send_frame_part(b"{\"type\":".to_vec());
    out.send_frame_part(b"\"again\"}\n".to_vec());
    drop(out);
    let mut text = String::new();
    server.read_to_string(&mut text).await.unwrap();
    task.await.unwrap().unwrap();
    assert_eq!(
        lines(&text),
        [
            json!({"type": "before"}),
            json!({"type": "big", "text": "abc"}),
            json!({"type": "after"}),
            json!({"type": "again"}),
        ]
    );
}

/// A sink that keeps each `write` call's bytes apart.
#[derive(Clone, Default)]
struct Writes(Arc<Mutex<Vec<Vec<u8>>>>);

impl AsyncWrite for Writes {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.0.lock().unwrap().push(buf.to_vec());
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn frames_queued_together_are_written_together_each_write_ending_on_a_whole_line() {
    let sink = Writes::default();
    let (out, task) = Output::start(sink.clone(), options(usize::MAX, usize::MAX, None));
    // All queued before the writer task first runs (this runtime has one thread): whole frames, deltas and a frame
    // in parts, which must not join a batch.
    let pad = "p".repeat(1000);
    for i in 0..100 {
        out.send(&json!({"type": "n", "i": i, "pad": pad})).unwrap();
    }
    for seq in 0..10 {
        out.send_delta(delta("text_delta", 0, "x", seq)).unwrap();
    }
    dreb_protocol::FrameSink::send_frame_part(&out, b"{\"type\":\"big\",".to_vec());
    dreb_protocol::FrameSink::send_frame_part(&out, b"\"end\":true}\n".to_vec());
    out.send(&json!({"type": "after"})).unwrap();
    drop(out);
    task.await.unwrap().unwrap();
    let writes = sink.0.lock().unwrap().clone();
    let text = String::from_utf8(writes.concat()).unwrap();
    let frames = lines(&text);
    assert_eq!(frames.len(), 112);
    assert!(frames[..100].iter().enumerate().all(|(i, f)| f["i"] == i));
    assert!(
        frames[100..110]
            .iter()
            .enumerate()
            .all(|(i, f)| f["seq"] == i)
    );
    assert_eq!(frames[110], json!({"type": "big", "end": true}));
    assert_eq!(frames[111], json!({"type": "after"}));
    // 100 frames of about 1 KB and 10 deltas take two writes of at most 64 KiB; then the two parts and the last.
    assert!(writes.len() <= 6, "{} writes", writes.len());
    assert!(writes.iter().all(|w| w.len() <= BATCH_WITHOUT_PROBE));
    let whole = writes.iter().filter(|w| w.last() == Some(&b'\n')).count();
    assert_eq!(
        whole,
        writes.len() - 1,
        "only the first part of the split frame ends mid-line"
    );
}

/// Responses written by their producer at once, frames queued for the writer task and corked frames, into a
/// non-blocking pipe whose reader pauses now and then (so some direct writes find no room and wait in the queue):
/// every frame arrives whole and in the order sent.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_written_at_once_queued_or_corked_keep_their_order() {
    use std::io::Read;
    let (mut reader, writer, probe) = pipe_sink();
    let sender = tokio::net::unix::pipe::Sender::from_owned_fd(writer).unwrap();
    let (out, task) = Output::start(
        sender,
        OutputOptions {
            pipe: Some(probe),
            ..options(usize::MAX, usize::MAX, None)
        },
    );
    let read_all = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut paused = 0;
        loop {
            match reader.read(&mut buf).unwrap() {
                0 => return all,
                n => all.extend_from_slice(&buf[..n]),
            }
            // Fall behind now and then, so that the pipe fills up.
            if all.len() / 300_000 > paused {
                paused += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    });
    let n = 600;
    for i in 0..n {
        let pad = match i % 7 {
            0 => 100_000,
            1 => 5_000,
            _ => 40 + i,
        };
        let frame = encode_frame(&json!({"i": i, "pad": "p".repeat(pad)})).unwrap();
        match i % 4 {
            0 => out.send_now(&frame).unwrap(),
            1 => out.send_bytes(&frame).unwrap(),
            2 => {
                let _cork = out.cork();
                out.send_now(&frame).unwrap();
                let next = encode_frame(&json!({"i": i, "corked": true})).unwrap();
                out.send_bytes(&next).unwrap();
            }
            _ => out.send_encoded(frame).unwrap(),
        }
        if i % 50 == 0 {
            // Let the writer task catch up and go idle, so that later frames may be written at once again.
            assert!(out.flush().await);
        }
    }
    drop(out);
    task.await.unwrap().unwrap();
    let all = read_all.join().unwrap();
    assert_eq!(all.last(), Some(&b'\n'));
    let frames = lines(std::str::from_utf8(&all).unwrap());
    let mut expected = Vec::new();
    for i in 0..n {
        expected.push((i, false));
        if i % 4 == 2 {
            expected.push((i, true));
        }
    }
    let got: Vec<(usize, bool)> = frames
        .iter()
        .map(|f| (f["i"].as_u64().unwrap() as usize, f["corked"] == true))
        .collect();
    assert_eq!(got, expected);
}

/// A pipe: the read end, and the write end for the writer's sink (made into one in a runtime) with its probe.
#[cfg(target_os = "linux")]
fn pipe_sink() -> (std::fs::File, std::os::fd::OwnedFd, PipeSpace) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe writes two fresh descriptors into the array; we take ownership of both.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (reader, writer) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            OwnedFd::from_raw_fd(fds[1]),
        )
    };
    let probe = PipeSpace::new(writer.try_clone().unwrap()).unwrap();
    (reader, writer, probe)
}

/// A small frame that finds the pipe full waits in the sink's write for a slot to free up; bytes the reader takes
/// out meanwhile, too few to free one, still count as progress: a slow reader is not taken for one that stopped.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_of_a_full_pipe_is_not_taken_to_have_stopped() {
    use std::io::Read;
    let (mut reader, sender, probe) = pipe_sink();
    let (out, _task) = piped_output(sender, probe, Duration::from_secs(1));
    // Fill the pipe (and then some) with small frames.
    let frame = encode_frame(&json!({"pad": "p".repeat(1000)})).unwrap();
    for _ in 0..200 {
        out.send_bytes(&frame).unwrap();
    }
    // 8 bytes every 5 ms: a page of the pipe (and so room for the waiting frame) takes 2.5 s to free.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reading = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8];
            while !stop.load(Ordering::Acquire) {
                reader.read_exact(&mut buf).unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !out.stalled().is_cancelled(),
        "a reader that reads was taken to have stopped"
    );
    stop.store(true, Ordering::Release);
    reading.join().unwrap();
}

/// A current-thread runtime, as the binary runs.
#[cfg(target_os = "linux")]
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An output into the pipe of [`pipe_sink`], with no budget and no coalescing. Call inside a runtime.
#[cfg(target_os = "linux")]
fn piped_output(
    sender: std::os::fd::OwnedFd,
    probe: PipeSpace,
    stall: Duration,
) -> (Output, JoinHandle<std::io::Result<()>>) {
    let sender = tokio::net::unix::pipe::Sender::from_owned_fd(sender).unwrap();
    Output::start(
        sender,
        OutputOptions {
            pipe: Some(probe),
            ..options(usize::MAX, usize::MAX, Some(stall))
        },
    )
}

/// The parts of a large frame with the frames around it, as `get_messages` hands them over: `count` parts of
/// `size` bytes of text.
#[cfg(target_os = "linux")]
fn big_frame_parts(count: usize, size: usize) -> Vec<Vec<u8>> {
    let mut parts = vec![b"{\"type\":\"big\",\"text\":\"".to_vec()];
    for i in 0..count {
        parts.push(vec![b'a' + (i % 26) as u8; size]);
    }
    parts.push(b"\"}\n".to_vec());
    parts
}

/// On a current-thread runtime (the binary's) the writer task cannot run while a large frame is encoded: its parts
/// are written by the encoding thread as they come, so no more than a bounded amount ever waits in the queue, and
/// the reader gets everything, in order, around the frames sent before and after.
#[cfg(target_os = "linux")]
#[test]
fn a_frame_in_parts_is_written_through_on_a_current_thread_runtime() {
    use dreb_protocol::FrameSink;
    use std::io::Read;
    let runtime = current_thread();
    let (mut reader, sender, probe) = pipe_sink();
    let reading = std::thread::spawn(move || {
        let mut text = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = reader.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            text.extend_from_slice(&buf[..n]);
            // A reader slower than the encoding.
            std::thread::sleep(Duration::from_micros(200));
        }
        String::from_utf8(text).unwrap()
    });
    let parts = big_frame_parts(64, 256 * 1024);
    let expected_text: String = parts[1..parts.len() - 1]
        .iter()
        .map(|p| String::from_utf8_lossy(p))
        .collect();
    let most_queued = runtime.block_on(async {
        let (out, task) = piped_output(sender, probe, Duration::from_secs(30));
        out.send(&json!({"type": "before"})).unwrap();
        let mut most_queued = 0;
        out.while_streaming(&mut || {
            for part in &parts {
                out.send_frame_part(part.clone());
                most_queued = most_queued.max(out.queued_bytes());
            }
        });
        out.send(&json!({"type": "after"})).unwrap();
        drop(out);
        task.await.unwrap().unwrap();
        most_queued
    });
    let text = reading.join().unwrap();
    let frames = lines(&text);
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0], json!({"type": "before"}));
    assert_eq!(frames[1]["text"].as_str().unwrap(), expected_text);
    assert_eq!(frames[2], json!({"type": "after"}));
    // 16 MB went through; at most the lookahead and one part waited at any time.
    assert!(
        most_queued <= WRITE_THROUGH_AHEAD + 256 * 1024,
        "{most_queued} bytes waited in the queue"
    );
}

/// Written through to a reader that never reads, a large frame still ends: the stall rule fires from the encoding
/// thread (the watcher task cannot run meanwhile), and the encoding finishes without waiting further.
#[cfg(target_os = "linux")]
#[test]
fn writing_through_to_a_reader_that_never_reads_trips_the_stall_rule() {
    use dreb_protocol::FrameSink;
    let runtime = current_thread();
    let (_reader, sender, probe) = pipe_sink();
    runtime.block_on(async {
        let (out, _task) = piped_output(sender, probe, Duration::from_millis(300));
        out.while_streaming(&mut || {
            for part in big_frame_parts(32, 256 * 1024) {
                out.send_frame_part(part);
            }
        });
        assert!(out.stalled().is_cancelled());
    });
}

/// The first response is written by its producer at once, before the writer task has ever run (on a
/// current-thread runtime it runs only once the producer's task yields).
#[cfg(target_os = "linux")]
#[test]
fn the_first_frame_is_written_before_the_writer_task_runs() {
    use std::io::Read;
    let runtime = current_thread();
    let (mut reader, sender, probe) = pipe_sink();
    runtime.block_on(async {
        let (out, _task) = piped_output(sender, probe, Duration::from_secs(1));
        let frame = encode_frame(&json!({"type": "response", "id": 1})).unwrap();
        out.send_now(&frame).unwrap();
        assert_eq!(
            out.queued_bytes(),
            0,
            "the frame waited for the writer task"
        );
        let mut got = vec![0u8; frame.len()];
        reader.read_exact(&mut got).unwrap();
        assert_eq!(got, frame);
    });
}

/// A long reply in the default UI makes every delta's frame large: the deltas that follow a large one within
/// `LARGE_DELTA_WINDOW` merge into it even while the reader keeps up, and small frames go out one per delta again.
#[tokio::test]
async fn deltas_following_a_large_delta_frame_merge_into_it() {
    let (client, mut server) = tokio::io::duplex(1 << 22);
    let (out, task) = Output::start(client, OutputOptions::default());
    assert!(!out.is_behind());
    let long = "x".repeat(LARGE_DELTA_FRAME);
    out.send_delta(delta("text_delta", 0, &long, 0)).unwrap();
    assert!(
        out.is_behind(),
        "a large frame makes the next deltas mergeable"
    );
    for (seq, piece) in ["a", "b", "c"].iter().enumerate() {
        // The writer task gets to run between the deltas, as it does between the chunks of a provider's stream.
        tokio::task::yield_now().await;
        out.send_delta(delta("text_delta", 0, piece, seq + 1))
            .unwrap();
    }
    // Well past the window: the merged frame is written; then a small frame makes deltas plain again.
    tokio::time::sleep(LARGE_DELTA_WINDOW * 10).await;
    out.send(&json!({"type": "message_end"})).unwrap();
    assert!(!out.is_behind());
    drop(out);
    let mut text = String::new();
    server.read_to_string(&mut text).await.unwrap();
    task.await.unwrap().unwrap();
    let frames = lines(&text);
    assert_eq!(frames.len(), 2, "one merged delta frame, then message_end");
    assert_eq!(frames[0]["delta"], format!("{long}abc"));
    assert_eq!(frames[0]["seq"], 3);
    assert_eq!(frames[1]["type"], "message_end");
}
