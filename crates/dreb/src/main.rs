//! `dreb --mode rpc`: serve the RPC protocol on stdin/stdout. Logs go to stderr (`DREB_LOG` or `RUST_LOG`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use dreb_cli::args::Args;
use dreb_cli::print_mode::PrintFormat;
use dreb_cli::{Output, OutputOptions, ServeOptions, ServeOutcome, serve, termination_signal};
use dreb_runtime::{Runtime, RuntimeOptions};
use tokio_util::sync::CancellationToken;

/// How long an idle blocking-pool thread waits for more work before it exits.
const BLOCKING_KEEP_ALIVE: Duration = Duration::from_millis(500);

fn init_logging(verbose: bool) {
    let filter = std::env::var("DREB_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| if verbose { "info" } else { "warn" }.to_string());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

fn main() -> ExitCode {
    let args = Args::parse_process_args();
    init_logging(args.verbose);
    if let Some(search) = &args.list_models {
        let (text, code) = dreb_cli::one_off::list_models(&dreb_ai::agent_dir(), search);
        if code == 0 {
            print!("{text}");
        } else {
            eprint!("{text}");
        }
        return ExitCode::from(code as u8);
    }
    if let Some(export) = &args.export {
        return match dreb_cli::one_off::export(export) {
            Ok(path) => {
                println!("Exported to: {}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        };
    }
    let checked = match args.print_format() {
        Some(_) => args.validate_for_print(),
        None => args.validate_for_rpc(),
    };
    if let Err(e) = checked {
        eprintln!("{e}");
        return ExitCode::from(1);
    }
    // Provider keys kept in ~/.dreb/secrets/providers.env, loaded at start-up as the reference does (variables
    // already set win). They serve the providers' key lookup only; the processes tools start do not inherit them.
    let providers_env = dreb_paths::home_dir().join(".dreb/secrets/providers.env");
    let loaded = dreb_ai::auth::load_providers_env(&providers_env);
    tracing::debug!("{loaded} variable(s) from {}", providers_env.display());
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_keep_alive(BLOCKING_KEEP_ALIVE)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Boxed: the future is large, and `block_on` would otherwise keep it on the main thread's stack.
    let code = runtime.block_on(Box::pin(run(args)));
    // stdin's reader thread may still be blocked in read(); do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    ExitCode::from(code as u8)
}

/// Piped stdin's text for a one-shot run, as the reference reads it: trimmed, `None` when stdin is a terminal or
/// sent only whitespace.
fn piped_stdin() -> Result<Option<String>, String> {
    use std::io::{IsTerminal, Read};
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    stdin
        .read_to_end(&mut bytes)
        .map_err(|e| format!("Error: cannot read the prompt from stdin: {e}"))?;
    let text = String::from_utf8_lossy(&bytes).trim().to_string();
    Ok((!text.is_empty()).then_some(text))
}

/// The prompts of a one-shot run (see `dreb_cli::file_args`): the `@file` arguments are read with the session's
/// `images.autoResize`.
async fn one_shot_prompts(
    runtime: &Runtime,
    args: &Args,
    stdin: Option<String>,
) -> Result<Vec<dreb_protocol::PromptParams>, String> {
    use dreb_protocol::handlers::SettingsHandler as _;
    let (files, messages) = dreb_cli::file_args::split_file_args(&args.messages);
    let parts = if files.is_empty() {
        Default::default()
    } else {
        let settings = runtime
            .get_settings(
                &dreb_protocol::support::RequestContext::detached(None),
                dreb_protocol::GetSettingsParams {},
            )
            .await?;
        let cwd = std::env::current_dir()
            .map_err(|e| format!("Error: cannot read the working directory: {e}"))?;
        dreb_cli::file_args::read_file_args(
            &files,
            &cwd,
            settings.image_auto_resize.unwrap_or(true),
        )?
    };
    let prompts =
        dreb_cli::print_mode::prompts(dreb_cli::file_args::combine(stdin, parts, messages));
    if prompts.is_empty() {
        return Err("Error: print mode needs a prompt: pass it as an argument or on stdin".into());
    }
    Ok(prompts)
}

async fn run(args: Args) -> i32 {
    let mut output_options = match OutputOptions::from_env() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let (stdout, pipe) = dreb_cli::stdio::stdout_with_probe();
    output_options.pipe = pipe;
    let (output, _writer) = Output::start(stdout, output_options);
    let stop = CancellationToken::new();
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("Error: cannot read the working directory: {e}");
            return 1;
        }
    };
    let options = RuntimeOptions {
        cwd,
        agent_dir: dreb_ai::agent_dir(),
        provider: args.provider.clone(),
        model: args.model.clone(),
        thinking: args.thinking.clone(),
        api_key: args.api_key.clone(),
        no_session: args.no_session,
        session: args.session.as_ref().map(Into::into),
        continue_recent: args.continue_recent,
        resource_flags: dreb_runtime::ResourceFlags {
            skills: args.skills.clone(),
            no_skills: args.no_skills,
            prompt_templates: args.prompt_templates.clone(),
            no_prompt_templates: args.no_prompt_templates,
        },
        fork: args.fork.as_ref().map(Into::into),
        session_dir: args.session_dir.clone(),
        parent_session: args.parent_session.clone(),
        agent_type: args.agent_type.clone(),
        subagent_binary: None,
        system_prompt: args.system_prompt.clone(),
        append_system_prompt: args.append_system_prompt.clone(),
        tools: args.tool_list(),
        models: args.models.clone(),
        providers: None,
        stop: stop.clone(),
        // The UI the system prompt names: `--ui`, else the mode's (the ACP front end sets its own).
        ui: Some(args.ui.clone().unwrap_or_else(|| {
            if args.print_format().is_some() {
                "cli"
            } else {
                "rpc"
            }
            .to_string()
        })),
        hooks: Vec::new(),
        extensions: dreb_runtime::ExtensionOptions {
            paths: args.extensions.iter().map(Into::into).collect(),
            no_extensions: args.no_extensions,
            flags: args.extension_flag_values(),
            has_ui: args.print_format().is_none(),
        },
        text_files: None,
        commands: None,
        mcp_servers: None,
    };
    if args.acp() {
        // Editors speak the Agent Client Protocol on stdin/stdout (crates/dreb-acp); `output` stays unused.
        let (stdin, stdout) = (dreb_cli::stdio::stdin(), dreb_cli::stdio::stdout());
        return dreb_acp::serve(options, stdin, stdout, termination_signal()).await;
    }
    let print = args.print_format();
    let stdin_text = match print {
        Some(_) => match piped_stdin() {
            Ok(text) => text,
            Err(e) => {
                eprintln!("{e}");
                return 1;
            }
        },
        None => None,
    };
    // Text mode prints only the final reply; JSON and RPC modes write every frame.
    let sink: Arc<dyn dreb_protocol::FrameSink> = match print {
        Some(PrintFormat::Text) => Arc::new(dreb_cli::print_mode::Discard),
        _ => Arc::new(output.clone()),
    };
    let runtime = match Runtime::start(options, sink) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    if let Some(format) = print {
        let prompts = match one_shot_prompts(&runtime, &args, stdin_text).await {
            Ok(prompts) => prompts,
            Err(e) => {
                eprintln!("{e}");
                stop.cancel();
                finish(&runtime, &output, ServeOptions::default().children_timeout).await;
                return 1;
            }
        };
        if format == PrintFormat::Json {
            runtime.outbox().send(&runtime.session_header());
        }
        let code = dreb_cli::print_mode::run(&runtime, format, prompts).await;
        stop.cancel();
        finish(&runtime, &output, ServeOptions::default().children_timeout).await;
        return code;
    }
    // Extension UI answers go to the runtime's dialog engine; they never get a response. Shutdown (the stop
    // token) settles the open dialogs inside the runtime.
    let dialogs = runtime.clone();
    let router = Arc::new(move |input: dreb_protocol::Input| dialogs.handle_input(&input));
    let mut serve_options = ServeOptions::default();
    // Tests (and cautious hosts) can lower the input line cap.
    if let Some(cap) = std::env::var("DREB_MAX_RECORD_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        serve_options.max_record_bytes = cap;
    }
    // How long the loop polls stdin after answering, in µs (0: never), for measuring the trade-off.
    if let Some(us) = std::env::var("DREB_INPUT_POLL_US")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        serve_options.input_poll_for = Duration::from_micros(us);
    }
    let (stdin, input_poll) = dreb_cli::stdio::stdin_with_poll();
    serve_options.input_poll = input_poll;
    let children_timeout = serve_options.children_timeout;
    let outcome = serve(
        Arc::new(runtime.clone()),
        router,
        stdin,
        output.clone(),
        // Responses go through the runtime's outbox, in order with the events.
        runtime.outbox(),
        serve_options,
        termination_signal(),
        stop,
    )
    .await;
    tracing::debug!(?outcome, "stopped serving");
    // The stop token already settles open dialogs from a task; do it here too so their handled events are
    // queued for certain before the last flush.
    runtime.shutdown();
    if matches!(outcome, ServeOutcome::OutputStalled) {
        // The run ends as an abort would end it (its `agent_end` is queued, its messages are in the session file);
        // what is still queued cannot be written, and stdout already ends on a whole line.
        let ended = runtime.wait_for_run_end(children_timeout).await;
        runtime.wait_for_children(children_timeout).await;
        eprintln!(
            "Error: the host stopped reading stdout: no output was accepted for {:.0} s while {} bytes were waiting. \
             {} Exiting with code {}.",
            output.since_progress().as_secs_f64(),
            output.queued_bytes(),
            if ended {
                "The run was aborted and the session saved."
            } else {
                "The run did not end in time; the session holds what was saved before."
            },
            dreb_cli::server::STALLED_EXIT_CODE,
        );
        return outcome.exit_code();
    }
    finish(&runtime, &output, children_timeout).await;
    outcome.exit_code()
}

/// The end of a normal exit: background children reaped, the hook handlers told (the reference awaits its
/// `session_shutdown` handlers), the performance log and stdout flushed.
async fn finish(runtime: &Runtime, output: &Output, children_timeout: Duration) {
    runtime.wait_for_children(children_timeout).await;
    runtime.announce_session_shutdown().await;
    runtime.stop_extensions().await;
    runtime.stop_mcp_servers().await;
    runtime.flush_performance_log().await;
    let _ = output.flush().await;
}
