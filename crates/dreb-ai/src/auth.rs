//! Credentials: the `--api-key` override, `<agentDir>/auth.json`, provider environment variables, and (through the
//! model registry) `models.json` provider keys — in that order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

/// Every provider with API key environment variables, and those variables in lookup order.
pub const PROVIDER_KEY_VARS: &[(&str, &[&str])] = &[
    ("anthropic", &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"]),
    ("openai", &["OPENAI_API_KEY"]),
    ("azure-openai-responses", &["AZURE_OPENAI_API_KEY"]),
    ("google", &["GEMINI_API_KEY"]),
    ("google-vertex", &["GOOGLE_CLOUD_API_KEY"]),
    (
        "github-copilot",
        &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
    ),
    ("groq", &["GROQ_API_KEY"]),
    ("cerebras", &["CEREBRAS_API_KEY"]),
    ("xai", &["XAI_API_KEY"]),
    ("openrouter", &["OPENROUTER_API_KEY"]),
    ("vercel-ai-gateway", &["AI_GATEWAY_API_KEY"]),
    ("zai", &["ZAI_API_KEY", "ZHIPU_API_KEY"]),
    ("mistral", &["MISTRAL_API_KEY"]),
    ("minimax", &["MINIMAX_API_KEY"]),
    ("minimax-cn", &["MINIMAX_CN_API_KEY"]),
    ("huggingface", &["HF_TOKEN"]),
    ("opencode", &["OPENCODE_API_KEY"]),
    ("opencode-go", &["OPENCODE_API_KEY"]),
    ("kimi-coding", &["KIMI_API_KEY"]),
];

/// The environment variable(s) holding a provider's API key, in lookup order.
pub fn env_var_names(provider: &str) -> &'static [&'static str] {
    PROVIDER_KEY_VARS
        .iter()
        .find(|(p, _)| *p == provider)
        .map_or(&[], |(_, names)| names)
}

/// Variables loaded from `~/.dreb/secrets/providers.env` (never overriding the real environment).
static EXTRA_ENV: LazyLock<Mutex<HashMap<String, String>>> = LazyLock::new(Default::default);

/// Reads an environment variable, falling back to `providers.env` values.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| {
            EXTRA_ENV
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .cloned()
                .filter(|v| !v.is_empty())
        })
}

/// A provider's API key from its environment variables.
pub fn env_api_key(provider: &str) -> Option<String> {
    env_var_names(provider).iter().find_map(|n| env_var(n))
}

/// Loads `KEY=VALUE` lines (`#` comments, optional quotes) from a `providers.env` file; existing environment
/// variables win. Returns the number of variables loaded; a missing file loads nothing.
pub fn load_providers_env(path: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    let mut extra = EXTRA_ENV.lock().unwrap_or_else(|e| e.into_inner());
    let mut n = 0;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let k = k.trim();
        let mut v = v.trim();
        if v.len() >= 2
            && ((v.starts_with('"') && v.ends_with('"'))
                || (v.starts_with('\'') && v.ends_with('\'')))
        {
            v = &v[1..v.len() - 1];
        }
        if k.is_empty() || std::env::var_os(k).is_some() {
            continue;
        }
        extra.insert(k.to_string(), v.to_string());
        n += 1;
    }
    n
}

static COMMAND_CACHE: LazyLock<Mutex<HashMap<String, Option<String>>>> =
    LazyLock::new(Default::default);

/// Resolves a configured key or header value: `!command` → the command's trimmed stdout (run once per process,
/// 10 s limit); the name of a set environment variable → its value; anything else → the literal.
pub fn resolve_config_value(config: &str) -> Option<String> {
    if let Some(cmd) = config.strip_prefix('!') {
        let mut cache = COMMAND_CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(config) {
            return v.clone();
        }
        let v = run_command(cmd);
        cache.insert(config.to_string(), v.clone());
        return v;
    }
    Some(env_var(config).unwrap_or_else(|| config.to_string()))
}

fn run_command(cmd: &str) -> Option<String> {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                use std::io::Read;
                child.stdout.take()?.read_to_string(&mut out).ok()?;
                if !status.success() {
                    tracing::warn!("config command \"!{cmd}\" exited with {status}");
                    return None;
                }
                let out = out.trim().to_string();
                return (!out.is_empty()).then_some(out);
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                tracing::warn!("config command \"!{cmd}\" timed out");
                return None;
            }
        }
    }
}

/// `auth.json`: `{"<provider>": {"type": "api_key", "key": "..."}}` or
/// `{"type": "oauth", "access": "...", "refresh": "...", "expires": <ms>}`.
#[derive(Debug, Clone, Default)]
pub struct AuthStorage {
    path: Option<PathBuf>,
    data: Map<String, Value>,
    runtime: HashMap<String, String>,
    error: Option<String>,
}

impl AuthStorage {
    /// Reads `auth.json` (a missing file is empty; a broken one is reported by [`AuthStorage::error`]).
    pub fn load(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let (data, error) = match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => (Map::new(), None),
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(m)) => (m, None),
                Ok(_) => (
                    Map::new(),
                    Some(format!(
                        "Invalid auth.json: expected an object\n\nFile: {}",
                        path.display()
                    )),
                ),
                Err(e) => (
                    Map::new(),
                    Some(format!(
                        "Failed to parse auth.json: {e}\n\nFile: {}",
                        path.display()
                    )),
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Map::new(), None),
            Err(e) => (
                Map::new(),
                Some(format!(
                    "Failed to read auth.json: {e}\n\nFile: {}",
                    path.display()
                )),
            ),
        };
        AuthStorage {
            path: Some(path),
            data,
            runtime: HashMap::new(),
            error,
        }
    }

    /// Re-reads the file (runtime overrides are kept).
    pub fn reload(&mut self) {
        if let Some(path) = self.path.clone() {
            let fresh = Self::load(path);
            self.data = fresh.data;
            self.error = fresh.error;
        }
    }

    /// Credentials without a file (tests, embedding).
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Creates an empty `auth.json` (mode 0600, its directory 0700) if there is none, as the reference does at start.
    pub fn create_if_missing(path: &Path) -> std::io::Result<()> {
        if path.exists() {
            return Ok(());
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            }
        }
        std::fs::write(path, "{}")?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(())
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The `--api-key` override for a provider (highest priority, never written to disk).
    pub fn set_runtime_api_key(&mut self, provider: &str, key: &str) {
        self.runtime.insert(provider.to_string(), key.to_string());
    }

    pub fn remove_runtime_api_key(&mut self, provider: &str) {
        self.runtime.remove(provider);
    }

    /// Sets an in-memory `api_key` credential (as if read from `auth.json`).
    pub fn set_api_key(&mut self, provider: &str, key: &str) {
        self.data.insert(
            provider.to_string(),
            serde_json::json!({"type": "api_key", "key": key}),
        );
    }

    /// Whether `auth.json` or the override holds anything for the provider.
    pub fn has_stored(&self, provider: &str) -> bool {
        self.runtime.contains_key(provider) || self.data.contains_key(provider)
    }

    /// Override → auth.json → environment. (`models.json` keys are the registry's last fallback.)
    pub fn api_key(&self, provider: &str) -> Option<String> {
        if let Some(k) = self.runtime.get(provider).filter(|k| !k.is_empty()) {
            return Some(k.clone());
        }
        if let Some(cred) = self.data.get(provider) {
            match cred["type"].as_str() {
                Some("api_key") => {
                    if let Some(v) = cred["key"].as_str().and_then(resolve_config_value) {
                        return Some(v);
                    }
                }
                Some("oauth") => {
                    // Token refresh is not implemented: an unexpired access token is used as is.
                    let expires = cred["expires"].as_f64().unwrap_or(f64::MAX);
                    if let Some(access) = cred["access"]
                        .as_str()
                        .filter(|_| expires > crate::cost::now_ms() as f64 + 60_000.0)
                    {
                        return Some(access.to_string());
                    }
                }
                _ => {}
            }
        }
        env_api_key(provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_order_and_values() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("auth.json");
        std::fs::write(&p, r#"{"openai":{"type":"api_key","key":"sk-file"},"x":{"type":"api_key","key":"!printf cmd-key"}}"#).unwrap();
        let mut a = AuthStorage::load(&p);
        assert_eq!(a.api_key("openai").as_deref(), Some("sk-file"));
        assert_eq!(a.api_key("x").as_deref(), Some("cmd-key"));
        a.set_runtime_api_key("openai", "sk-override");
        assert_eq!(a.api_key("openai").as_deref(), Some("sk-override"));
        assert_eq!(a.api_key("nobody"), None);
        assert!(a.error().is_none());
        std::fs::write(&p, "{nope").unwrap();
        assert!(
            AuthStorage::load(&p)
                .error()
                .unwrap()
                .contains(&p.display().to_string())
        );
    }

    #[test]
    fn creates_auth_json_private() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("agent").join("auth.json");
        AuthStorage::create_if_missing(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
    }
}
