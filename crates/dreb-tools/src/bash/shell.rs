//! Which shell runs commands, with which environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A shell and the arguments that precede the command (`-c`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellConfig {
    pub shell: PathBuf,
    pub args: Vec<String>,
}

impl Default for ShellConfig {
    fn default() -> Self {
        resolve_shell(None).unwrap_or(ShellConfig {
            shell: PathBuf::from("sh"),
            args: vec!["-c".into()],
        })
    }
}

fn bash_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("bash"))
        .find(|p| p.is_file())
}

/// The shell to use: the `shellPath` setting if given (it must exist), else `/bin/bash`, else `bash` on PATH,
/// else `sh`. `settings_file` names the file to fix in the error text.
pub fn resolve_shell_with_settings(
    custom: Option<&str>,
    settings_file: &str,
) -> Result<ShellConfig, String> {
    let c = || vec!["-c".to_string()];
    if let Some(custom) = custom.filter(|s| !s.is_empty()) {
        if Path::new(custom).exists() {
            return Ok(ShellConfig {
                shell: PathBuf::from(custom),
                args: c(),
            });
        }
        return Err(format!(
            "Custom shell path not found: {custom}\nPlease update shellPath in {settings_file}"
        ));
    }
    if Path::new("/bin/bash").exists() {
        return Ok(ShellConfig {
            shell: PathBuf::from("/bin/bash"),
            args: c(),
        });
    }
    if let Some(p) = bash_on_path() {
        return Ok(ShellConfig {
            shell: p,
            args: c(),
        });
    }
    Ok(ShellConfig {
        shell: PathBuf::from("sh"),
        args: c(),
    })
}

/// [`resolve_shell_with_settings`] with the default settings location in the error.
pub fn resolve_shell(custom: Option<&str>) -> Result<ShellConfig, String> {
    resolve_shell_with_settings(custom, "~/.dreb/agent/settings.json")
}

/// The process environment with `bin_dir` (the agent's `<agentDir>/bin`) first on PATH, unless already there.
pub fn shell_env(bin_dir: Option<&Path>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let Some(bin) = bin_dir else { return env };
    let key_idx = env
        .iter()
        .position(|(k, _)| k.to_string_lossy().eq_ignore_ascii_case("path"));
    let current = key_idx.map(|i| env[i].1.clone()).unwrap_or_default();
    let has = std::env::split_paths(&current).any(|p| p == bin);
    if !has {
        let mut parts = vec![bin.to_path_buf()];
        parts.extend(std::env::split_paths(&current).filter(|p| !p.as_os_str().is_empty()));
        let joined = std::env::join_paths(parts).unwrap_or(current);
        match key_idx {
            Some(i) => env[i].1 = joined,
            None => env.push(("PATH".into(), joined)),
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_shell_must_exist() {
        let err = resolve_shell_with_settings(Some("/nope/shell"), "/s.json").unwrap_err();
        assert_eq!(
            err,
            "Custom shell path not found: /nope/shell\nPlease update shellPath in /s.json"
        );
        assert_eq!(
            resolve_shell(Some("/bin/sh")).unwrap().shell,
            PathBuf::from("/bin/sh")
        );
    }

    #[test]
    fn bin_dir_prepended_once() {
        let env = shell_env(Some(Path::new("/opt/agent/bin")));
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .unwrap()
            .1
            .to_string_lossy()
            .into_owned();
        assert!(path.starts_with("/opt/agent/bin"));
    }
}
