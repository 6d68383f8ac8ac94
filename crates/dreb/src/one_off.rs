//! The reference's one-off command lines: `--list-models [search]` and `--export <file> [out]` print or write, then
//! the process exits (no serving).

use std::path::{Path, PathBuf};

use dreb_ai::{Model, ModelRegistry};

/// `--list-models [search]`: the available models (provider, model, context, max output, thinking, images), those
/// whose `provider/id` or name contains every word of `search` (case-insensitive). Exit code 0, or 1 when none.
pub fn list_models(agent_dir: &Path, search: &str) -> (String, i32) {
    let registry = ModelRegistry::load(agent_dir);
    let words: Vec<String> = search.split_whitespace().map(str::to_lowercase).collect();
    let mut models: Vec<Model> = registry
        .available()
        .into_iter()
        .filter(|m| {
            let hay = format!("{}/{} {}", m.provider, m.id, m.name).to_lowercase();
            words.iter().all(|w| hay.contains(w))
        })
        .collect();
    models.sort_by(|a, b| (&a.provider, &a.id).cmp(&(&b.provider, &b.id)));
    if models.is_empty() {
        let text = if search.trim().is_empty() {
            "No models available. Set an API key environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, \
             GEMINI_API_KEY, ...) or describe a provider in models.json.\n"
                .to_string()
        } else {
            format!("No models matching \"{}\".\n", search.trim())
        };
        return (text, 1);
    }
    let rows: Vec<[String; 6]> = models
        .iter()
        .map(|m| {
            [
                m.provider.clone(),
                m.id.clone(),
                tokens(m.context_window_tokens()),
                tokens(m.max_output_tokens()),
                yes_no(m.reasoning),
                yes_no(m.input.contains(&dreb_ai::InputKind::Image)),
            ]
        })
        .collect();
    let header = [
        "provider", "model", "context", "max-out", "thinking", "images",
    ]
    .map(String::from);
    let widths: Vec<usize> = (0..6)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows.iter()) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    (out, 0)
}

/// `200000` → `200K`, `1000000` → `1M`.
fn tokens(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1_000 {
        format!("{}K", n / 1_000)
    } else {
        n.to_string()
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// `--export <file> [out]`: the session file's current branch as HTML. The path written, or the error text.
pub fn export(args: &[PathBuf]) -> Result<PathBuf, String> {
    let file = &args[0];
    if !file.exists() {
        return Err(format!("Error: session file not found: {}", file.display()));
    }
    let session =
        dreb_session::SessionManager::open(file, None).map_err(|e| format!("Error: {e}"))?;
    let options = dreb_session::HtmlExportOptions {
        output_path: args.get(1).cloned(),
        system_prompt: None,
        tools: Vec::new(),
    };
    session
        .export_html(&options)
        .map_err(|e| format!("Error: {e}"))
}
