//! The model registry: built-in catalog, models.json (custom providers, overrides, errors), credentials.

use dreb_ai::auth::env_api_key;
use dreb_ai::*;
use serde_json::json;

fn registry_with(models_json: &str, auth_json: Option<&str>) -> (tempfile::TempDir, ModelRegistry) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("models.json"), models_json).unwrap();
    if let Some(a) = auth_json {
        std::fs::write(dir.path().join("auth.json"), a).unwrap();
    }
    let r = ModelRegistry::load(dir.path());
    (dir, r)
}

/// A few entries of the reference's generated catalogue (see `scripts/refresh-models.py`), field by field.
#[test]
fn builtin_catalogue_matches_the_reference_entries() {
    let r = ModelRegistry::builtin();
    let entry = |provider: &str, id: &str| {
        let m = r
            .find(provider, id)
            .unwrap_or_else(|| panic!("{provider}/{id}"));
        let input: Vec<&str> = m
            .input
            .iter()
            .map(|k| match k {
                InputKind::Text => "text",
                InputKind::Image => "image",
            })
            .collect();
        (
            m.name.clone(),
            m.reasoning,
            input.join("+"),
            [
                m.cost.input.get(),
                m.cost.output.get(),
                m.cost.cache_read.get(),
                m.cost.cache_write.get(),
            ],
            m.context_window,
            m.max_tokens,
        )
    };
    let row = |name: &str, reasoning, input: &str, cost: [f64; 4], window, max| {
        (
            name.to_string(),
            reasoning,
            input.to_string(),
            cost,
            window,
            max,
        )
    };
    assert_eq!(
        entry("anthropic", "claude-opus-4-6"),
        row(
            "Claude Opus 4.6",
            true,
            "text+image",
            [5.0, 25.0, 0.5, 6.25],
            1_000_000,
            128_000
        )
    );
    assert_eq!(
        entry("anthropic", "claude-sonnet-4-6"),
        row(
            "Claude Sonnet 4.6",
            true,
            "text+image",
            [3.0, 15.0, 0.3, 3.75],
            1_000_000,
            64_000
        )
    );
    assert_eq!(
        entry("anthropic", "claude-3-5-haiku-latest"),
        row(
            "Claude Haiku 3.5 (latest)",
            false,
            "text+image",
            [0.8, 4.0, 0.08, 1.0],
            200_000,
            8_192
        )
    );
    assert_eq!(
        entry("openai", "gpt-5.4"),
        row(
            "GPT-5.4",
            true,
            "text+image",
            [2.5, 15.0, 0.25, 0.0],
            272_000,
            128_000
        )
    );
    assert_eq!(
        entry("openai", "o3-mini"),
        row(
            "o3-mini",
            true,
            "text",
            [1.1, 4.4, 0.55, 0.0],
            200_000,
            100_000
        )
    );
    assert_eq!(
        entry("google", "gemini-3-pro-preview"),
        row(
            "Gemini 3 Pro Preview",
            true,
            "text+image",
            [2.0, 12.0, 0.2, 0.0],
            1_000_000,
            64_000
        )
    );
    assert_eq!(
        entry("google", "gemini-2.0-flash"),
        row(
            "Gemini 2.0 Flash",
            false,
            "text+image",
            [0.1, 0.4, 0.025, 0.0],
            1_048_576,
            8_192
        )
    );
    // The whole catalogue of each provider, in the reference's order.
    let counts: Vec<usize> = ["anthropic", "openai", "google"]
        .iter()
        .map(|p| r.provider_models(p).len())
        .collect();
    assert_eq!(counts, [23, 40, 25]);
    assert_eq!(
        r.provider_models("anthropic")[0].id,
        "claude-3-5-haiku-20241022"
    );
}

#[test]
fn builtin_catalog_covers_three_providers_with_prices() {
    let r = ModelRegistry::builtin();
    for (provider, api_name) in [
        ("anthropic", api::ANTHROPIC_MESSAGES),
        ("openai", api::OPENAI_RESPONSES),
        ("google", api::GOOGLE_GENERATIVE_AI),
    ] {
        let models = r.provider_models(provider);
        assert!(models.len() >= 5, "{provider}");
        for m in &models {
            assert_eq!(m.api, api_name);
            assert!(m.base_url.starts_with("https://"));
            assert!(m.cost.input >= 0.0 && m.cost.output >= 0.0);
            assert!(m.context_window > 0 && m.max_tokens > 0);
        }
        // Only the free open-weights models (gemma) have no price.
        assert!(
            models
                .iter()
                .filter(|m| m.cost.input == 0.0)
                .all(|m| m.id.starts_with("gemma-")),
            "{provider}"
        );
    }
    assert_eq!(
        r.default_for_provider("anthropic").unwrap().id,
        "claude-opus-4-6"
    );
    assert_eq!(r.default_for_provider("openai").unwrap().id, "gpt-5.4");
    assert_eq!(
        r.default_for_provider("google").unwrap().id,
        "gemini-2.5-pro"
    );
}

#[test]
fn custom_openai_compatible_provider() {
    let (_d, r) = registry_with(
        r#"{"providers": {"local": {
            "baseUrl": "http://127.0.0.1:11434/v1", "api": "openai-completions", "apiKey": "ollama",
            "headers": {"X-Team": "!printf blue"}, "compat": {"supportsDeveloperRole": false},
            "models": [{"id": "qwen3-coder"}, {"id": "vision", "input": ["text", "image"], "reasoning": true,
                        "compat": {"thinkingFormat": "qwen"}, "systemPrompt": "Be brief."}]
        }}}"#,
        None,
    );
    assert!(r.error().is_none(), "{:?}", r.error());
    let m = r.find("local", "qwen3-coder").unwrap();
    assert_eq!(m.name, "qwen3-coder");
    assert_eq!(
        (m.context_window, m.max_tokens, m.reasoning),
        (128_000, 16_384, false)
    );
    assert_eq!(m.input, vec![InputKind::Text]);
    assert_eq!(m.headers.as_ref().unwrap()["X-Team"], "blue");
    assert_eq!(json!(m.compat), json!({"supportsDeveloperRole": false}));
    let v = r.find("local", "vision").unwrap();
    assert_eq!(
        json!(v.compat),
        json!({"supportsDeveloperRole": false, "thinkingFormat": "qwen"})
    );
    assert_eq!(
        r.prompt_settings("local", "vision")
            .unwrap()
            .system_prompt
            .as_deref(),
        Some("Be brief.")
    );
    assert_eq!(r.api_key("local").as_deref(), Some("ollama"));
    assert!(r.has_auth("local"));
    assert!(r.available().iter().any(|m| m.provider == "local"));
}

#[test]
fn auth_header_and_overrides_of_builtin_models() {
    let (_d, r) = registry_with(
        r#"{"providers": {
            "anthropic": {"baseUrl": "https://proxy.example/anthropic", "modelOverrides": {
                "claude-opus-4-6": {"name": "Opus via proxy", "cost": {"input": 1}, "maxTokens": 1000}}},
            "gw": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "gw-key", "authHeader": true,
                   "models": [{"id": "m"}]}
        }}"#,
        None,
    );
    assert!(r.error().is_none(), "{:?}", r.error());
    let opus = r.find("anthropic", "claude-opus-4-6").unwrap();
    assert_eq!(opus.name, "Opus via proxy");
    assert_eq!(opus.base_url, "https://proxy.example/anthropic");
    assert_eq!(
        (
            opus.cost.input.get(),
            opus.cost.output.get(),
            opus.max_tokens
        ),
        (1.0, 25.0, 1000)
    );
    assert!(
        r.provider_models("anthropic")
            .iter()
            .all(|m| m.base_url == "https://proxy.example/anthropic")
    );
    let gw = r.find("gw", "m").unwrap();
    assert_eq!(gw.auth_mode.map(|m| m.as_str()), Some("bearer"));
    assert_eq!(
        gw.headers.as_ref().unwrap()["Authorization"],
        "Bearer gw-key"
    );
}

#[test]
fn custom_models_replace_builtins_with_the_same_id() {
    let (_d, r) = registry_with(
        r#"{"providers": {"openai": {"baseUrl": "http://127.0.0.1:9/v1", "apiKey": "k", "api": "openai-completions",
            "models": [{"id": "gpt-5.4", "name": "Mine", "reasoning": true}]}}}"#,
        None,
    );
    let m = r.find("openai", "gpt-5.4").unwrap();
    assert_eq!(
        (m.name.as_str(), m.api.as_str()),
        ("Mine", "openai-completions")
    );
    assert_eq!(
        r.all()
            .iter()
            .filter(|m| m.provider == "openai" && m.id == "gpt-5.4")
            .count(),
        1
    );
}

#[test]
fn a_local_server_on_loopback_needs_no_api_key() {
    for (name, base_url) in [
        ("ollama", "http://localhost:11434/v1"),
        ("llamacpp", "http://127.0.0.1:8080/v1"),
        ("lmstudio", "http://[::1]:1234/v1"),
    ] {
        let (_dir, r) = registry_with(
            &format!(
                r#"{{"providers": {{"{name}": {{"baseUrl": "{base_url}", "api": "openai-completions", "models": [{{"id": "qwen3:8b"}}]}}}}}}"#
            ),
            None,
        );
        assert_eq!(r.error(), None, "{name}");
        let m = r.find(name, "qwen3:8b").unwrap().clone();
        assert!(
            r.available().iter().any(|a| a.provider == name),
            "{name} is usable without a key"
        );
        assert_eq!(r.api_key_for(&m), Ok(None), "{name}");
    }
    // A key given for a local server is still used.
    let (_dir, r) = registry_with(
        r#"{"providers": {"proxy": {"baseUrl": "http://127.0.0.1:4000/v1", "apiKey": "sk-local", "api": "openai-completions", "models": [{"id": "m"}]}}}"#,
        None,
    );
    let m = r.find("proxy", "m").unwrap().clone();
    assert_eq!(r.api_key_for(&m), Ok(Some("sk-local".into())));
}

#[test]
fn broken_models_json_keeps_builtins_and_names_the_file() {
    let cases = [
        ("{not json", "Failed to parse models.json: "),
        (
            r#"{"providers": {"x": {"models": [{"id": "a"}], "api": "openai-completions", "apiKey": "k"}}}"#,
            "Failed to load models.json: Provider x: \"baseUrl\" is required when defining custom models.",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "models": [{"id": "a"}], "api": "openai-completions"}}}"#,
            "Failed to load models.json: Provider x: \"apiKey\" is required when defining custom models.",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "apiKey": "k", "models": [{"id": "a"}]}}}"#,
            "Failed to load models.json: Provider x, model a: no \"api\" specified. Set at provider or model level.",
        ),
        (
            r#"{"providers": {"x": {}}}"#,
            "Failed to load models.json: Provider x: must specify \"baseUrl\", \"compat\", \"modelOverrides\", or \"models\".",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "apiKey": "k", "api": "a", "models": [{"id": "a", "systemPrompt": "s", "appendSystemPrompt": "t"}]}}}"#,
            "Failed to load models.json: models.json entry x/a cannot define both systemPrompt and appendSystemPrompt",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": "http://h", "models": "nope"}}}"#,
            "Invalid models.json schema:\n  - ",
        ),
        (
            r#"{"providers": {"x": {"baseUrl": ""}}}"#,
            "Invalid models.json schema:\n  - /providers/x/baseUrl: must NOT have fewer than 1 characters",
        ),
        (
            r#"{"models": []}"#,
            "Invalid models.json schema:\n  - missing field `providers`",
        ),
    ];
    for (text, prefix) in cases {
        let (dir, r) = registry_with(text, None);
        let err = r.error().unwrap_or_else(|| panic!("no error for {text}"));
        assert!(
            err.starts_with(prefix),
            "{err:?} should start with {prefix:?}"
        );
        let path = dir.path().join("models.json");
        assert!(
            err.ends_with(&format!("\n\nFile: {}", path.display())),
            "{err}"
        );
        assert!(
            r.find("anthropic", "claude-opus-4-6").is_some(),
            "built-ins survive"
        );
        assert!(r.all().iter().all(|m| m.provider != "x"));
    }
}

#[test]
fn reload_picks_up_changes_and_keeps_runtime_keys() {
    let (dir, mut r) = registry_with(r#"{"providers": {}}"#, None);
    r.set_runtime_api_key("late", "runtime");
    std::fs::write(
        dir.path().join("models.json"),
        r#"{"providers": {"late": {"baseUrl": "http://h", "apiKey": "file", "api": "openai-completions", "models": [{"id": "z"}]}}}"#,
    )
    .unwrap();
    assert!(r.find("late", "z").is_none());
    std::fs::write(
        dir.path().join("auth.json"),
        r#"{"other": {"type": "api_key", "key": "from-auth"}}"#,
    )
    .unwrap();
    r.refresh();
    assert_eq!(
        r.api_key("other").as_deref(),
        Some("from-auth"),
        "auth.json is re-read too"
    );
    assert!(r.find("late", "z").is_some());
    assert_eq!(
        r.api_key("late").as_deref(),
        Some("runtime"),
        "--api-key beats models.json"
    );
}

#[test]
fn credentials_decide_availability_and_the_default_model() {
    let (_d, r) = registry_with(
        r#"{"providers": {}}"#,
        Some(r#"{"anthropic": {"type": "api_key", "key": "sk-ant-test"}}"#),
    );
    assert_eq!(r.api_key("anthropic").as_deref(), Some("sk-ant-test"));
    assert!(r.available().iter().any(|m| m.id == "claude-opus-4-6"));
    assert!(
        r.available().iter().all(|m| m.api != api::FAUX),
        "faux is never listed"
    );
    assert_eq!(r.default_model().unwrap().id, "claude-opus-4-6");
    if env_api_key("google").is_none() {
        assert!(!r.has_auth("google"));
        assert!(r.available().iter().all(|m| m.provider != "google"));
        let m = r.find("google", "gemini-2.5-pro").unwrap();
        assert_eq!(
            r.api_key_for(m),
            Err("No API key for provider: google".to_string())
        );
    }
    let faux = r.find("faux", "faux").unwrap();
    assert_eq!(r.api_key_for(faux), Ok(None));

    let (_d, mut r) = registry_with(r#"{"providers": {}}"#, None);
    r.set_runtime_api_key("openai", "sk-runtime");
    assert!(r.has_auth("openai"));
    if env_api_key("anthropic").is_none() {
        assert_eq!(r.default_model().unwrap().id, "gpt-5.4");
    }
}

#[test]
fn env_variable_names_per_provider() {
    use dreb_ai::auth::env_var_names;
    assert_eq!(
        env_var_names("anthropic"),
        ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"]
    );
    assert_eq!(env_var_names("openai"), ["OPENAI_API_KEY"]);
    assert_eq!(env_var_names("google"), ["GEMINI_API_KEY"]);
    assert_eq!(env_var_names("zai"), ["ZAI_API_KEY", "ZHIPU_API_KEY"]);
}

#[test]
fn providers_env_file_fills_missing_variables() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("providers.env");
    std::fs::write(&p, "# keys\nDREB_TEST_ONLY_KEY_A=\"quoted value\"\nexport DREB_TEST_ONLY_KEY_B=plain\nPATH=/nope\n").unwrap();
    assert_eq!(
        dreb_ai::auth::load_providers_env(&p),
        2,
        "PATH is already set and is not overridden"
    );
    assert_eq!(
        dreb_ai::auth::env_var("DREB_TEST_ONLY_KEY_A").as_deref(),
        Some("quoted value")
    );
    assert_eq!(
        dreb_ai::auth::env_var("DREB_TEST_ONLY_KEY_B").as_deref(),
        Some("plain")
    );
    assert_ne!(dreb_ai::auth::env_var("PATH").as_deref(), Some("/nope"));
    // A models.json apiKey naming a variable resolves through it.
    assert_eq!(
        dreb_ai::auth::resolve_config_value("DREB_TEST_ONLY_KEY_B").as_deref(),
        Some("plain")
    );
    assert_eq!(
        dreb_ai::auth::resolve_config_value("literal-key").as_deref(),
        Some("literal-key")
    );
}

#[test]
fn fuzzy_lookup_prefers_aliases() {
    let r = ModelRegistry::builtin();
    let anthropic: Vec<Model> = r
        .provider_models("anthropic")
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(
        ModelRegistry::find_in("CLAUDE-OPUS-4-6", &anthropic)
            .unwrap()
            .id,
        "claude-opus-4-6"
    );
    assert_eq!(
        ModelRegistry::find_in("haiku", &anthropic).unwrap().id,
        "claude-haiku-4-5"
    );
    assert_eq!(
        ModelRegistry::find_in("sonnet-4-2025", &anthropic)
            .unwrap()
            .id,
        "claude-sonnet-4-20250514"
    );
    assert!(ModelRegistry::find_in("gpt", &anthropic).is_none());
}
