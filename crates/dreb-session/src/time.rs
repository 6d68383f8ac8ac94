//! Timestamps in the reference's formats: ISO strings from `Date#toISOString()` (always milliseconds and `Z`) and
//! millisecond numbers from `Date.now()`.

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};

/// `new Date().toISOString()`.
pub fn now_iso() -> String {
    iso_from_datetime(Utc::now())
}

/// `Date.now()`.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

pub fn iso_from_datetime(dt: DateTime<Utc>) -> String {
    dt.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `new Date(ms).toISOString()`; `None` outside chrono's range.
pub fn iso_from_ms(ms: i64) -> Option<String> {
    Utc.timestamp_millis_opt(ms).single().map(iso_from_datetime)
}

/// `new Date(text).getTime()` for the ISO forms sessions contain; `None` where JavaScript would give `NaN`.
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(text) {
        return Some(dt.timestamp_millis());
    }
    // Date-time without an offset is local time in JavaScript; sessions never contain it, so treat it as UTC.
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(text, fmt) {
            return Some(dt.and_utc().timestamp_millis());
        }
    }
    // A bare date is UTC midnight in JavaScript.
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|dt| dt.and_utc().timestamp_millis())
}

/// The file-name form of an ISO timestamp: `:` and `.` replaced by `-`.
pub fn file_timestamp(iso: &str) -> String {
    iso.replace([':', '.'], "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip() {
        assert_eq!(
            parse_iso_ms("2026-12-01T06:28:51.222Z"),
            Some(1796106531222)
        );
        assert_eq!(
            iso_from_ms(1796106531222).unwrap(),
            "2026-12-01T06:28:51.222Z"
        );
        assert_eq!(
            iso_from_ms(1796106531000).unwrap(),
            "2026-12-01T06:28:51.000Z"
        );
        assert_eq!(parse_iso_ms("not a date"), None);
        assert_eq!(
            file_timestamp("2026-04-09T18:49:11.406Z"),
            "2026-04-09T18-49-11-406Z"
        );
        let now = now_iso();
        assert_eq!(now.len(), 24, "{now}");
        assert!(now.ends_with('Z'));
    }
}
