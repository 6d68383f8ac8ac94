//! Release builds of the `dreb` binary on Linux: linked position-dependent (`-no-pie`), with the functions a
//! start-up runs placed side by side (`startup-order.txt`).
//!
//! A PIE binary of this size carries about 65,000 relative relocations (1.5 MB of `.rela.dyn`): the dynamic loader
//! applies every one at each start, writing to the 1.2 MB of `.data.rel.ro` and the GOT, which costs 0.1-1 ms and
//! turns those pages into private memory of each process. Linked at a fixed address, the linker resolves them and
//! the process maps those pages from the file only when it uses them (docs/benchmarks.md, "Start-up"). The price
//! is that the binary's own code and data are not placed at a random address (shared libraries, the heap and
//! stacks still are). The objects stay position-independent (rustc's default), so only the final link changes and
//! tests, debug builds and other systems are untouched. `DREB_PIE=1` at build time keeps the PIE link (a
//! distribution that wants the binary's own address randomised); see docs/adr/0017-release-binary-non-pie.md.
//!
//! The start-up runs about 1,500 functions (1.5 MB of code) spread over 31 MB of `.text`; every first touch of a
//! page maps the 64 KiB around it, so scattered, they made 11 MB of the process's memory and most of its page
//! faults. The linker's `--symbol-ordering-file` puts the listed functions first, together. The list is a profile
//! (`scripts/startup-order.py generate`); a name the binary no longer has is skipped, so a stale list only loses
//! layout. `DREB_STARTUP_ORDER=0` at build time links without it, `DREB_STARTUP_ORDER=<file>` with another list;
//! see docs/adr/0019-start-up-code-layout.md.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DREB_PIE");
    println!("cargo:rerun-if-env-changed=DREB_STARTUP_ORDER");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    if !(linux && release) {
        return;
    }
    if !std::env::var("DREB_PIE").is_ok_and(|v| v == "1") {
        // After rustc's own `-pie`; the compiler driver takes the last of the two.
        println!("cargo:rustc-link-arg-bin=dreb=-no-pie");
    }
    let order = match std::env::var("DREB_STARTUP_ORDER") {
        Ok(v) if v == "0" => None,
        Ok(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => Some(
            PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("startup-order.txt"),
        ),
    };
    // rustc links x86_64 Linux (GNU) binaries with its own lld by default (since 1.90); elsewhere the system linker
    // may be GNU ld, which has no such option.
    let lld = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64")
        && std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|e| e == "gnu");
    if let Some(order) = order.filter(|p| lld && p.is_file()) {
        println!("cargo:rerun-if-changed={}", order.display());
        println!(
            "cargo:rustc-link-arg-bin=dreb=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=dreb=-Wl,--no-warn-symbol-ordering");
    }
}
