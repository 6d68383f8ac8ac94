//! `get_daily_cost`: today's cost (local calendar day) summed over every session file under `<agentDir>/sessions`.
//! The first call scans; later calls answer from the cache, which is rescanned once it is a minute old.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Local, NaiveDate, TimeZone, Utc};
use serde_json::Value;

pub(crate) const REFRESH_AFTER: Duration = Duration::from_secs(60);

/// Today's cost and when it was computed (empty until the first `get_daily_cost`).
#[derive(Default)]
pub(crate) struct DailyCostCache(std::sync::Mutex<Option<(f64, std::time::Instant)>>);

impl DailyCostCache {
    /// The cached cost, while it is less than [`REFRESH_AFTER`] old.
    pub(crate) fn fresh(&self) -> Option<f64> {
        match *crate::sync::lock(&self.0) {
            Some((cost, at)) if at.elapsed() < REFRESH_AFTER => Some(cost),
            _ => None,
        }
    }

    pub(crate) fn store(&self, cost: f64) {
        *crate::sync::lock(&self.0) = Some((cost, std::time::Instant::now()));
    }
}

/// The UTC instant of a session filename's timestamp part (`2026-04-09T18-49-11-406Z`).
pub(crate) fn filename_timestamp(part: &str) -> Option<DateTime<Utc>> {
    let b = part.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|s| s.iter().all(u8::is_ascii_digit))
    };
    let shape = b.len() == 24
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b'-'
        && digits(14..16)
        && b[16] == b'-'
        && digits(17..19)
        && b[19] == b'-'
        && digits(20..23)
        && b[23] == b'Z';
    if !shape {
        return None;
    }
    let iso = format!(
        "{}T{}:{}:{}.{}Z",
        &part[0..10],
        &part[11..13],
        &part[14..16],
        &part[17..19],
        &part[20..23]
    );
    DateTime::parse_from_rfc3339(&iso)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

/// Sum of `message.usage.cost.total` over the assistant message entries of one file (unreadable files and
/// malformed lines count as zero).
fn file_cost(path: &Path) -> f64 {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0.0;
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        .filter_map(|e| e["message"]["usage"]["cost"]["total"].as_f64())
        .sum()
}

/// Today's total over `<sessions_dir>/*/*.jsonl`, choosing files by the timestamp in their name.
pub(crate) fn scan_daily_cost(sessions_dir: &Path, today: NaiveDate) -> f64 {
    let Ok(dirs) = std::fs::read_dir(sessions_dir) else {
        return 0.0;
    };
    let mut total = 0.0;
    for dir in dirs.flatten() {
        if !dir.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(files) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".jsonl") {
                continue;
            }
            // `<timestamp>_<uuid>.jsonl`: the separator is searched from index 20, as the reference does.
            let Some(underscore) = name
                .get(20..)
                .and_then(|rest| rest.find('_'))
                .map(|i| i + 20)
            else {
                continue;
            };
            let Some(stamp) = filename_timestamp(&name[..underscore]) else {
                continue;
            };
            if Local.from_utc_datetime(&stamp.naive_utc()).date_naive() != today {
                continue;
            }
            total += file_cost(&file.path());
        }
    }
    total
}
