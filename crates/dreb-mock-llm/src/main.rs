//! `dreb-mock-llm [--scenario FILE.json] [--port N]`: serves the mock LLM on 127.0.0.1, prints its base URL on
//! stdout, and runs until stdin closes.

use std::io::Read;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut scenario = dreb_mock_llm::Scenario::default();
    let mut port = 0u16;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--scenario" => {
                let Some(path) = args.next() else {
                    fail("--scenario needs a file")
                };
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| fail(&format!("cannot read {path}: {e}")));
                scenario = serde_json::from_str(&text)
                    .unwrap_or_else(|e| fail(&format!("invalid scenario {path}: {e}")));
            }
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| fail("--port needs a number"));
            }
            "-h" | "--help" => {
                println!("usage: dreb-mock-llm [--scenario FILE.json] [--port N]");
                return;
            }
            other => fail(&format!("unknown argument: {other}")),
        }
    }
    let mock = dreb_mock_llm::MockLlm::start_on(scenario, port)
        .unwrap_or_else(|e| fail(&format!("cannot start: {e}")));
    println!("{}", mock.base_url());
    // Serve until stdin closes (the parent went away).
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

fn fail(msg: &str) -> ! {
    eprintln!("dreb-mock-llm: {msg}");
    std::process::exit(2);
}
