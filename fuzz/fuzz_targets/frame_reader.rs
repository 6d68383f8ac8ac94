//! The stdin frame reader against a reference splitter; the body is `dreb_fuzz_bodies::frame_reader`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dreb_fuzz_bodies::frame_reader(data));
