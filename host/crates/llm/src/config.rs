//! The `[model]` table of rkmcp's configuration.
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which backend runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// `.rkllm` model → RKLLM, `.gguf` → llama.cpp; without a model: RKLLM when its runtime and an
    /// `.rkllm` model are installed, else llama.cpp with the default model.
    #[default]
    Auto,
    Llama,
    Rkllm,
}

impl std::str::FromStr for BackendKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "llama" | "llama.cpp" | "cpu" => Ok(Self::Llama),
            "rkllm" | "npu" => Ok(Self::Rkllm),
            other => Err(format!(
                "unknown backend `{other}` (expected auto, llama or rkllm)"
            )),
        }
    }
}

/// Which RKLLM C ABI the runtime library has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum AbiSetting {
    /// Decide from the version string embedded in the library and the symbols it exports (see
    /// [`crate::rkllm::abi::choose`]).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "1.2")]
    V1_2,
    #[serde(rename = "1.3")]
    V1_3,
}

impl std::str::FromStr for AbiSetting {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "1.2" | "1.2.x" => Ok(Self::V1_2),
            "1.3" | "1.3.x" => Ok(Self::V1_3),
            other => Err(format!(
                "unknown RKLLM ABI `{other}` (expected auto, 1.2 or 1.3)"
            )),
        }
    }
}

/// Sampling parameters. `temperature = 0` means greedy decoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SamplingConfig {
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    /// How many recent tokens the penalties look at.
    pub repeat_last_n: i32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
    /// Random seed; unset = a different one each run.
    pub seed: Option<u32>,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        Self {
            temperature: 0.7,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.1,
            repeat_last_n: 64,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            seed: None,
        }
    }
}

impl SamplingConfig {
    /// Deterministic settings: always the most likely token.
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_k: 1,
            repeat_penalty: 1.0,
            ..Self::default()
        }
    }

    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0 || self.top_k == 1
    }

    pub fn validate(&self) -> Result<(), String> {
        let check = |ok: bool, what: &str| if ok { Ok(()) } else { Err(what.to_string()) };
        check(
            self.temperature.is_finite() && self.temperature >= 0.0,
            "sampling.temperature must be ≥ 0",
        )?;
        check(self.top_k >= 0, "sampling.top_k must be ≥ 0 (0 = off)")?;
        check(
            (0.0..=1.0).contains(&self.top_p),
            "sampling.top_p must be in 0..=1",
        )?;
        check(
            (0.0..=1.0).contains(&self.min_p),
            "sampling.min_p must be in 0..=1",
        )?;
        check(
            self.repeat_penalty.is_finite() && self.repeat_penalty > 0.0,
            "sampling.repeat_penalty must be > 0",
        )?;
        check(
            self.frequency_penalty.is_finite(),
            "sampling.frequency_penalty must be finite",
        )?;
        check(
            self.presence_penalty.is_finite(),
            "sampling.presence_penalty must be finite",
        )?;
        Ok(())
    }
}

/// The `[model]` table.
///
/// ```toml
/// [model]
/// backend = "auto"                  # auto | llama | rkllm
/// path = "~/models/qwen2.5-1.5b.rkllm"
/// rkllm_lib = "/usr/lib/librkllmrt.so"
/// rkllm_abi = "auto"                # auto | 1.2 | 1.3
/// context_length = 4096
/// max_new_tokens = 512
/// threads = 4
/// stop = ["</answer>"]
/// chat_template = "chatml"          # a built-in name or a Jinja template; default: the model's own
/// native_tools = true               # RKLLM: rkllm_set_function_tools
/// prompt_cache = true               # llama.cpp: the system prompt's KV state kept between runs
/// [model.sampling]
/// temperature = 0.7
/// top_k = 40
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    pub backend: BackendKind,
    /// A `.gguf` or `.rkllm` file, or the name of a file in the model store. Unset: the default
    /// model (SmolLM2-135M-Instruct Q4_1) from the store.
    pub path: Option<PathBuf>,
    /// The RKLLM runtime library (`librkllmrt.so`). Unset: `RKLLM_LIB`, then the usual lib dirs.
    pub rkllm_lib: Option<PathBuf>,
    pub rkllm_abi: AbiSetting,
    /// Context window in tokens. Unset: 4096 (capped at the model's training context).
    pub context_length: Option<u32>,
    pub max_new_tokens: u32,
    /// CPU threads for llama.cpp (unset: the number of cores, at most 8).
    pub threads: Option<u32>,
    pub sampling: SamplingConfig,
    /// Stop sequences: generation ends before the first occurrence of any of them.
    pub stop: Vec<String>,
    /// Overrides the model's chat template: a built-in name (`chatml`, `llama3`, `gemma`, `qwen`,
    /// `phi3`, `mistral`) or a Jinja template string.
    pub chat_template: Option<String>,
    /// Let RKLLM format tool descriptions itself (`rkllm_set_function_tools`, runtime ≥ 1.2.1).
    pub native_tools: bool,
    /// Ask thinking models (Qwen3…) to think before they answer.
    pub enable_thinking: bool,
    /// Keep the KV cache between turns so earlier turns are not processed again.
    pub keep_history: bool,
    /// llama.cpp: keep the first prompt's KV state in `$XDG_CACHE_HOME/rkmcp/prompt-cache/`, so
    /// the next run does not process the system prompt and tool list again.
    pub prompt_cache: bool,
    /// Where [`Self::prompt_cache`] keeps its files; set by the application (rkmcp's chat and
    /// ask: `$XDG_CACHE_HOME/rkmcp/prompt-cache/`), so that a library user or a test that did not
    /// ask for it never reads state a previous run left.
    #[serde(skip)]
    pub prompt_cache_dir: Option<PathBuf>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            backend: BackendKind::Auto,
            path: None,
            rkllm_lib: None,
            rkllm_abi: AbiSetting::Auto,
            context_length: None,
            max_new_tokens: 512,
            threads: None,
            sampling: SamplingConfig::default(),
            stop: Vec::new(),
            chat_template: None,
            native_tools: false,
            enable_thinking: false,
            keep_history: true,
            prompt_cache: true,
            prompt_cache_dir: None,
        }
    }
}

impl ModelConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.sampling.validate()?;
        if self.max_new_tokens == 0 {
            return Err("model.max_new_tokens must be ≥ 1".into());
        }
        if self.context_length == Some(0) {
            return Err("model.context_length must be ≥ 1".into());
        }
        if self.threads == Some(0) {
            return Err("model.threads must be ≥ 1".into());
        }
        if self.stop.iter().any(String::is_empty) {
            return Err("model.stop must not contain empty strings".into());
        }
        Ok(())
    }

    /// Threads for CPU inference: the configured number, else the available cores (at most 8:
    /// more rarely helps small models and hurts on big.LITTLE boards).
    pub fn effective_threads(&self) -> u32 {
        self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(4)
                .min(8)
        })
    }
}
