//! Conversions between the crates' data types and the generated protocol types. The types share one wire JSON
//! shape, so converting through `serde_json::Value` is lossless; a failure is a bug worth a clear error.

use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) fn wire<T: Serialize, U: DeserializeOwned>(value: &T) -> Result<U, String> {
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
