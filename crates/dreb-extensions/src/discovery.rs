//! Which extensions a session loads, and how each is started: the reference's discovery rules (the project's
//! `.dreb/extensions`, the agent dir's `extensions`, settings `extensions`, `-e/--extension`), with project
//! extensions loaded only from a trusted project.

use std::path::{Path, PathBuf};

/// Where an extension was declared (the spec's `sourceInfo.scope`); decides whether it needs a trusted project:
/// `User` for `<agentDir>/extensions` and global settings, `Project` for `<cwd>/.dreb/extensions` and project
/// settings, `Temporary` for `-e/--extension`.
pub use dreb_protocol::SourceScope as Scope;

/// How an extension's process is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// Run `program args... <path>` (a Python file with `python3`) or the executable itself.
    Process { program: PathBuf, args: Vec<String> },
    /// A JavaScript / TypeScript module of the reference's kind, run by the Node extension host.
    JavaScript,
}

/// One extension to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionSource {
    /// The file (or folder entry point) it was loaded from: its name in `extension_error` and `get_resources`.
    pub path: PathBuf,
    pub scope: Scope,
    pub launch: Launch,
    /// The reference's `sourceInfo.source`: `cli` for `-e`, `local` otherwise.
    pub source: &'static str,
    /// The reference's `sourceInfo.baseDir`: the extensions directory it was found in, the folder of a settings
    /// path; none for `-e`.
    pub base_dir: Option<PathBuf>,
}

/// A declared extension that is not loaded, and why (reported to the host as an `extension_error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// What discovery reads.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryInput {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    /// Global settings `extensions` (paths relative to the agent dir).
    pub user_settings: Vec<String>,
    /// Project settings `extensions` (paths relative to `<cwd>/.dreb`).
    pub project_settings: Vec<String>,
    /// `-e/--extension` (relative to the cwd); loaded also with `no_extensions`.
    pub cli: Vec<PathBuf>,
    /// `--no-extensions`: no discovery and no settings paths.
    pub no_extensions: bool,
    /// Whether the project may run code (the context-trust policy grants the cwd).
    pub project_trusted: bool,
    /// The Python interpreter for `*.py` extensions.
    pub python: PathBuf,
}

/// The extensions to load, in load order (project, user, settings, then `-e`), without repeats; and the ones
/// not loaded.
pub fn discover(input: &DiscoveryInput) -> (Vec<ExtensionSource>, Vec<Skipped>) {
    let mut found: Vec<(PathBuf, Scope, Option<PathBuf>)> = Vec::new();
    let parent = |p: &Path| p.parent().map(Path::to_path_buf);
    if !input.no_extensions {
        let project_dir = input.cwd.join(".dreb").join("extensions");
        for path in discover_dir(&project_dir) {
            found.push((path, Scope::Project, Some(project_dir.clone())));
        }
        let user_dir = input.agent_dir.join("extensions");
        for path in discover_dir(&user_dir) {
            found.push((path, Scope::User, Some(user_dir.clone())));
        }
        for p in &input.user_settings {
            for path in resolve_declared(&resolve(p, &input.agent_dir)) {
                let base = parent(&path);
                found.push((path, Scope::User, base));
            }
        }
        let project_base = input.cwd.join(".dreb");
        for p in &input.project_settings {
            for path in resolve_declared(&resolve(p, &project_base)) {
                let base = parent(&path);
                found.push((path, Scope::Project, base));
            }
        }
    }
    for p in &input.cli {
        let path = if p.is_absolute() {
            p.clone()
        } else {
            input.cwd.join(p)
        };
        for path in resolve_declared(&path) {
            found.push((path, Scope::Temporary, None));
        }
    }
    let mut sources = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (path, scope, base_dir) in found {
        let key = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.contains(&key) {
            continue;
        }
        if scope == Scope::Project && !input.project_trusted {
            skipped.push(Skipped {
                reason: format!(
                    "Project extension not loaded: {} is not a trusted folder (trust it with trust_context_folder, \
                     or pass the extension with -e)",
                    input.cwd.display()
                ),
                path,
            });
            continue;
        }
        seen.insert(key);
        match launch_for(&path, &input.python) {
            Ok(launch) => sources.push(ExtensionSource {
                path,
                scope,
                launch,
                source: if scope == Scope::Temporary {
                    "cli"
                } else {
                    "local"
                },
                base_dir,
            }),
            Err(reason) => skipped.push(Skipped { path, reason }),
        }
    }
    (sources, skipped)
}

fn resolve(p: &str, base: &Path) -> PathBuf {
    let expanded = match p.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(rest))
            .unwrap_or_else(|| PathBuf::from(p)),
        None => PathBuf::from(p),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    }
}

/// The entry points in an extensions directory, sorted by name: files that are extensions, and each folder's
/// entry points (`package.json` `dreb.extensions`, else `index.ts` / `index.js`, else an `extension` executable).
fn discover_dir(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    let mut out = Vec::new();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            out.extend(folder_entry_points(&path));
        } else if is_extension_file(&path) {
            out.push(path);
        }
    }
    out
}

/// A declared path (settings, `-e`): a folder's entry points, or the file itself.
fn resolve_declared(path: &Path) -> Vec<PathBuf> {
    if path.is_dir() {
        folder_entry_points(path)
    } else {
        vec![path.to_path_buf()]
    }
}

fn folder_entry_points(dir: &Path) -> Vec<PathBuf> {
    if let Ok(text) = std::fs::read_to_string(dir.join("package.json"))
        && let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(list) = manifest
            .get("dreb")
            .and_then(|d| d.get("extensions"))
            .and_then(|e| e.as_array())
    {
        return list
            .iter()
            .filter_map(|v| v.as_str())
            // `./one.ts` is `<dir>/one.ts` (as the reference resolves it): `.` components are dropped.
            .map(|p| dir.join(p).components().collect())
            .collect();
    }
    for name in ["index.ts", "index.js", "extension.py", "extension"] {
        let p = dir.join(name);
        if p.is_file() {
            return vec![p];
        }
    }
    Vec::new()
}

const JS_EXTENSIONS: [&str; 5] = ["ts", "js", "mjs", "cjs", "mts"];

/// Files a directory scan picks up: JavaScript / TypeScript modules, Python files and executables.
fn is_extension_file(path: &Path) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if JS_EXTENSIONS.contains(&e) || e == "py" => true,
        _ => is_executable(path),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How to start the extension at `path`.
pub fn launch_for(path: &Path, python: &Path) -> Result<Launch, String> {
    if !path.exists() {
        return Err(format!("Extension not found: {}", path.display()));
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if JS_EXTENSIONS.contains(&e) => Ok(Launch::JavaScript),
        Some("py") => Ok(Launch::Process {
            program: python.to_path_buf(),
            args: vec![path.to_string_lossy().into_owned()],
        }),
        _ if is_executable(path) => Ok(Launch::Process {
            program: path.to_path_buf(),
            args: Vec::new(),
        }),
        _ => Err(format!(
            "Not an extension: {} (expected a .ts/.js module, a .py file or an executable)",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn input(cwd: &Path, agent: &Path) -> DiscoveryInput {
        DiscoveryInput {
            cwd: cwd.to_path_buf(),
            agent_dir: agent.to_path_buf(),
            project_trusted: true,
            python: PathBuf::from("python3"),
            ..Default::default()
        }
    }

    #[test]
    fn finds_files_folders_and_manifests_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let (cwd, agent) = (tmp.path().join("p"), tmp.path().join("a"));
        let proj = cwd.join(".dreb/extensions");
        std::fs::create_dir_all(proj.join("folder")).unwrap();
        std::fs::create_dir_all(proj.join("pkg")).unwrap();
        std::fs::create_dir_all(agent.join("extensions")).unwrap();
        std::fs::write(proj.join("b.py"), "").unwrap();
        std::fs::write(proj.join("a.ts"), "").unwrap();
        std::fs::write(proj.join("notes.txt"), "").unwrap();
        std::fs::write(proj.join("folder/index.js"), "").unwrap();
        std::fs::write(
            proj.join("pkg/package.json"),
            r#"{"dreb":{"extensions":["./one.ts","two.py"]}}"#,
        )
        .unwrap();
        std::fs::write(proj.join("pkg/one.ts"), "").unwrap();
        std::fs::write(proj.join("pkg/two.py"), "").unwrap();
        let exe = agent.join("extensions/tool");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (found, skipped) = discover(&input(&cwd, &agent));
        let names: Vec<String> = found
            .iter()
            .map(|s| {
                s.path
                    .strip_prefix(tmp.path())
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "p/.dreb/extensions/a.ts",
                "p/.dreb/extensions/b.py",
                "p/.dreb/extensions/folder/index.js",
                "p/.dreb/extensions/pkg/one.ts",
                "p/.dreb/extensions/pkg/two.py",
                "a/extensions/tool",
            ]
        );
        assert!(skipped.is_empty());
        assert_eq!(found[0].launch, Launch::JavaScript);
        assert_eq!(
            found[1].launch,
            Launch::Process {
                program: "python3".into(),
                args: vec![proj.join("b.py").display().to_string()]
            }
        );
        assert_eq!(found[5].scope, Scope::User);
    }

    #[test]
    fn an_untrusted_project_runs_no_project_code_but_cli_extensions_load() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().to_path_buf();
        std::fs::create_dir_all(cwd.join(".dreb/extensions")).unwrap();
        std::fs::write(cwd.join(".dreb/extensions/x.py"), "").unwrap();
        std::fs::write(cwd.join("cli.py"), "").unwrap();
        let mut i = input(&cwd, &tmp.path().join("agent"));
        i.project_trusted = false;
        i.project_settings = vec!["../cli.py".into()];
        i.cli = vec![PathBuf::from("cli.py")];
        let (found, skipped) = discover(&i);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].scope, Scope::Temporary);
        // The directory's extension and the project settings' path, which is the `-e` file: that loads.
        assert_eq!(skipped.len(), 2);
        assert!(
            skipped
                .iter()
                .all(|s| s.reason.contains("is not a trusted folder")),
            "{skipped:?}"
        );
    }

    #[test]
    fn no_extensions_keeps_only_cli_paths_and_missing_files_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().to_path_buf();
        std::fs::create_dir_all(cwd.join(".dreb/extensions")).unwrap();
        std::fs::write(cwd.join(".dreb/extensions/x.py"), "").unwrap();
        let mut i = input(&cwd, &tmp.path().join("agent"));
        i.no_extensions = true;
        i.cli = vec![PathBuf::from("missing.py")];
        let (found, skipped) = discover(&i);
        assert!(found.is_empty());
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].reason.starts_with("Extension not found: "));
    }
}
