//! Shared test kit: a fake model catalog built from the reference's models.json fixture and
//! temp agent-dir / cwd layouts.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use dreb_settings::SettingsManager;
use dreb_settings::model_catalog::{ModelCatalog, ModelInfo, ScopeResolution};
use serde_json::Value;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// A catalog over fixed models, resolving scopes with the crate's reference rules.
#[derive(Clone, Default)]
pub struct FakeCatalog {
    pub models: Vec<ModelInfo>,
    pub fail: Option<String>,
}

impl FakeCatalog {
    /// Models of a reference models.json (all have keys).
    pub fn from_models_json(name: &str) -> Self {
        let v: Value = serde_json::from_str(&fixture_text(name)).unwrap();
        let mut models = Vec::new();
        for (provider, p) in v["providers"].as_object().unwrap() {
            for m in p["models"].as_array().unwrap() {
                models.push(ModelInfo {
                    provider: provider.clone(),
                    id: m["id"].as_str().unwrap().into(),
                    name: m["name"].as_str().unwrap().into(),
                    reasoning: m["reasoning"].as_bool().unwrap(),
                    supports_xhigh: false,
                    supports_max: false,
                });
            }
        }
        Self { models, fail: None }
    }

    pub fn reference() -> Self {
        Self::from_models_json("models.json")
    }

    pub fn with(
        mut self,
        provider: &str,
        id: &str,
        reasoning: bool,
        xhigh: bool,
        max: bool,
    ) -> Self {
        self.models.push(ModelInfo {
            provider: provider.into(),
            id: id.into(),
            name: id.into(),
            reasoning,
            supports_xhigh: xhigh,
            supports_max: max,
        });
        self
    }
}

impl ModelCatalog for FakeCatalog {
    fn available_models(&self) -> Result<Vec<ModelInfo>, String> {
        match &self.fail {
            Some(msg) => Err(msg.clone()),
            None => Ok(self.models.clone()),
        }
    }

    fn resolve_scope(&self, patterns: &[String], available: &[ModelInfo]) -> ScopeResolution {
        dreb_settings::model_scope::resolve_model_scope_patterns(patterns, available)
    }
}

/// A fresh `<home>/.dreb/agent` + `<home>/project` layout like the reference recordings.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub agent_dir: PathBuf,
    pub cwd: PathBuf,
}

impl Env {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let agent_dir = root.join(".dreb/agent");
        let cwd = root.join("project");
        std::fs::create_dir_all(&agent_dir).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        Self {
            dir,
            agent_dir,
            cwd,
        }
    }

    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    pub fn manager(&self) -> SettingsManager {
        SettingsManager::load(&self.agent_dir, &self.cwd)
    }

    pub fn global_path(&self) -> PathBuf {
        self.agent_dir.join("settings.json")
    }

    pub fn project_path(&self) -> PathBuf {
        self.cwd.join(".dreb/settings.json")
    }

    pub fn write_global(&self, text: &str) {
        std::fs::write(self.global_path(), text).unwrap();
    }

    pub fn write_project(&self, text: &str) {
        std::fs::create_dir_all(self.cwd.join(".dreb")).unwrap();
        std::fs::write(self.project_path(), text).unwrap();
    }

    pub fn global_text(&self) -> String {
        std::fs::read_to_string(self.global_path()).unwrap()
    }

    pub fn global_json(&self) -> Value {
        serde_json::from_str(&self.global_text()).unwrap()
    }

    /// Make a directory under the temp root and return its canonical path.
    pub fn mkdir(&self, rel: &str) -> String {
        let p = self.root().join(rel);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::canonicalize(p)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }
}

/// The snapshot as wire JSON.
pub fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}
