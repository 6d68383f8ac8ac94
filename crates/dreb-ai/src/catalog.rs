//! The built-in model catalogue (`data/models.json`), compiled by `build.rs` into a static table: building the models
//! at start-up copies a few strings per model instead of parsing the JSON (a quarter of the start-up's CPU).

use dreb_types::JsNumber;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::types::{AuthMode, InputKind as ModelInput, Model, ModelCost};

/// A provider of the catalogue: its preferred model and its models, in file order.
pub(crate) struct CatalogProvider {
    pub name: &'static str,
    pub default_model: &'static str,
    pub models: &'static [CatalogModel],
}

/// A catalogue model: the fields every entry has, and the JSON text of any others (`headers`, `wireModelId`,
/// `authMode`, `compat`), read when the model is built.
pub(crate) struct CatalogModel {
    pub id: &'static str,
    pub name: &'static str,
    pub api: &'static str,
    pub provider: &'static str,
    pub base_url: &'static str,
    pub reasoning: bool,
    pub input: &'static [ModelInput],
    /// `input`, `output`, `cacheRead`, `cacheWrite`.
    pub cost: [f64; 4],
    pub context_window: i64,
    pub max_tokens: i64,
    pub extra: Option<&'static str>,
}

include!(concat!(env!("OUT_DIR"), "/catalog.rs"));

/// The optional fields of a model, as `Model` reads them.
#[derive(Deserialize)]
struct Extra {
    #[serde(default)]
    headers: Option<indexmap::IndexMap<String, String>>,
    #[serde(rename = "wireModelId", default)]
    wire_model_id: Option<String>,
    #[serde(rename = "authMode", default)]
    auth_mode: Option<AuthMode>,
    #[serde(default)]
    compat: Option<Map<String, Value>>,
}

impl CatalogModel {
    fn model(&self) -> Model {
        let extra = self.extra.map(|text| {
            serde_json::from_str::<Extra>(text).expect("build.rs wrote the model's other fields")
        });
        let (headers, wire_model_id, auth_mode, compat) = match extra {
            Some(e) => (e.headers, e.wire_model_id, e.auth_mode, e.compat),
            None => (None, None, None, None),
        };
        let [input, output, cache_read, cache_write] = self.cost;
        Model {
            id: self.id.to_string(),
            name: self.name.to_string(),
            api: self.api.into(),
            provider: self.provider.to_string(),
            base_url: self.base_url.to_string(),
            reasoning: self.reasoning,
            input: self.input.to_vec(),
            cost: ModelCost {
                input: JsNumber(input),
                output: JsNumber(output),
                cache_read: JsNumber(cache_read),
                cache_write: JsNumber(cache_write),
            },
            context_window: self.context_window,
            max_tokens: self.max_tokens,
            headers,
            wire_model_id,
            auth_mode,
            compat,
        }
    }
}

/// Every built-in model, in catalogue order.
pub fn builtin_models() -> Vec<Model> {
    PROVIDERS
        .iter()
        .flat_map(|p| p.models.iter().map(CatalogModel::model))
        .collect()
}

/// The catalogue's preferred model of `provider`, when the catalogue has the provider.
pub(crate) fn catalog_default(provider: &str) -> Option<&'static str> {
    PROVIDERS
        .iter()
        .find(|p| p.name == provider)
        .map(|p| p.default_model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;

    #[derive(Deserialize)]
    struct JsonProvider {
        #[serde(rename = "defaultModel")]
        default_model: String,
        models: Vec<Model>,
    }

    #[derive(Deserialize)]
    struct JsonCatalog {
        providers: IndexMap<String, JsonProvider>,
    }

    /// The table is the JSON as serde reads it: the same providers, defaults and models, in the same order.
    #[test]
    fn the_compiled_table_equals_the_parsed_json() {
        let parsed: JsonCatalog =
            serde_json::from_str(include_str!("../data/models.json")).unwrap();
        let names: Vec<&str> = parsed.providers.keys().map(String::as_str).collect();
        let table_names: Vec<&str> = PROVIDERS.iter().map(|p| p.name).collect();
        assert_eq!(table_names, names);
        for (name, p) in &parsed.providers {
            assert_eq!(catalog_default(name), Some(p.default_model.as_str()));
        }
        let json_models: Vec<Model> = parsed
            .providers
            .into_values()
            .flat_map(|p| p.models)
            .collect();
        let built = builtin_models();
        assert_eq!(built.len(), json_models.len());
        for (b, j) in built.iter().zip(&json_models) {
            assert_eq!(b, j, "{}/{}", j.provider, j.id);
            // Bit for bit (`==` on f64 would let -0.0 equal 0.0).
            let bits = |m: &Model| {
                [
                    m.cost.input,
                    m.cost.output,
                    m.cost.cache_read,
                    m.cost.cache_write,
                ]
                .map(|n| n.0.to_bits())
            };
            assert_eq!(bits(b), bits(j), "{}/{}", j.provider, j.id);
            assert_eq!(
                serde_json::to_string(b).unwrap(),
                serde_json::to_string(j).unwrap()
            );
        }
    }

    /// Fields only some models carry are read from the entry's JSON text.
    #[test]
    fn other_fields_come_from_the_entry_text() {
        let entry = CatalogModel {
            id: "m",
            name: "M",
            api: "openai-completions",
            provider: "p",
            base_url: "http://h",
            reasoning: true,
            input: &[ModelInput::Text],
            cost: [1.0, 2.0, 0.5, 0.25],
            context_window: 1000,
            max_tokens: 100,
            extra: Some(
                r#"{"headers":{"X-A":"1"},"wireModelId":"m-wire","authMode":"bearer","compat":{"k":true}}"#,
            ),
        };
        let json = r#"{"id":"m","name":"M","api":"openai-completions","provider":"p","baseUrl":"http://h",
            "reasoning":true,"input":["text"],"cost":{"input":1,"output":2,"cacheRead":0.5,"cacheWrite":0.25},
            "contextWindow":1000,"maxTokens":100,"headers":{"X-A":"1"},"wireModelId":"m-wire","authMode":"bearer",
            "compat":{"k":true}}"#;
        assert_eq!(entry.model(), serde_json::from_str::<Model>(json).unwrap());
    }
}
