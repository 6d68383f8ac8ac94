//! Decode + dispatch of stdin lines by the real serving loop and runtime (faux provider); the body is
//! `dreb_fuzz_bodies::decode_dispatch`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dreb_fuzz_bodies::decode_dispatch(data));
