//! The terminal companion (`buddy_hatch`, `buddy_reroll`). Its "bones" (species, rarity, stats, eyes, hat) are
//! deterministic from `user@host` and the reroll count, with the reference's FNV-1a seed and Mulberry32 generator,
//! so a buddy looks the same in dreb and dreb-rs. Its "soul" (name, personality, backstory) comes from one LLM call
//! with the session model; when that call fails the reference's fixed fallbacks are used. Only the soul and the
//! reroll count are stored, in `<agentDir>/buddy.json`.

use std::path::{Path, PathBuf};

use dreb_ai::{Context, Message, Model, StreamOptions, UserContent, UserMessage};
use dreb_protocol::errors::{BuddyHatchError, BuddyRerollError};
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use serde_json::{Map, Value, json};

use crate::services::Runtime;

const SALT: &str = "dreb-buddy-v1";
const DEFAULT_BACKSTORY: &str = "A mysterious past shrouded in legend.";

const RARITIES: [(BuddyRarity, f64); 5] = [
    (BuddyRarity::Common, 60.0),
    (BuddyRarity::Uncommon, 25.0),
    (BuddyRarity::Rare, 10.0),
    (BuddyRarity::Epic, 4.0),
    (BuddyRarity::Legendary, 1.0),
];
/// Species in the reference's order, with the lowest rarity (index into RARITIES) each can appear at.
const SPECIES: [(&str, usize); 18] = [
    ("Duck", 0),
    ("Goose", 0),
    ("Blob", 0),
    ("Cat", 0),
    ("Dragon", 1),
    ("Octopus", 1),
    ("Owl", 1),
    ("Penguin", 1),
    ("Turtle", 0),
    ("Snail", 0),
    ("Ghost", 2),
    ("Axolotl", 2),
    ("Capybara", 1),
    ("Cactus", 0),
    ("Robot", 3),
    ("Rabbit", 0),
    ("Mushroom", 2),
    ("Chonk", 0),
];
const EYES: [&str; 6] = ["●", "○", "◉", "⊙", "◎", "°"];
const HATS: [&str; 8] = ["", "🎩", "👑", "🎓", "🧢", "👒", "⛑️", "🪖"];
pub(crate) const STAT_NAMES: [&str; 5] = ["DEBUGGING", "PATIENCE", "CHAOS", "WISDOM", "SNARK"];
/// Stat floor per rarity.
const STAT_FLOORS: [u32; 5] = [10, 20, 35, 50, 65];

/// FNV-1a over UTF-16 code units (JavaScript `charCodeAt`).
pub(crate) fn fnv1a(s: &str) -> u32 {
    s.encode_utf16().fold(0x811c_9dc5u32, |h, c| {
        (h ^ c as u32).wrapping_mul(0x0100_0193)
    })
}

/// Mulberry32: floats in [0, 1), bit-for-bit the JavaScript generator.
pub(crate) struct Mulberry32(i32);

impl Mulberry32 {
    pub(crate) fn new(seed: u32) -> Self {
        Mulberry32(seed as i32)
    }

    pub(crate) fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x6d2b_79f5);
        let s = self.0;
        let mut t = (s ^ ((s as u32) >> 15) as i32).wrapping_mul(1 | s);
        t = t.wrapping_add((t ^ ((t as u32) >> 7) as i32).wrapping_mul(61 | t)) ^ t;
        ((t ^ ((t as u32) >> 14) as i32) as u32) as f64 / 4_294_967_296.0
    }

    fn index(&mut self, len: usize) -> usize {
        ((self.next_f64() * len as f64).floor() as usize).min(len - 1)
    }
}

/// The deterministic part of a buddy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bones {
    pub species: &'static str,
    pub rarity: BuddyRarity,
    pub shiny: bool,
    pub stats: [u32; 5],
    pub eye_style: &'static str,
    pub hat: &'static str,
}

pub(crate) fn roll_bones(user: &str, host: &str, reroll_count: u64) -> Bones {
    let mut rng = Mulberry32::new(fnv1a(&format!("{user}@{host}:{SALT}:{reroll_count}")));
    // Rarity by weight, then a species whose floor the rarity meets.
    let mut roll = rng.next_f64() * RARITIES.iter().map(|r| r.1).sum::<f64>();
    let mut rarity = RARITIES.len() - 1;
    for (i, (_, w)) in RARITIES.iter().enumerate() {
        roll -= w;
        if roll <= 0.0 {
            rarity = i;
            break;
        }
    }
    let pool: Vec<&str> = SPECIES
        .iter()
        .filter(|(_, floor)| *floor <= rarity)
        .map(|(n, _)| *n)
        .collect();
    let species = pool[rng.index(pool.len())];
    let shiny = rng.next_f64() < 0.01;
    let eye_style = EYES[rng.index(EYES.len())];
    let hat = HATS[rng.index(HATS.len())];
    // One peak stat, one dump stat (different), the rest in the normal range.
    let floor = STAT_FLOORS[rarity];
    let peak = rng.index(STAT_NAMES.len());
    let mut dump = rng.index(STAT_NAMES.len());
    while dump == peak {
        dump = rng.index(STAT_NAMES.len());
    }
    let mut stats = [0u32; 5];
    stats[peak] = (rng.next_f64() * 31.0).floor() as u32 + 70;
    stats[dump] = (rng.next_f64() * 20.0).floor() as u32 + floor;
    for (i, stat) in stats.iter_mut().enumerate() {
        if i != peak && i != dump {
            *stat = (rng.next_f64() * (100 - floor) as f64).floor() as u32 + floor;
        }
    }
    Bones {
        species,
        rarity: RARITIES[rarity].0,
        shiny,
        stats,
        eye_style,
        hat,
    }
}

/// `USER` (or `LOGNAME`, else `user`) and the host name, as the reference seeds with.
fn identity() -> (String, String) {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "user".into());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    (user, host)
}

/// The persisted soul.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stored {
    pub reroll_count: u64,
    pub name: String,
    pub personality: String,
    pub backstory: String,
    pub hatched_at: String,
    pub hidden: Option<bool>,
    pub ollama_model: Option<String>,
}

fn buddy_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("buddy.json")
}

fn now_iso() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// The stored buddy; None when missing, unreadable or lacking the required fields.
pub(crate) fn load_stored(agent_dir: &Path) -> Option<Stored> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(buddy_path(agent_dir)).ok()?).ok()?;
    Some(Stored {
        reroll_count: v["rerollCount"].as_f64().filter(|n| *n >= 0.0)? as u64,
        name: v["name"].as_str()?.to_string(),
        personality: v["personality"].as_str()?.to_string(),
        backstory: v["backstory"]
            .as_str()
            .unwrap_or(DEFAULT_BACKSTORY)
            .to_string(),
        hatched_at: v["hatchedAt"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(now_iso),
        hidden: v["hidden"].as_bool(),
        ollama_model: v["ollamaModel"].as_str().map(str::to_string),
    })
}

fn save_stored(agent_dir: &Path, s: &Stored) -> Result<(), String> {
    std::fs::create_dir_all(agent_dir).map_err(|e| e.to_string())?;
    let mut v = Map::new();
    v.insert("rerollCount".into(), json!(s.reroll_count));
    v.insert("name".into(), json!(s.name));
    v.insert("personality".into(), json!(s.personality));
    v.insert("backstory".into(), json!(s.backstory));
    v.insert("hatchedAt".into(), json!(s.hatched_at));
    if let Some(h) = s.hidden {
        v.insert("hidden".into(), json!(h));
    }
    if let Some(m) = &s.ollama_model {
        v.insert("ollamaModel".into(), json!(m));
    }
    let text = serde_json::to_string_pretty(&Value::Object(v)).map_err(|e| e.to_string())?;
    // Write then rename, so a reader never sees half a file.
    let tmp = agent_dir.join(format!(
        ".buddy-{}-{}.json.tmp",
        std::process::id(),
        chrono::Utc::now().timestamp_millis()
    ));
    std::fs::write(&tmp, text).map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, buddy_path(agent_dir)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        e.to_string()
    })
}

pub(crate) fn buddy_state(bones: &Bones, s: &Stored) -> BuddyState {
    let [debugging, patience, chaos, wisdom, snark] = bones.stats.map(i64::from);
    BuddyState {
        species: bones.species.to_string(),
        rarity: bones.rarity,
        shiny: bones.shiny,
        stats: BuddyStats {
            debugging,
            patience,
            chaos,
            wisdom,
            snark,
        },
        eye_style: bones.eye_style.to_string(),
        hat: bones.hat.to_string(),
        reroll_count: i64::try_from(s.reroll_count).unwrap_or(i64::MAX),
        name: s.name.clone(),
        personality: s.personality.clone(),
        backstory: s.backstory.clone(),
        hatched_at: s.hatched_at.clone(),
        hidden: s.hidden,
        ollama_model: s.ollama_model.clone(),
    }
}

fn soul_prompt(b: &Bones) -> String {
    let stats: Vec<String> = STAT_NAMES
        .iter()
        .zip(b.stats)
        .map(|(n, v)| format!("{n}: {v}"))
        .collect();
    format!(
        "Invent a small companion character who lives in the sidebar of a terminal coding assistant.\n\n\
         Species: {}\nRarity: {}\nStats: {}\nShiny: {}\n\n\
         Give it a name of 4 to 8 letters that is not an English word, a programming term, a command or the species \
         name, and is easy to type (prefer common letters; avoid q, x, z and j). Then one sentence of personality, \
         then a short, funny backstory of two or three sentences with concrete places, events or former jobs.\n\n\
         Answer in exactly this format:\nNAME: <name>\nPERSONALITY: <one sentence>\nBACKSTORY: <two or three sentences>",
        b.species,
        b.rarity.as_str(),
        stats.join(", "),
        if b.shiny { "YES ✨" } else { "no" }
    )
}

/// The text after `label:` (case-insensitive) on its line; for the last field, everything after it.
fn field(text: &str, label: &str, to_end: bool) -> Option<String> {
    let lower = text.to_lowercase();
    let start = lower.find(&format!("{}:", label.to_lowercase()))? + label.len() + 1;
    let rest = text.get(start..)?.trim_start();
    let value = if to_end {
        rest.trim()
    } else {
        rest.lines().next().unwrap_or("").trim()
    };
    (!value.is_empty()).then(|| value.to_string())
}

/// Name, personality and backstory from the model's answer, with the reference's fallbacks for missing parts.
pub(crate) fn parse_soul(text: &str, b: &Bones) -> (String, String, String) {
    let name = field(text, "NAME", false).unwrap_or_else(|| b.species.to_string());
    let name: String = name.chars().take(8).collect();
    let personality = field(text, "PERSONALITY", false)
        .unwrap_or_else(|| format!("A {} {} companion.", b.rarity.as_str(), b.species));
    let backstory = field(text, "BACKSTORY", true).unwrap_or_else(|| DEFAULT_BACKSTORY.to_string());
    (name, personality, backstory)
}

/// The session model and its key, or the reference's clean errors.
fn buddy_model(rt: &Runtime) -> Result<(Model, Option<String>), BuddyRerollError> {
    let model = rt.agent.model().ok_or(BuddyRerollError::NoModel)?;
    let registry = rt.models.registry();
    let key = registry
        .api_key_for(&model)
        .map_err(|_| BuddyRerollError::NoApiKey)?;
    Ok((model, key))
}

/// One completion with the session model; any failure gives empty text (so the fallbacks apply).
async fn soul_text(rt: &Runtime, model: &Model, api_key: Option<String>, bones: &Bones) -> String {
    let context = Context {
        system_prompt: Some(
            "You create companion characters. Reply in exactly the requested format.".into(),
        ),
        messages: vec![Message::User(UserMessage {
            role: Default::default(),
            content: UserContent::Text(soul_prompt(bones)),
            timestamp: chrono::Utc::now().timestamp_millis(),
        })],
        tools: Vec::new(),
    };
    let options = StreamOptions {
        api_key,
        cancel: rt.stop.child_token(),
        ..Default::default()
    };
    let stream = dreb_ai::LlmClient::stream(rt.models.providers(), model, &context, options);
    match dreb_ai::final_message(stream).await {
        Some(Ok(message)) => message.text(),
        Some(Err(error)) => {
            tracing::warn!(
                "buddy soul generation failed: {}",
                error.error_message.unwrap_or_default()
            );
            String::new()
        }
        None => String::new(),
    }
}

/// `buddy_hatch` and `buddy_reroll`; the errors are `buddy_reroll`'s, a superset of `buddy_hatch`'s.
async fn new_buddy(rt: &Runtime, reroll: bool) -> Result<BuddyResult, BuddyRerollError> {
    let (model, key) = buddy_model(rt)?;
    let agent_dir = rt.agent_dir.clone();
    let _serial = rt.buddy.lock().await;
    let stored = load_stored(&agent_dir);
    if reroll && stored.is_none() {
        return Err(BuddyRerollError::NoBuddy);
    }
    let previous = stored.as_ref().map_or(0, |s| s.reroll_count);
    let reroll_count = if reroll { previous + 1 } else { previous };
    let (user, host) = identity();
    let bones = roll_bones(&user, &host, reroll_count);
    let text = soul_text(rt, &model, key, &bones).await;
    let (name, personality, backstory) = parse_soul(&text, &bones);
    let soul = Stored {
        reroll_count,
        name,
        personality,
        backstory,
        hatched_at: now_iso(),
        hidden: None,
        ollama_model: stored.and_then(|s| s.ollama_model),
    };
    let dir = agent_dir.clone();
    let to_save = soul.clone();
    tokio::task::spawn_blocking(move || save_stored(&dir, &to_save))
        .await
        .map_err(BuddyRerollError::unexpected)?
        .map_err(BuddyRerollError::unexpected)?;
    Ok(BuddyResult {
        state: buddy_state(&bones, &soul),
    })
}

/// The `Buddy` commands.
impl BuddyHandler for Runtime {
    async fn buddy_hatch(
        &self,
        _ctx: &RequestContext,
        _p: BuddyHatchParams,
    ) -> Result<BuddyResult, BuddyHatchError> {
        new_buddy(self, false).await.map_err(|e| match e {
            BuddyRerollError::NoModel => BuddyHatchError::NoModel,
            BuddyRerollError::NoApiKey => BuddyHatchError::NoApiKey,
            other => BuddyHatchError::unexpected(other),
        })
    }

    async fn buddy_reroll(
        &self,
        _ctx: &RequestContext,
        _p: BuddyRerollParams,
    ) -> Result<BuddyResult, BuddyRerollError> {
        new_buddy(self, true).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soul_parsing_and_fallbacks() {
        let b = roll_bones("alice", "box", 0);
        let (n, p, s) = parse_soul(
            "NAME: Wobblethorp\nPERSONALITY: Calm.\nBACKSTORY: Once a lighthouse keeper.\nThen a poet.",
            &b,
        );
        assert_eq!(
            (n.as_str(), p.as_str(), s.as_str()),
            (
                "Wobbleth",
                "Calm.",
                "Once a lighthouse keeper.\nThen a poet."
            )
        );
        let (n, p, s) = parse_soul("", &b);
        assert_eq!(n, b.species);
        assert_eq!(
            p,
            format!("A {} {} companion.", b.rarity.as_str(), b.species)
        );
        assert_eq!(s, DEFAULT_BACKSTORY);
    }
}

#[cfg(test)]
mod reference_values {
    use super::*;

    /// Values computed with the reference's JavaScript generator.
    #[test]
    fn prng_matches_javascript() {
        assert_eq!(fnv1a("seed"), 1346747564);
        let mut r = Mulberry32::new(fnv1a("seed"));
        assert_eq!(
            [r.next_f64(), r.next_f64(), r.next_f64()],
            [
                0.9498909888789058,
                0.07608804851770401,
                0.026259300531819463
            ]
        );
    }

    #[test]
    fn bones_match_javascript() {
        type Case = (
            &'static str,
            &'static str,
            u64,
            &'static str,
            &'static str,
            bool,
            [u32; 5],
            &'static str,
            &'static str,
        );
        let cases: [Case; 8] = [
            (
                "alice",
                "box",
                0,
                "Rabbit",
                "Common",
                false,
                [27, 48, 17, 33, 77],
                "○",
                "🪖",
            ),
            (
                "alice",
                "box",
                4,
                "Goose",
                "Rare",
                false,
                [84, 39, 53, 100, 46],
                "⊙",
                "🪖",
            ),
            (
                "alice",
                "box",
                8,
                "Turtle",
                "Uncommon",
                false,
                [86, 39, 65, 39, 98],
                "●",
                "👒",
            ),
            (
                "alice",
                "box",
                59,
                "Turtle",
                "Epic",
                false,
                [72, 62, 79, 57, 77],
                "◉",
                "⛑️",
            ),
            (
                "alice",
                "box",
                63,
                "Blob",
                "Uncommon",
                true,
                [91, 86, 39, 50, 100],
                "○",
                "",
            ),
            (
                "alice",
                "box",
                87,
                "Cactus",
                "Legendary",
                false,
                [75, 96, 79, 82, 76],
                "◉",
                "🎓",
            ),
            (
                "bob",
                "devbox.local",
                7,
                "Blob",
                "Common",
                false,
                [19, 97, 32, 24, 84],
                "●",
                "👑",
            ),
            (
                "ü",
                "h",
                3,
                "Blob",
                "Common",
                false,
                [81, 58, 27, 93, 35],
                "●",
                "👒",
            ),
        ];
        for (user, host, count, species, rarity, shiny, stats, eye_style, hat) in cases {
            let expected = Bones {
                species,
                rarity: BuddyRarity::from_wire(rarity).unwrap(),
                shiny,
                stats,
                eye_style,
                hat,
            };
            assert_eq!(
                roll_bones(user, host, count),
                expected,
                "{user}@{host}:{count}"
            );
        }
    }
}
