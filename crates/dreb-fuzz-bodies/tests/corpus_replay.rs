//! Replays every file of the checked-in fuzz corpus (`fuzz/corpus/<target>/`) through the fuzz bodies, so a
//! regression input that once crashed the fuzzer fails `cargo test` too. Re-seed with `python3 fuzz/seed_corpus.py`.

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = dreb_fuzz_bodies::corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "{} holds only {} files: re-seed it (python3 fuzz/seed_corpus.py)",
        dir.display(),
        files.len()
    );
    files
}

fn replay(target: &str, body: fn(&[u8])) {
    for path in corpus(target) {
        let data = std::fs::read(&path).unwrap();
        let started = std::time::Instant::now();
        let result = std::panic::catch_unwind(|| body(&data));
        if std::env::var_os("DREB_FUZZ_REPLAY_TIMES").is_some() {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            eprintln!("{ms:>8.1} ms {}", path.display());
        }
        if let Err(e) = result {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{target}: {} fails: {msg}", path.display());
        }
    }
}

#[test]
fn frame_reader_corpus_replays_clean() {
    replay("frame_reader", dreb_fuzz_bodies::frame_reader);
}

#[test]
fn decode_dispatch_corpus_replays_clean() {
    replay("decode_dispatch", dreb_fuzz_bodies::decode_dispatch);
}
