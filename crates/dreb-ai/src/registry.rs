//! The model registry: the built-in catalog (`data/models.json`, compiled in), `<agentDir>/models.json` for custom
//! providers/models and overrides, and the credentials that decide which models are available.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::auth::{AuthStorage, env_api_key, resolve_config_value};
use crate::types::{AuthMode, InputKind, Model, ModelCost, api};
use dreb_types::JsNumber;

/// The agent directory: `$DREB_CODING_AGENT_DIR` (with `~` expanded), else `~/.dreb/agent` (the workspace's one
/// resolution, in `dreb-paths`).
pub use dreb_paths::agent_dir;

/// Every built-in model, in catalogue order.
pub use crate::catalog::builtin_models;

/// The reference's preferred model per provider (used when no model is chosen).
pub fn default_model_id(provider: &str) -> Option<&'static str> {
    if let Some(model) = crate::catalog::catalog_default(provider) {
        return Some(model);
    }
    // Providers the reference knows but this catalog does not ship (reachable through models.json).
    Some(match provider {
        "amazon-bedrock" => "us.anthropic.claude-opus-4-6-v1",
        "azure-openai-responses" => "gpt-5.2",
        "openai-codex" => "gpt-5.4",
        "google-gemini-cli" => "gemini-2.5-pro",
        "google-antigravity" => "gemini-3.1-pro-high",
        "google-vertex" => "gemini-3-pro-preview",
        "github-copilot" => "gpt-4o",
        "openrouter" => "openai/gpt-5.1-codex",
        "vercel-ai-gateway" => "anthropic/claude-opus-4-6",
        "xai" => "grok-4-fast-non-reasoning",
        "groq" => "openai/gpt-oss-120b",
        "cerebras" => "gpt-oss-120b",
        "mistral" => "devstral-medium-latest",
        "minimax" | "minimax-cn" => "MiniMax-M2.7",
        "huggingface" => "moonshotai/Kimi-K2.5",
        "opencode" => "claude-opus-4-6",
        "opencode-go" => "kimi-k2.5",
        "kimi-coding" => "kimi-k2-thinking",
        "kimi-coding-oauth" => "kimi-for-coding",
        _ => return None,
    })
}

/// Provider order used to pick a default model among the available ones (the reference's order).
const DEFAULT_PROVIDER_ORDER: [&str; 23] = [
    "amazon-bedrock",
    "anthropic",
    "openai",
    "azure-openai-responses",
    "openai-codex",
    "google",
    "google-gemini-cli",
    "google-antigravity",
    "google-vertex",
    "github-copilot",
    "openrouter",
    "vercel-ai-gateway",
    "xai",
    "groq",
    "cerebras",
    "mistral",
    "minimax",
    "minimax-cn",
    "huggingface",
    "opencode",
    "opencode-go",
    "kimi-coding",
    "kimi-coding-oauth",
];

// ---- models.json ----

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelsConfig {
    providers: IndexMap<String, ProviderConfig>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
struct ProviderConfig {
    base_url: Option<String>,
    api_key: Option<String>,
    api: Option<String>,
    headers: Option<IndexMap<String, String>>,
    compat: Option<Map<String, Value>>,
    auth_header: Option<bool>,
    models: Option<Vec<ModelDef>>,
    model_overrides: Option<IndexMap<String, ModelOverride>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct ModelDef {
    id: String,
    name: Option<String>,
    api: Option<String>,
    base_url: Option<String>,
    reasoning: Option<bool>,
    input: Option<Vec<InputKind>>,
    cost: Option<ModelCost>,
    context_window: Option<f64>,
    max_tokens: Option<f64>,
    headers: Option<IndexMap<String, String>>,
    compat: Option<Map<String, Value>>,
    system_prompt: Option<String>,
    append_system_prompt: Option<String>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct CostOverride {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct ModelOverride {
    name: Option<String>,
    reasoning: Option<bool>,
    input: Option<Vec<InputKind>>,
    cost: Option<CostOverride>,
    context_window: Option<u64>,
    max_tokens: Option<u64>,
    headers: Option<IndexMap<String, String>>,
    compat: Option<Map<String, Value>>,
    system_prompt: Option<String>,
    append_system_prompt: Option<String>,
}

/// A per-model system prompt from `models.json` (replaces or extends the default one).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelPromptSettings {
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
}

fn prompt_settings(sp: &Option<String>, asp: &Option<String>) -> Option<ModelPromptSettings> {
    (sp.is_some() || asp.is_some()).then(|| ModelPromptSettings {
        system_prompt: sp.clone(),
        append_system_prompt: asp.clone(),
    })
}

fn validate_prompt(sp: &Option<String>, asp: &Option<String>, r: &str) -> Result<(), String> {
    if sp.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return Err(format!(
            "models.json entry {r}.systemPrompt must be a non-empty string"
        ));
    }
    if asp.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return Err(format!(
            "models.json entry {r}.appendSystemPrompt must be a non-empty string"
        ));
    }
    if sp.is_some() && asp.is_some() {
        return Err(format!(
            "models.json entry {r} cannot define both systemPrompt and appendSystemPrompt"
        ));
    }
    Ok(())
}

fn resolve_headers(h: &Option<IndexMap<String, String>>) -> Option<IndexMap<String, String>> {
    let h = h.as_ref()?;
    let out: IndexMap<String, String> = h
        .iter()
        .filter_map(|(k, v)| resolve_config_value(v).map(|v| (k.clone(), v)))
        .collect();
    (!out.is_empty()).then_some(out)
}

fn merge_headers(
    base: &Option<IndexMap<String, String>>,
    over: Option<IndexMap<String, String>>,
) -> Option<IndexMap<String, String>> {
    match (base, over) {
        (b, None) => b.clone(),
        (None, Some(o)) => Some(o),
        (Some(b), Some(o)) => {
            let mut m = b.clone();
            m.extend(o);
            Some(m)
        }
    }
}

fn merge_compat(
    base: &Option<Map<String, Value>>,
    over: &Option<Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let Some(o) = over else { return base.clone() };
    let mut m = base.clone().unwrap_or_default();
    for (k, v) in o {
        match (m.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(ov))
                if k == "openRouterRouting" || k == "vercelGatewayRouting" =>
            {
                for (kk, vv) in ov {
                    b.insert(kk.clone(), vv.clone());
                }
            }
            _ => {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    Some(m)
}

/// `authHeader: true` materialises `Authorization: Bearer <key>` and switches the model to bearer auth.
fn apply_auth_header(model: &mut Model, auth_header: Option<bool>, api_key: &Option<String>) {
    match auth_header {
        None => {}
        Some(false) => model.auth_mode = None,
        Some(true) => {
            if let Some(k) = api_key.as_deref().and_then(resolve_config_value) {
                model
                    .headers
                    .get_or_insert_with(IndexMap::new)
                    .insert("Authorization".into(), format!("Bearer {k}"));
            }
            model.auth_mode = Some(AuthMode::Bearer);
        }
    }
}

fn apply_override(model: &mut Model, o: &ModelOverride) {
    if let Some(v) = &o.name {
        model.name = v.clone();
    }
    if let Some(v) = o.reasoning {
        model.reasoning = v;
    }
    if let Some(v) = &o.input {
        model.input = v.clone();
    }
    if let Some(v) = o.context_window {
        model.context_window = i64::try_from(v).unwrap_or(i64::MAX);
    }
    if let Some(v) = o.max_tokens {
        model.max_tokens = i64::try_from(v).unwrap_or(i64::MAX);
    }
    if let Some(c) = &o.cost {
        model.cost = ModelCost {
            input: c.input.map_or(model.cost.input, JsNumber),
            output: c.output.map_or(model.cost.output, JsNumber),
            cache_read: c.cache_read.map_or(model.cost.cache_read, JsNumber),
            cache_write: c.cache_write.map_or(model.cost.cache_write, JsNumber),
        };
    }
    if o.headers.is_some() {
        model.headers = merge_headers(&model.headers, resolve_headers(&o.headers));
    }
    model.compat = merge_compat(&model.compat, &o.compat);
}

#[derive(Default)]
struct Custom {
    models: Vec<Model>,
    prompts: HashMap<(String, String), ModelPromptSettings>,
    provider_keys: HashMap<String, String>,
    providers: IndexMap<String, ProviderConfig>,
}

fn validate(config: &ModelsConfig) -> Result<(), String> {
    for (name, p) in &config.providers {
        let models = p.models.as_deref().unwrap_or(&[]);
        let has_overrides = p.model_overrides.as_ref().is_some_and(|m| !m.is_empty());
        if models.is_empty() {
            if p.base_url.is_none() && p.compat.is_none() && !has_overrides {
                return Err(format!(
                    "Provider {name}: must specify \"baseUrl\", \"compat\", \"modelOverrides\", or \"models\"."
                ));
            }
        } else {
            if p.base_url.is_none() {
                return Err(format!(
                    "Provider {name}: \"baseUrl\" is required when defining custom models."
                ));
            }
            // A local server on loopback (Ollama, llama.cpp, LM Studio) needs no key.
            let local = p
                .base_url
                .as_deref()
                .is_some_and(crate::http::is_loopback_url);
            if p.api_key.is_none() && !local {
                return Err(format!(
                    "Provider {name}: \"apiKey\" is required when defining custom models."
                ));
            }
        }
        for (id, o) in p.model_overrides.iter().flatten() {
            validate_prompt(
                &o.system_prompt,
                &o.append_system_prompt,
                &format!("{name}/{id}"),
            )?;
        }
        for m in models {
            validate_prompt(
                &m.system_prompt,
                &m.append_system_prompt,
                &format!("{name}/{}", m.id),
            )?;
            if p.api.is_none() && m.api.is_none() {
                return Err(format!(
                    "Provider {name}, model {}: no \"api\" specified. Set at provider or model level.",
                    m.id
                ));
            }
            if m.id.is_empty() {
                return Err(format!("Provider {name}: model missing \"id\""));
            }
            if m.context_window.is_some_and(|v| v <= 0.0) {
                return Err(format!(
                    "Provider {name}, model {}: invalid contextWindow",
                    m.id
                ));
            }
            if m.max_tokens.is_some_and(|v| v <= 0.0) {
                return Err(format!(
                    "Provider {name}, model {}: invalid maxTokens",
                    m.id
                ));
            }
        }
    }
    Ok(())
}

fn non_empty_strings(v: &Value, path: &str, errors: &mut Vec<String>) {
    // The reference's schema requires non-empty strings for these keys.
    for key in [
        "baseUrl",
        "apiKey",
        "api",
        "id",
        "name",
        "systemPrompt",
        "appendSystemPrompt",
    ] {
        if v.get(key)
            .and_then(Value::as_str)
            .is_some_and(str::is_empty)
        {
            errors.push(format!(
                "  - {path}/{key}: must NOT have fewer than 1 characters"
            ));
        }
    }
}

fn load_custom(path: &Path) -> Result<Custom, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Custom::default()),
        Err(e) => {
            return Err(format!(
                "Failed to load models.json: {e}\n\nFile: {}",
                path.display()
            ));
        }
    };
    let raw: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "Failed to parse models.json: {e}\n\nFile: {}",
            path.display()
        )
    })?;
    let mut errors = Vec::new();
    if let Some(ps) = raw.get("providers").and_then(Value::as_object) {
        for (name, p) in ps {
            non_empty_strings(p, &format!("/providers/{name}"), &mut errors);
            for (i, m) in p
                .get("models")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                non_empty_strings(m, &format!("/providers/{name}/models/{i}"), &mut errors);
            }
        }
    }
    let config: ModelsConfig = match serde_json::from_value(raw) {
        Ok(c) if errors.is_empty() => c,
        Ok(_) => {
            return Err(format!(
                "Invalid models.json schema:\n{}\n\nFile: {}",
                errors.join("\n"),
                path.display()
            ));
        }
        Err(e) => {
            return Err(format!(
                "Invalid models.json schema:\n  - {e}\n\nFile: {}",
                path.display()
            ));
        }
    };
    validate(&config).map_err(|e| {
        format!(
            "Failed to load models.json: {e}\n\nFile: {}",
            path.display()
        )
    })?;

    let mut custom = Custom::default();
    for (name, p) in &config.providers {
        if let Some(k) = &p.api_key {
            custom.provider_keys.insert(name.clone(), k.clone());
        }
        for def in p.models.iter().flatten() {
            let Some(model) = custom_model(name, p, def) else {
                continue;
            };
            if let Some(s) = prompt_settings(&def.system_prompt, &def.append_system_prompt) {
                custom.prompts.insert((name.clone(), def.id.clone()), s);
            }
            custom.models.push(model);
        }
    }
    custom.providers = config.providers;
    Ok(custom)
}

/// A model a provider config defines (`models.json`, or a provider an extension registered); none without an `api`.
fn custom_model(name: &str, p: &ProviderConfig, def: &ModelDef) -> Option<Model> {
    let api = def.api.clone().or_else(|| p.api.clone())?;
    let provider_headers = resolve_headers(&p.headers);
    let model_headers = resolve_headers(&def.headers);
    let headers = match (provider_headers, model_headers) {
        (None, None) => None,
        (a, b) => merge_headers(&a, b),
    };
    let mut model = Model {
        id: def.id.clone(),
        name: def.name.clone().unwrap_or_else(|| def.id.clone()),
        api: api.into(),
        provider: name.to_string(),
        base_url: def
            .base_url
            .clone()
            .or_else(|| p.base_url.clone())
            .unwrap_or_default(),
        reasoning: def.reasoning.unwrap_or(false),
        input: def.input.clone().unwrap_or_else(|| vec![InputKind::Text]),
        cost: def.cost.unwrap_or_default(),
        context_window: def.context_window.map(|v| v as i64).unwrap_or(128_000),
        max_tokens: def.max_tokens.map(|v| v as i64).unwrap_or(16_384),
        headers,
        wire_model_id: None,
        auth_mode: None,
        compat: merge_compat(&p.compat, &def.compat),
    };
    apply_auth_header(&mut model, p.auth_header, &p.api_key);
    Some(model)
}

/// The reference's checks of a provider an extension registers (`registerProvider`), with its texts.
fn validate_registered(name: &str, p: &ProviderConfig) -> Result<(), String> {
    let models = p.models.as_deref().unwrap_or(&[]);
    if models.is_empty() {
        return Ok(());
    }
    if p.base_url.is_none() {
        return Err(format!(
            "Provider {name}: \"baseUrl\" is required when defining models."
        ));
    }
    if p.api_key.is_none() {
        return Err(format!(
            "Provider {name}: \"apiKey\" or \"oauth\" is required when defining models."
        ));
    }
    for m in models {
        if m.api.is_none() && p.api.is_none() {
            return Err(format!(
                "Provider {name}, model {}: no \"api\" specified.",
                m.id
            ));
        }
    }
    Ok(())
}

/// Apply a registered provider over `models`: its models replace the provider's, else its `baseUrl` / headers /
/// auth override the provider's existing models (the reference's `registerProvider`).
fn apply_registered(models: &mut Vec<Model>, name: &str, p: &ProviderConfig) {
    let defs = p.models.as_deref().unwrap_or(&[]);
    if !defs.is_empty() {
        models.retain(|m| m.provider != name);
        models.extend(defs.iter().filter_map(|d| custom_model(name, p, d)));
    } else if let Some(url) = &p.base_url {
        for m in models.iter_mut().filter(|m| m.provider == name) {
            m.headers = merge_headers(&m.headers, resolve_headers(&p.headers));
            apply_auth_header(m, p.auth_header, &p.api_key);
            m.base_url = url.clone();
        }
    }
}

/// All known models plus the credentials that make them usable.
#[derive(Debug, Clone)]
pub struct ModelRegistry {
    models: Vec<Model>,
    prompts: HashMap<(String, String), ModelPromptSettings>,
    provider_keys: HashMap<String, String>,
    models_json: Option<PathBuf>,
    auth: AuthStorage,
    error: Option<String>,
    /// Providers registered at run time (by extensions), applied over models.json, in registration order.
    registered: IndexMap<String, ProviderConfig>,
}

impl ModelRegistry {
    /// Reads `<agent_dir>/models.json` and `<agent_dir>/auth.json` (missing files are fine). A broken models.json
    /// leaves only the built-in models and is reported by [`ModelRegistry::error`], with the file path.
    pub fn load(agent_dir: &Path) -> Self {
        Self::with_files(
            Some(agent_dir.join("models.json")),
            AuthStorage::load(agent_dir.join("auth.json")),
        )
    }

    /// Built-in models only, credentials from the environment.
    pub fn builtin() -> Self {
        Self::with_files(None, AuthStorage::in_memory())
    }

    pub fn with_files(models_json: Option<PathBuf>, auth: AuthStorage) -> Self {
        let mut r = ModelRegistry {
            models: Vec::new(),
            prompts: HashMap::new(),
            provider_keys: HashMap::new(),
            models_json,
            auth,
            error: None,
            registered: IndexMap::new(),
        };
        r.refresh();
        r
    }

    /// Re-reads `models.json` and `auth.json` (the `reload` path). Runtime API keys survive.
    pub fn refresh(&mut self) {
        self.auth.reload();
        let custom = match &self.models_json {
            Some(p) => load_custom(p),
            None => Ok(Custom::default()),
        };
        let (custom, error) = match custom {
            Ok(c) => (c, None),
            Err(e) => (Custom::default(), Some(e)),
        };
        let mut models = builtin_models();
        for m in models.iter_mut() {
            if let Some(p) = custom.providers.get(&m.provider) {
                if p.base_url.is_some()
                    || p.headers.is_some()
                    || p.api_key.is_some()
                    || p.compat.is_some()
                    || p.auth_header.is_some()
                {
                    m.headers = merge_headers(&m.headers, resolve_headers(&p.headers));
                    apply_auth_header(m, p.auth_header, &p.api_key);
                    if let Some(u) = &p.base_url {
                        m.base_url = u.clone();
                    }
                    m.compat = merge_compat(&m.compat, &p.compat);
                }
                if let Some(o) = p.model_overrides.as_ref().and_then(|o| o.get(&m.id)) {
                    apply_override(m, o);
                }
            }
        }
        let mut prompts = HashMap::new();
        for (name, p) in &custom.providers {
            for (id, o) in p.model_overrides.iter().flatten() {
                if let Some(s) = prompt_settings(&o.system_prompt, &o.append_system_prompt) {
                    prompts.insert((name.clone(), id.clone()), s);
                }
            }
        }
        for cm in custom.models {
            let key = (cm.provider.clone(), cm.id.clone());
            prompts.remove(&key);
            match models
                .iter_mut()
                .find(|m| m.provider == cm.provider && m.id == cm.id)
            {
                Some(existing) => *existing = cm,
                None => models.push(cm),
            }
        }
        prompts.extend(custom.prompts);
        let mut provider_keys = custom.provider_keys;
        for (name, p) in &self.registered {
            apply_registered(&mut models, name, p);
            if let Some(k) = &p.api_key {
                provider_keys.insert(name.clone(), k.clone());
            }
        }
        self.models = models;
        self.prompts = prompts;
        self.provider_keys = provider_keys;
        self.error = error;
    }

    /// Register (or replace) a provider at run time, as an extension's `registerProvider` does: `config` is the
    /// reference's `ProviderConfig` (`baseUrl`, `apiKey`, `api`, `headers`, `authHeader`, `models`). Its models
    /// replace the provider's; with only a `baseUrl`, the provider's models are pointed there. Errors are the
    /// reference's texts.
    pub fn register_provider(&mut self, name: &str, config: &Value) -> Result<(), String> {
        let p: ProviderConfig = serde_json::from_value(config.clone())
            .map_err(|e| format!("Provider {name}: invalid config: {e}"))?;
        validate_registered(name, &p)?;
        self.registered.insert(name.to_string(), p);
        self.refresh();
        Ok(())
    }

    /// Forget every provider registered at run time (the built-in and models.json ones come back).
    pub fn clear_registered_providers(&mut self) {
        if !self.registered.is_empty() {
            self.registered.clear();
            self.refresh();
        }
    }

    /// The models.json (or auth.json) problem from the last load, naming the file.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref().or(self.auth.error())
    }

    pub fn auth(&self) -> &AuthStorage {
        &self.auth
    }

    pub fn auth_mut(&mut self) -> &mut AuthStorage {
        &mut self.auth
    }

    /// `--api-key`: a runtime key for one provider.
    pub fn set_runtime_api_key(&mut self, provider: &str, key: &str) {
        self.auth.set_runtime_api_key(provider, key);
    }

    /// Every model, built-in first, then custom ones.
    pub fn all(&self) -> &[Model] {
        &self.models
    }

    /// Whether the provider has any credential: override, auth.json, environment, or a models.json `apiKey`.
    pub fn has_auth(&self, provider: &str) -> bool {
        self.auth.has_stored(provider)
            || env_api_key(provider).is_some()
            || self
                .provider_keys
                .get(provider)
                .is_some_and(|k| resolve_config_value(k).is_some())
    }

    /// Models usable now (their provider has credentials). The offline `faux` model is never listed: it is chosen
    /// explicitly (`--provider faux`).
    pub fn available(&self) -> Vec<Model> {
        self.available_iter().cloned().collect()
    }

    fn available_iter(&self) -> impl Iterator<Item = &Model> {
        self.models.iter().filter(|m| self.is_available(m))
    }

    fn is_available(&self, m: &Model) -> bool {
        m.api != api::FAUX && (self.has_auth(&m.provider) || !crate::providers::requires_api_key(m))
    }

    /// The model `provider/id` when it is available (see [`ModelRegistry::available`]).
    pub fn find_available(&self, provider: &str, id: &str) -> Option<&Model> {
        self.available_iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    /// The API key for a provider: override → auth.json → environment → models.json `apiKey`.
    pub fn api_key(&self, provider: &str) -> Option<String> {
        self.auth.api_key(provider).or_else(|| {
            self.provider_keys
                .get(provider)
                .and_then(|k| resolve_config_value(k))
        })
    }

    /// The key to send for a model: `Ok(None)` for models that need none (`faux`), `Err` with the reference's text
    /// when one is needed but missing.
    pub fn api_key_for(&self, model: &Model) -> Result<Option<String>, String> {
        if model.api == api::FAUX {
            return Ok(None);
        }
        if !crate::providers::requires_api_key(model) {
            // A local server: its key when one is configured, else none.
            return Ok(self.api_key(&model.provider));
        }
        self.api_key(&model.provider)
            .map(Some)
            .ok_or_else(|| format!("No API key for provider: {}", model.provider))
    }

    /// Exact lookup.
    pub fn find(&self, provider: &str, id: &str) -> Option<&Model> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    /// Models of one provider.
    pub fn provider_models(&self, provider: &str) -> Vec<&Model> {
        self.models
            .iter()
            .filter(|m| m.provider == provider)
            .collect()
    }

    /// The provider's default model (its catalog default, else its first model).
    pub fn default_for_provider(&self, provider: &str) -> Option<&Model> {
        let models = self.provider_models(provider);
        default_model_id(provider)
            .and_then(|d| models.iter().find(|m| m.id == d).copied())
            .or(models.first().copied())
    }

    /// The model to use when none was chosen: the first available provider default in the reference's provider
    /// order, else the first available model.
    pub fn default_model(&self) -> Option<Model> {
        for p in DEFAULT_PROVIDER_ORDER {
            if let Some(d) = default_model_id(p)
                && let Some(m) = self.find_available(p, d)
            {
                return Some(m.clone());
            }
        }
        self.available_iter().next().cloned()
    }

    /// Per-model system prompt settings from models.json.
    pub fn prompt_settings(&self, provider: &str, id: &str) -> Option<ModelPromptSettings> {
        self.prompts
            .get(&(provider.to_string(), id.to_string()))
            .cloned()
    }

    /// Fuzzy lookup within `models`: exact id (case-insensitive) → substring of id or name → prefer alias ids (no
    /// `-YYYYMMDD` suffix, or `-latest`) → the lexicographically highest.
    pub fn find_in<'a>(pattern: &str, models: &'a [Model]) -> Option<&'a Model> {
        let p = pattern.to_lowercase();
        if let Some(m) = models.iter().find(|m| m.id.to_lowercase() == p) {
            return Some(m);
        }
        let matches: Vec<&Model> = models
            .iter()
            .filter(|m| m.id.to_lowercase().contains(&p) || m.name.to_lowercase().contains(&p))
            .collect();
        let is_alias = |id: &str| {
            id.ends_with("-latest")
                || !(id.len() > 9
                    && id.as_bytes()[id.len() - 9] == b'-'
                    && id[id.len() - 8..].bytes().all(|b| b.is_ascii_digit()))
        };
        let mut aliases: Vec<&Model> = matches
            .iter()
            .copied()
            .filter(|m| is_alias(&m.id))
            .collect();
        let mut dated: Vec<&Model> = matches
            .iter()
            .copied()
            .filter(|m| !is_alias(&m.id))
            .collect();
        aliases.sort_by(|a, b| b.id.cmp(&a.id));
        dated.sort_by(|a, b| b.id.cmp(&a.id));
        aliases.first().or(dated.first()).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_providers_add_models_or_move_existing_ones_and_go_away() {
        let mut r = ModelRegistry::builtin();
        let before = r.all().len();
        let config = serde_json::json!({
            "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "k", "api": "openai-completions",
            "models": [{"id": "m1", "name": "M1", "reasoning": false, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 1000, "maxTokens": 100}]
        });
        r.register_provider("ext", &config).unwrap();
        let m = r.find("ext", "m1").unwrap();
        assert_eq!(
            (m.base_url.as_str(), m.context_window),
            ("http://127.0.0.1:9/v1", 1000)
        );
        assert!(r.available().iter().any(|m| m.provider == "ext"));
        // Registrations survive a refresh (reload re-reads models.json).
        r.refresh();
        assert!(r.find("ext", "m1").is_some());
        // Only a baseUrl: the provider's existing models move there.
        let anthropic = r.provider_models("anthropic").len();
        assert!(anthropic > 0);
        r.register_provider(
            "anthropic",
            &serde_json::json!({"baseUrl": "http://127.0.0.1:9"}),
        )
        .unwrap();
        let moved = r.provider_models("anthropic");
        assert_eq!(moved.len(), anthropic);
        assert!(moved.iter().all(|m| m.base_url == "http://127.0.0.1:9"));
        r.clear_registered_providers();
        assert_eq!(r.all().len(), before);
        assert!(r.find("ext", "m1").is_none());
        assert!(
            r.provider_models("anthropic")
                .iter()
                .all(|m| m.base_url != "http://127.0.0.1:9")
        );
    }

    #[test]
    fn registered_providers_are_checked_with_the_reference_texts() {
        let mut r = ModelRegistry::builtin();
        let model = serde_json::json!({"id": "m", "name": "M"});
        let cases = [
            (
                serde_json::json!({"apiKey": "k", "api": "openai-completions", "models": [model]}),
                "Provider p: \"baseUrl\" is required when defining models.",
            ),
            (
                serde_json::json!({"baseUrl": "http://h", "api": "openai-completions", "models": [model]}),
                "Provider p: \"apiKey\" or \"oauth\" is required when defining models.",
            ),
            (
                serde_json::json!({"baseUrl": "http://h", "apiKey": "k", "models": [model]}),
                "Provider p, model m: no \"api\" specified.",
            ),
        ];
        for (config, error) in cases {
            assert_eq!(r.register_provider("p", &config).unwrap_err(), error);
        }
        assert!(r.provider_models("p").is_empty());
    }

    #[test]
    fn catalog_has_the_reference_defaults() {
        let r = ModelRegistry::builtin();
        for p in ["anthropic", "openai", "google"] {
            let d = r.default_for_provider(p).unwrap();
            assert_eq!(Some(d.id.as_str()), default_model_id(p));
        }
        assert!(r.find("faux", "faux").is_some());
        assert_eq!(
            ModelRegistry::find_in("sonnet-4-5", r.all()).unwrap().id,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            ModelRegistry::find_in(
                "opus",
                &r.provider_models("anthropic")
                    .into_iter()
                    .cloned()
                    .collect::<Vec<_>>()
            )
            .unwrap()
            .id,
            "claude-opus-4-6"
        );
    }
}
