//! `dreb-codegen check` (load + validate the spec, print problems) and `dreb-codegen generate` (rewrite every
//! checked-in generated file). Output goes to stderr except the list of written files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Load protocol/rpc.yaml and generate code from it")]
struct Cli {
    /// Repository root (default: the checkout this binary was built from).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// Spec file (default: <root>/protocol/rpc.yaml).
    #[arg(long, global = true)]
    spec: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Load and validate the spec; print every problem.
    Check,
    /// Write every checked-in generated file.
    Generate,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = cli.root.unwrap_or_else(dreb_codegen::repo_root);
    let spec = cli
        .spec
        .unwrap_or_else(|| root.join(dreb_codegen::SPEC_PATH));
    let ir = match dreb_codegen::load_spec(&spec) {
        Ok(ir) => ir,
        Err(e) => {
            eprint!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.cmd {
        Cmd::Check => {
            for warning in dreb_codegen::validate::lint(&ir) {
                eprintln!("warning: {warning}");
            }
            eprintln!(
                "{}: ok ({} types, {} commands, {} events, {} inputs)",
                spec.display(),
                ir.types.len(),
                ir.commands.len(),
                ir.events.len(),
                ir.inputs.len()
            );
            ExitCode::SUCCESS
        }
        Cmd::Generate => {
            for file in dreb_codegen::generate_all(&ir) {
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
