//! `rkmcp ask` — one question, the answer streamed to stdout (status and stats to stderr).
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use rkmcp_llm::{
    AbiSetting, BackendKind, FinishReason, GenerateRequest, LlmError, Message, ModelConfig,
    SharedBackend,
};

use super::{Context, UsageError};

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
pub struct AskArgs {
    /// The question; read from stdin when omitted.
    pub prompt: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// System prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// A GBNF grammar file the answer must match (llama backend).
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,
    /// Stop before this text (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub stop: Vec<String>,
}

/// The `[model]` table of the configuration, with CLI flags applied on top.
pub(crate) fn model_config(ctx: &Context, args: &ModelArgs) -> anyhow::Result<ModelConfig> {
    let loaded = crate::config::load(&ctx.global)?;
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
    let config = model_config(ctx, &args.model)?;
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
    let grammar = match &args.grammar {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| UsageError(format!("cannot read grammar {}: {e}", path.display())))?,
        ),
        None => None,
    };

    let backend = SharedBackend::open(config).await.map_err(llm_error)?;
    let info = backend.info().clone();
    if !ctx.global.json {
        eprintln!(
            "rkmcp: {} · {} · template {}",
            info.backend,
            info.model.display(),
            info.chat_template
        );
    }
    let mut messages = Vec::new();
    if let Some(system) = args.system {
        messages.push(Message::system(system));
    }
    messages.push(Message::user(prompt));
    let mut request = GenerateRequest::new(messages);
    request.stop = args.stop;
    request.grammar = grammar;

    let mut stream = backend.generate(request);
    let mut stdout = std::io::stdout();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut interrupted = false;
    loop {
        tokio::select! {
            chunk = stream.chunks.recv() => match chunk {
                Some(text) => {
                    if !ctx.global.json {
                        stdout.write_all(text.as_bytes())?;
                        stdout.flush()?;
                    }
                }
                None => break,
            },
            _ = &mut ctrl_c, if !interrupted => {
                interrupted = true;
                stream.abort.abort();
            }
        }
    }
    let generation = stream.finish().await.map_err(llm_error)?;
    if ctx.global.json {
        let out = serde_json::json!({
            "answer": generation.text,
            "finish": generation.finish,
            "stats": generation.stats,
            "backend": info.backend,
            "model": info.model,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!();
        let s = &generation.stats;
        eprintln!(
            "rkmcp: {:?} · prompt {} tok ({:.0} tok/s) · {} tok at {:.1} tok/s · first token {:.0} ms · peak RSS {:.0} MiB",
            generation.finish,
            s.prompt_tokens,
            s.prefill_tokens_per_s,
            s.generated_tokens,
            s.tokens_per_s,
            s.time_to_first_token_ms,
            s.peak_rss_mib
        );
    }
    if generation.finish == FinishReason::Aborted {
        eprintln!("rkmcp: aborted");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
