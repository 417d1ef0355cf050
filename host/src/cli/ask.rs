//! `rkmcp ask` — one question, answered with the help of MCP tools; the answer is streamed to
//! stdout, tool calls and stats go to stderr.
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use rkmcp_llm::{AbiSetting, BackendKind, LlmError, ModelConfig};
use tokio_util::sync::CancellationToken;

use super::{Context, UsageError, turn_view};
use crate::chat::{ChatOptions, ChatSettings, start_chat};

/// Model selection and sampling flags shared by `ask` and `doctor`. Each overrides the `[model]`
/// table of the config.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ModelArgs {
    /// Backend: auto (by model file extension), llama (CPU, .gguf) or rkllm (NPU, .rkllm).
    #[arg(long, value_name = "auto|llama|rkllm")]
    pub backend: Option<BackendKind>,
    /// Model file (.gguf or .rkllm), or a file name in the model store (`rkmcp models list`).
    #[arg(long, short = 'm', value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// The RKLLM runtime library (librkllmrt.so).
    #[arg(long, env = "RKLLM_LIB", value_name = "PATH")]
    pub rkllm_lib: Option<PathBuf>,
    /// RKLLM C ABI of that library (default: read its version string).
    #[arg(long, value_name = "auto|1.2|1.3")]
    pub rkllm_abi: Option<AbiSetting>,
    /// Sampling temperature; 0 = greedy.
    #[arg(long)]
    pub temperature: Option<f32>,
    #[arg(long)]
    pub top_k: Option<i32>,
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Maximum tokens to generate.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    #[arg(long)]
    pub seed: Option<u32>,
    /// CPU threads (llama backend).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Context window in tokens.
    #[arg(long = "ctx", value_name = "TOKENS")]
    pub context_length: Option<u32>,
    /// Chat template: a built-in name (chatml, qwen, llama3, gemma, phi3) or a Jinja template.
    #[arg(long, value_name = "NAME")]
    pub chat_template: Option<String>,
}

impl ModelArgs {
    pub fn apply(&self, mut config: ModelConfig) -> ModelConfig {
        if let Some(v) = self.backend {
            config.backend = v;
        }
        if let Some(v) = &self.model {
            config.path = Some(v.clone());
        }
        if let Some(v) = &self.rkllm_lib {
            config.rkllm_lib = Some(v.clone());
        }
        if let Some(v) = self.rkllm_abi {
            config.rkllm_abi = v;
        }
        if let Some(v) = self.temperature {
            config.sampling.temperature = v;
        }
        if let Some(v) = self.top_k {
            config.sampling.top_k = v;
        }
        if let Some(v) = self.top_p {
            config.sampling.top_p = v;
        }
        if let Some(v) = self.max_tokens {
            config.max_new_tokens = v;
        }
        if let Some(v) = self.seed {
            config.sampling.seed = Some(v);
        }
        if let Some(v) = self.threads {
            config.threads = Some(v);
        }
        if let Some(v) = self.context_length {
            config.context_length = Some(v);
        }
        if let Some(v) = &self.chat_template {
            config.chat_template = Some(v.clone());
        }
        config
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
With MCP servers configured, the model may call their tools: each call is shown on stderr,
checked against the tool's schema and approved by [chat.approval] (or --yes) before it runs;
its result goes back to the model, which then answers. Without a terminal nobody can approve a
call, so calls that need approval are denied unless --yes is given or an auto_approve rule
matches. --json prints the whole transcript (messages, calls, approvals, results, stats).")]
pub struct AskArgs {
    /// The question; read from stdin when omitted.
    pub prompt: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub chat: ChatArgs,
    /// Approve every tool call (for scripts and tests; guard plugins can still deny).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// A GBNF grammar file the answer must match (llama backend; implies --no-tools).
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,
}

/// Chat-loop flags shared by `ask` and `chat`. Each overrides the `[chat]` table of the config.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ChatArgs {
    /// System prompt (before the tool list).
    #[arg(long)]
    pub system: Option<String>,
    /// Do not start MCP servers: a plain conversation with the model.
    #[arg(long)]
    pub no_tools: bool,
    /// Start only this configured server.
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// How the model writes tool calls (e.g. hermes, tool-call-json, llama3); default: from the
    /// model's chat template and name.
    #[arg(long, value_name = "FORMAT")]
    pub tool_format: Option<rkmcp_tool_formats::ToolFormat>,
    /// auto: the model decides; required: the first round must call a tool; none: no tools.
    #[arg(long, value_name = "auto|required|none")]
    pub tool_choice: Option<crate::chat::settings::ToolChoice>,
    /// With --tool-choice auto and a grammar: `explicit` makes the model first name a tool or
    /// `answer_directly` (tiny models otherwise answer in prose); `open` lets it start either way.
    #[arg(long, value_name = "explicit|open")]
    pub tool_decision: Option<crate::chat::settings::ToolDecision>,
    /// Show the model only the N tools that best match the message (0: all; auto: a few for a
    /// tiny model, all for others).
    #[arg(long, value_name = "N|auto")]
    pub tool_shortlist: Option<crate::chat::settings::Shortlist>,
    /// How much rounds that may call lean towards the words of your message, so a small model
    /// copies values from it instead of inventing them (0: not at all; auto: for a tiny model).
    #[arg(long, value_name = "N|auto")]
    pub copy_bias: Option<crate::chat::settings::CopyBias>,
    /// Let the model write freely instead of constraining calls with a grammar.
    #[arg(long)]
    pub no_constrain: bool,
    /// Read the model's answers with this detector plugin (a name from `rkmcp plugins list`)
    /// instead of the built-in detector.
    #[arg(long, value_name = "PLUGIN")]
    pub detector: Option<String>,
    /// Describe the tools to the model and hand it their results with this schema-converter
    /// plugin instead of the built-in converter.
    #[arg(long, value_name = "PLUGIN")]
    pub converter: Option<String>,
    /// Most generate → call rounds per question.
    #[arg(long, value_name = "N")]
    pub max_rounds: Option<u32>,
    /// Stop before this text (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub stop: Vec<String>,
    /// Show the model's reasoning (dimmed) before its answer (`[chat] show_reasoning`).
    #[arg(long)]
    pub show_reasoning: bool,
}

impl ChatArgs {
    pub fn apply(&self, mut settings: ChatSettings) -> ChatSettings {
        if let Some(v) = &self.system {
            settings.system_prompt = Some(v.clone());
        }
        if let Some(v) = self.tool_format {
            settings.tool_format = crate::chat::settings::Auto::Set(v);
        }
        if let Some(v) = self.tool_choice {
            settings.tool_choice = v;
        }
        if let Some(v) = self.tool_shortlist {
            settings.tool_shortlist = v;
        }
        if let Some(v) = self.tool_decision {
            settings.tool_decision = v;
        }
        if let Some(v) = self.copy_bias {
            settings.copy_bias = v;
        }
        if self.no_constrain {
            settings.constrained_decoding = false;
        }
        if let Some(v) = &self.detector {
            settings.detector = Some(v.clone());
        }
        if let Some(v) = &self.converter {
            settings.converter = Some(v.clone());
        }
        if let Some(v) = self.max_rounds {
            settings.max_rounds = v;
        }
        settings.stop.extend(self.stop.iter().cloned());
        if self.show_reasoning {
            settings.show_reasoning = true;
        }
        settings
    }
}

/// The `[model]` table of the configuration, with CLI flags applied on top.
pub(crate) fn model_config(ctx: &Context, args: &ModelArgs) -> anyhow::Result<ModelConfig> {
    let loaded = ctx.load_config()?;
    let sources: Vec<String> = loaded
        .sources
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let base: ModelConfig = toml::Value::Table(loaded.model).try_into().map_err(|e| {
        crate::config::ConfigError::new(format!("[model] in {}: {e}", sources.join(", ")))
    })?;
    let config = args.apply(base);
    config
        .validate()
        .map_err(|e| UsageError(format!("invalid model settings: {e}")))?;
    Ok(config)
}

/// Config mistakes are usage errors (exit 2); everything else is a run-time failure (exit 1).
pub(crate) fn llm_error(err: LlmError) -> anyhow::Error {
    match err {
        LlmError::Config(msg) => UsageError(msg).into(),
        other => other.into(),
    }
}

pub async fn run(ctx: &Context, args: AskArgs) -> anyhow::Result<ExitCode> {
    let config = ctx.load_config()?;
    let model = model_config(ctx, &args.model)?;
    super::sign_in_prompt::install_if_terminal();
    let mut settings = args.chat.apply(config.section::<ChatSettings>("chat")?);
    let prompt = match args.prompt {
        Some(p) => p,
        None => {
            if std::io::stdin().is_terminal() {
                return Err(
                    UsageError("no prompt: pass it as an argument or on stdin".into()).into(),
                );
            }
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            // `echo question | rkmcp ask` ends with a newline that is not part of the question.
            text.trim_end().to_string()
        }
    };
    if prompt.trim().is_empty() {
        return Err(UsageError("the prompt is empty".into()).into());
    }
    if let Some(path) = &args.grammar {
        settings.grammar = Some(
            std::fs::read_to_string(path)
                .map_err(|e| UsageError(format!("cannot read grammar {}: {e}", path.display())))?,
        );
    }

    let started = start_chat(
        &config,
        ChatOptions {
            model,
            settings,
            // `ask` is for scripts: nobody answers approval questions (use --yes or auto_approve).
            prompter: None,
            yes: args.yes,
            only_server: args.chat.server.clone(),
            no_tools: args.chat.no_tools || args.grammar.is_some(),
            forms: None,
            sampling_approver: None,
            accept_defaults: ctx.global.accept_defaults,
            early_question: Some(prompt.clone()),
        },
    )
    .await?;
    let mut engine = started.engine;
    let json = ctx.global.json;
    if !json {
        turn_view::print_start(&engine, &started.failures);
    }

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let mut out = turn_view::Printer::for_engine(&engine);
    let printer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if !json {
                out.show(&event);
            }
        }
        out
    });
    let turn = {
        let cancel_on_ctrl_c = cancel.clone();
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel_on_ctrl_c.cancel();
            }
        });
        let r = match started.early {
            Some(early) => engine.turn_from(early, &tx, cancel.clone()).await,
            None => engine.turn(&prompt, &tx, cancel.clone()).await,
        };
        watcher.abort();
        r
    };
    drop(tx);
    let printer = printer.await.ok();
    let outcome = match turn {
        Ok(o) => o,
        Err(err) => {
            engine.into_sessions_shutdown().await;
            return Err(err);
        }
    };
    if json {
        let out = serde_json::json!({
            "answer": outcome.answer,
            "cancelled": outcome.cancelled,
            "rounds": outcome.rounds,
            "tool_calls": outcome.tool_calls,
            "server_failures": started.failures,
            "transcript": engine.transcript(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if let Some(p) = printer {
        let tools = engine
            .transcript()
            .turns
            .last()
            .map(|t| t.tool_list.clone())
            .unwrap_or_default();
        p.finish_with(&tools);
    }
    engine.into_sessions_shutdown().await;
    if outcome.cancelled {
        eprintln!("rkmcp: interrupted");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
