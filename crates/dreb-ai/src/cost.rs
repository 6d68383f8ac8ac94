//! Usage cost: `cost.x = model.cost.x / 1e6 * usage.x`, total = sum (prices are dollars per million tokens).

use crate::types::{Model, Usage};

/// Recomputes `usage.cost` from the token counts and the model's prices.
pub fn calculate_cost(model: &Model, usage: &mut Usage) {
    let c = &mut usage.cost;
    c.input = model.cost.input / 1_000_000.0 * usage.input as f64;
    c.output = model.cost.output / 1_000_000.0 * usage.output as f64;
    c.cache_read = model.cost.cache_read / 1_000_000.0 * usage.cache_read as f64;
    c.cache_write = model.cost.cache_write / 1_000_000.0 * usage.cache_write as f64;
    c.total = c.input + c.output + c.cache_read + c.cache_write;
}

/// A token count read from a provider's JSON (`u64`) as the wire type holds it (`i64`; never negative).
pub(crate) fn tokens(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Unix time in milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Outgoing text clean-up. The reference strips NUL and unpaired UTF-16 surrogates; Rust strings cannot hold
/// unpaired surrogates, so only NUL remains to strip.
pub(crate) fn sanitize(text: &str) -> String {
    if text.contains('\0') {
        text.replace('\0', "")
    } else {
        text.to_string()
    }
}
