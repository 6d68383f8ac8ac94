//! Release builds of the `dreb` binary on Linux link as a position-dependent executable (`-no-pie`).
//!
//! A PIE binary of this size carries about 65,000 relative relocations (1.5 MB of `.rela.dyn`): the dynamic loader
//! applies every one at each start, writing to the 1.2 MB of `.data.rel.ro` and the GOT, which costs 0.1-1 ms and
//! turns those pages into private memory of each process. Linked at a fixed address, the linker resolves them and
//! the process maps those pages from the file only when it uses them (docs/benchmarks.md, "Start-up"). The price
//! is that the binary's own code and data are not placed at a random address (shared libraries, the heap and
//! stacks still are). The objects stay position-independent (rustc's default), so only the final link changes and
//! tests, debug builds and other systems are untouched. `DREB_PIE=1` at build time keeps the PIE link (a
//! distribution that wants the binary's own address randomised); see docs/adr/0017-release-binary-non-pie.md.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DREB_PIE");
    let keep_pie = std::env::var("DREB_PIE").is_ok_and(|v| v == "1");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    if linux && release && !keep_pie {
        // After rustc's own `-pie`; the compiler driver takes the last of the two.
        println!("cargo:rustc-link-arg-bin=dreb=-no-pie");
    }
}
