//! `dreb-codegen check` (load + validate the specs, print problems) and `dreb-codegen generate` (rewrite every
//! checked-in generated file of every spec). Everything is printed to stderr.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    about = "Load the protocol specs (protocol/rpc.yaml, protocol/extension.yaml) and generate code from them"
)]
struct Cli {
    /// Repository root (default: the checkout this binary was built from).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// The spec file to check (default: every spec of <root>). `generate` always reads every spec.
    #[arg(long, global = true)]
    spec: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Load and validate the specs; print every problem.
    Check,
    /// Write every checked-in generated file of every spec.
    Generate,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = cli.root.unwrap_or_else(dreb_codegen::repo_root);
    match cli.cmd {
        Cmd::Check => {
            let specs: Vec<PathBuf> = match cli.spec {
                Some(spec) => vec![spec],
                None => dreb_codegen::SPEC_PATHS
                    .iter()
                    .map(|p| root.join(p))
                    .collect(),
            };
            // Every spec is checked, so one run lists the problems of all of them.
            let failed = specs.iter().filter(|spec| !check(spec)).count();
            if failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Cmd::Generate => {
            if cli.spec.is_some() {
                eprintln!(
                    "`generate` rewrites the outputs of every spec of the root; `--spec` is for `check`"
                );
                return ExitCode::FAILURE;
            }
            let files = match dreb_codegen::generate_all(&root) {
                Ok(files) => files,
                Err(e) => {
                    eprint!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            for file in files {
                let path = root.join(&file.path);
                if let Some(dir) = path.parent()
                    && let Err(e) = std::fs::create_dir_all(dir)
                {
                    eprintln!("cannot create {}: {e}", dir.display());
                    return ExitCode::FAILURE;
                }
                // Unchanged files are left alone so their mtimes do not trigger rebuilds.
                if std::fs::read_to_string(&path).ok().as_deref() == Some(file.contents.as_str()) {
                    continue;
                }
                if let Err(e) = std::fs::write(&path, &file.contents) {
                    eprintln!("cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
                eprintln!("wrote {}", file.path.display());
            }
            ExitCode::SUCCESS
        }
    }
}

/// Loads a spec, printing its problems.
fn load(spec: &Path) -> Option<dreb_codegen::Ir> {
    dreb_codegen::load_spec(spec)
        .map_err(|e| eprint!("{e}"))
        .ok()
}

/// Loads and validates one spec and prints its lint warnings and a summary; `false` when it has problems.
fn check(spec: &Path) -> bool {
    let Some(ir) = load(spec) else {
        return false;
    };
    for warning in dreb_codegen::validate::lint(&ir) {
        eprintln!("warning: {warning}");
    }
    let calls = if ir.calls.is_empty() {
        String::new()
    } else {
        format!("{} calls, ", ir.calls.len())
    };
    eprintln!(
        "{}: ok ({} types, {} commands, {calls}{} events, {} inputs)",
        spec.display(),
        ir.types.len(),
        ir.commands.len(),
        ir.events.len(),
        ir.inputs.len()
    );
    true
}
