//! The interface every backend implements, and what flows through it.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::LlmError;

/// Who speaks in a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call, fed back to the model.
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
    pub fn tool(content: impl Into<String>) -> Self {
        Self::new(Role::Tool, content)
    }
}

/// One generation: the whole conversation so far, ending with the turn to answer.
#[derive(Debug, Clone, Default)]
pub struct GenerateRequest {
    pub messages: Vec<Message>,
    /// Overrides the backend's configured `max_new_tokens`.
    pub max_new_tokens: Option<u32>,
    /// Added to the configured stop sequences.
    pub stop: Vec<String>,
    /// A GBNF grammar the output must match (backends with [`Capabilities::grammar`]).
    pub grammar: Option<String>,
    /// An llguidance grammar (Lark syntax, JSON Schemas inline as `%json`) the output must
    /// match, on backends with [`Capabilities::llguidance`]: used instead of `grammar`, which
    /// stays the fallback if it does not compile.
    pub guide: Option<String>,
    /// Tool descriptions as a JSON array, for backends with [`Capabilities::native_tools`].
    pub tools_json: Option<String>,
    /// Overrides the configured sampling temperature for this generation (0: greedy), on
    /// backends that sample per generation (llama.cpp). RKLLM fixes sampling when the model is
    /// loaded and ignores it.
    pub temperature: Option<f32>,
    /// Keep what is in the KV cache when this conversation continues the previous one. `false`
    /// processes the whole conversation again.
    pub reuse_cache: bool,
    /// Texts whose tokens get `prefer_bias` added to their logits in constrained generation
    /// (the user's message, so a small model copies its values instead of inventing them), on
    /// backends that sample per generation. Of the tokens without a letter or digit, only those
    /// that close a JSON string get it (a copied value may end where the model ends it); a
    /// word's token loses its bias once generated (copied once, not repeated).
    pub prefer: Vec<String>,
    pub prefer_bias: f32,
    /// The start of the answer, already written: the rendered prompt continues with it and the
    /// model writes what follows (a call the engine builds a piece at a time, see the chat's
    /// argument steps). The generated text does not include it. Backends that render the
    /// conversation themselves (RKLLM) refuse it.
    pub assistant_prefix: Option<String>,
}

impl GenerateRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            reuse_cache: true,
            ..Self::default()
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its turn.
    EndOfTurn,
    /// A stop sequence appeared (it is not part of the text).
    Stop,
    /// `max_new_tokens` reached.
    MaxTokens,
    /// The context window is full.
    ContextFull,
    /// [`AbortHandle::abort`] was called.
    Aborted,
}

/// Figures for one generation. Times in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Tokens in the rendered prompt.
    pub prompt_tokens: u32,
    /// Of those, how many were already in the KV cache and not processed again.
    pub cached_tokens: u32,
    pub prefill_ms: f64,
    pub prefill_tokens_per_s: f64,
    pub generated_tokens: u32,
    pub generation_ms: f64,
    pub tokens_per_s: f64,
    /// From the start of the call to the first text chunk.
    pub time_to_first_token_ms: f64,
    /// Peak resident set size of the process so far, in MiB.
    pub peak_rss_mib: f64,
    /// What held the output: `gbnf` or `llguidance` (`None`: free generation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// Tokens whose first choice the constraint rejected, so the vocabulary was masked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub masked_tokens: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Stats {
    /// Several generations as one (the rounds of a chat turn): token counts and times summed,
    /// rates over the sums (prefill over the tokens actually processed), time to first token and
    /// peak RSS from the first and the last.
    pub fn total(generations: &[Stats]) -> Stats {
        let mut t = Stats::default();
        for (i, g) in generations.iter().enumerate() {
            t.prompt_tokens += g.prompt_tokens;
            t.cached_tokens += g.cached_tokens;
            t.prefill_ms += g.prefill_ms;
            t.generated_tokens += g.generated_tokens;
            t.generation_ms += g.generation_ms;
            if i == 0 {
                t.time_to_first_token_ms = g.time_to_first_token_ms;
            }
            t.peak_rss_mib = t.peak_rss_mib.max(g.peak_rss_mib);
            t.masked_tokens += g.masked_tokens;
            if g.constraint.is_some() {
                t.constraint = g.constraint.clone();
            }
        }
        t.rates();
        t
    }

    /// Prefill tokens actually processed (not taken from the KV cache).
    pub fn processed_tokens(&self) -> u32 {
        self.prompt_tokens.saturating_sub(self.cached_tokens)
    }

    fn rates(&mut self) {
        if self.prefill_ms > 0.0 {
            self.prefill_tokens_per_s =
                f64::from(self.processed_tokens()) * 1000.0 / self.prefill_ms;
        }
        if self.generation_ms > 0.0 {
            self.tokens_per_s = f64::from(self.generated_tokens) * 1000.0 / self.generation_ms;
        }
    }

    pub(crate) fn finish_rates(&mut self) {
        self.rates();
        self.peak_rss_mib = crate::peak_rss_mib();
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    /// The answer, without the stop sequence that ended it.
    pub text: String,
    pub finish: FinishReason,
    pub stats: Stats,
}

/// What a backend can do beyond plain generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// Honours [`GenerateRequest::grammar`].
    pub grammar: bool,
    /// Honours [`GenerateRequest::guide`].
    pub llguidance: bool,
    /// Honours [`GenerateRequest::tools_json`].
    pub native_tools: bool,
    /// The chat template wraps tool results itself (Qwen's `<tool_response>`): they are fed
    /// back as the bare body, not in the call format's result markers.
    pub wraps_tool_results: bool,
}

/// Describes a loaded backend.
#[derive(Debug, Clone, Serialize)]
pub struct BackendInfo {
    /// `llama` or `rkllm`.
    pub backend: &'static str,
    pub model: PathBuf,
    /// The chat template in use: a built-in name, `jinja`, or `runtime` (RKLLM's own).
    pub chat_template: String,
    pub context_length: u32,
    pub capabilities: Capabilities,
    /// E.g. the RKLLM ABI and library path, or the llama.cpp thread count.
    pub detail: String,
}

/// Stops a generation from another thread or task (Ctrl-C). Cheap to clone.
#[derive(Clone, Default)]
pub struct AbortHandle {
    inner: Arc<AbortInner>,
}

type AbortHook = Box<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct AbortInner {
    aborted: AtomicBool,
    /// Backends that must tell a native runtime to stop (rkllm_abort) register a hook.
    hooks: Mutex<Vec<Option<AbortHook>>>,
}

impl std::fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AbortHandle")
            .field("aborted", &self.is_aborted())
            .finish()
    }
}

impl AbortHandle {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn abort(&self) {
        self.inner.aborted.store(true, Ordering::SeqCst);
        let hooks = self.inner.hooks.lock().unwrap_or_else(|e| e.into_inner());
        for hook in hooks.iter().flatten() {
            hook();
        }
    }

    pub fn is_aborted(&self) -> bool {
        self.inner.aborted.load(Ordering::SeqCst)
    }

    /// Runs `hook` on [`abort`](Self::abort) until the returned guard is dropped; runs it at once
    /// if the handle was aborted already.
    pub(crate) fn on_abort(&self, hook: AbortHook) -> AbortHookGuard<'_> {
        let mut hooks = self.inner.hooks.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_aborted() {
            hook();
        }
        hooks.push(Some(hook));
        AbortHookGuard {
            handle: self,
            index: hooks.len() - 1,
        }
    }
}

pub(crate) struct AbortHookGuard<'a> {
    handle: &'a AbortHandle,
    index: usize,
}

impl Drop for AbortHookGuard<'_> {
    fn drop(&mut self) {
        let mut hooks = self
            .handle
            .inner
            .hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Empty the slot instead of removing it, so other guards' indices stay valid.
        if let Some(slot) = hooks.get_mut(self.index) {
            *slot = None;
        }
        while matches!(hooks.last(), Some(None)) {
            hooks.pop();
        }
    }
}

/// A loaded model that generates text. Calls block: from async code use
/// [`SharedBackend`](crate::SharedBackend), which runs them on tokio's blocking threads.
pub trait Backend: Send {
    fn info(&self) -> BackendInfo;

    /// The conversation as the model will see it (the rendered chat template), for inspection.
    /// RKLLM with its runtime template returns only what rkmcp sends.
    fn render(&self, messages: &[Message]) -> Result<String, LlmError>;

    /// Generates the next assistant turn. `on_text` receives the answer in chunks as it is
    /// produced (never split inside a UTF-8 character, never containing a stop sequence).
    fn generate(
        &mut self,
        request: &GenerateRequest,
        abort: &AbortHandle,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Generation, LlmError>;

    /// Forgets the KV cache: the next generation processes the whole conversation.
    fn reset(&mut self) -> Result<(), LlmError>;

    /// How many tokens the prompt for `messages` takes. Backends without a tokenizer estimate
    /// from the rendered text (3 characters a token, on the safe side for English and code).
    fn count_tokens(&self, messages: &[Message]) -> Result<usize, LlmError> {
        Ok(self.render(messages)?.chars().count().div_ceil(3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turns_stats_rate_prefill_over_the_tokens_processed_not_the_cached_ones() {
        let first = Stats {
            prompt_tokens: 400,
            cached_tokens: 0,
            prefill_ms: 400.0,
            generated_tokens: 20,
            generation_ms: 200.0,
            time_to_first_token_ms: 450.0,
            peak_rss_mib: 200.0,
            ..Stats::default()
        };
        let second = Stats {
            prompt_tokens: 450,
            cached_tokens: 420,
            prefill_ms: 50.0,
            generated_tokens: 10,
            generation_ms: 100.0,
            time_to_first_token_ms: 60.0,
            peak_rss_mib: 210.0,
            ..Stats::default()
        };
        let t = Stats::total(&[first, second]);
        assert_eq!((t.prompt_tokens, t.cached_tokens), (850, 420));
        assert_eq!(t.processed_tokens(), 430);
        // 430 tokens in 450 ms, not the last round's 30 in 50 ms.
        assert!((t.prefill_tokens_per_s - 430.0 * 1000.0 / 450.0).abs() < 1e-9);
        assert!((t.tokens_per_s - 100.0).abs() < 1e-9);
        assert_eq!(t.time_to_first_token_ms, 450.0);
        assert_eq!(t.peak_rss_mib, 210.0);
        assert_eq!(Stats::total(&[]), Stats::default());
    }
}
