//! Conversions between the lower crates' data types that still mirror a wire type (the messages: see
//! "The data model" in docs/architecture.md) and the generated protocol types. The types share one
//! wire JSON shape, so converting through JSON is lossless; a failure is a bug worth a clear error. A type that is
//! one type on both sides (`dreb_types`, re-exported by `dreb-ai` and `dreb-protocol`) needs no conversion.

use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) fn wire<T: Serialize, U: DeserializeOwned>(value: &T) -> Result<U, String> {
    // Through JSON text rather than a `serde_json::Value` tree: no map of hashed keys is built and taken apart
    // again (a quarter faster for a model, less memory for long message lists).
    let bytes = serde_json::to_vec(value).map_err(|e| {
        format!(
            "internal error: cannot encode {}: {e}",
            std::any::type_name::<T>()
        )
    })?;
    // On failure, the tree route: the text parser stops at 128 nesting levels (deeply nested tool arguments, say),
    // the tree has no limit; and a real mismatch gets its error message from there.
    serde_json::from_slice(&bytes).or_else(|_| through_value(value))
}

fn through_value<T: Serialize, U: DeserializeOwned>(value: &T) -> Result<U, String> {
    let v = serde_json::to_value(value).map_err(|e| {
        format!(
            "internal error: cannot encode {}: {e}",
            std::any::type_name::<T>()
        )
    })?;
    serde_json::from_value(v).map_err(|e| {
        format!(
            "internal error: cannot convert to {}: {e}",
            std::any::type_name::<U>()
        )
    })
}

/// The agent's messages as wire JSON values.
pub(crate) fn message_values(agent: &dreb_agent::Agent) -> Vec<serde_json::Value> {
    agent
        .messages()
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn converts_like_the_value_tree_including_deep_nesting() {
        let mut deep = json!("leaf");
        for _ in 0..300 {
            deep = json!({ "a": [deep] });
        }
        let samples = [
            json!({"b": 1, "a": [1.5, -2, null, "x\u{2028}"], "c": {"z": true, "y": 18446744073709551615u64}}),
            deep,
        ];
        for sample in samples {
            let converted: Value = wire(&sample).unwrap();
            assert_eq!(converted, sample);
            assert_eq!(
                serde_json::to_string(&converted).unwrap(),
                serde_json::to_string(&sample).unwrap(),
                "key order kept"
            );
        }
    }

    #[test]
    fn a_mismatch_is_an_internal_error() {
        let err = wire::<_, Vec<u32>>(&json!({"not": "a list"})).unwrap_err();
        assert!(
            err.starts_with("internal error: cannot convert to"),
            "{err}"
        );
    }
}
