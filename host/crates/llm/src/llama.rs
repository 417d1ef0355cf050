//! CPU backend: llama.cpp (through `llama-cpp-2`, built from its vendored sources) for GGUF
//! models.
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend as GgmlBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use crate::LlmError;
use crate::backend::{
    AbortHandle, Backend, BackendInfo, Capabilities, FinishReason, GenerateRequest, Generation,
    Message, Stats,
};
use crate::config::{ModelConfig, SamplingConfig};
use crate::template::ChatTemplate;
use crate::text::{StopScanner, Utf8Assembler};

mod constrain;
mod prompt_cache;
use constrain::{Constraint, Guidance, TokenSampler};
use prompt_cache::PromptCache;

/// llama.cpp's global state may be initialised once per process.
fn ggml() -> Result<&'static GgmlBackend, LlmError> {
    static BACKEND: OnceLock<Result<GgmlBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp logs every tensor at load time; route it to tracing (shown with -vv).
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            GgmlBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlmError::Runtime(format!("cannot initialise llama.cpp: {e}")))
}

/// Prompt tokens decoded per `llama_decode` call.
const BATCH: usize = 512;

pub struct LlamaBackend {
    // Field order matters: the context borrows the model and must be dropped first.
    ctx: LlamaContext<'static>,
    model: Box<LlamaModel>,
    path: PathBuf,
    config: ModelConfig,
    template: ChatTemplate,
    /// Tokens whose keys and values are in the KV cache, positions 0..len.
    cached: Vec<LlamaToken>,
    n_ctx: u32,
    threads: u32,
    /// Rendered in front of prompts when the template does not add it itself.
    bos_text: String,
    /// llguidance's parser factory for this vocabulary (built on first use).
    guidance: Guidance,
    /// The first prompt's KV state on disk, for the next process (see [`Self::with_prompt_cache`]).
    prompt_cache: Option<PromptCache>,
    /// See [`Self::string_closers`].
    string_closers: Option<Vec<LlamaToken>>,
}

/// A token that carries a word (a letter or digit): what grounding prefers and spends.
fn is_word_piece(piece: &[u8]) -> bool {
    String::from_utf8_lossy(piece)
        .chars()
        .any(char::is_alphanumeric)
}

impl std::fmt::Debug for LlamaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaBackend")
            .field("path", &self.path)
            .field("n_ctx", &self.n_ctx)
            .finish()
    }
}

// SAFETY: llama.cpp contexts and models may move between threads; they are used by one thread at
// a time (`&mut self`).
unsafe impl Send for LlamaBackend {}

impl LlamaBackend {
    pub fn load(path: &Path, config: &ModelConfig) -> Result<Self, LlmError> {
        config.validate().map_err(LlmError::Config)?;
        if !path.is_file() {
            return Err(LlmError::Model(format!(
                "model file {} does not exist",
                path.display()
            )));
        }
        let backend = ggml()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| {
                LlmError::Model(format!("cannot load GGUF model {}: {e}", path.display()))
            })?;
        let model = Box::new(model);
        let n_ctx = config
            .context_length
            .unwrap_or(4096)
            .min(model.n_ctx_train().max(1));
        let threads = config.effective_threads();
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(BATCH as u32)
            .with_n_threads(threads as i32)
            .with_n_threads_batch(threads as i32);
        let ctx = model.new_context(backend, params).map_err(|e| {
            LlmError::Model(format!(
                "cannot create a llama.cpp context ({n_ctx} tokens): {e}"
            ))
        })?;
        // SAFETY: the context borrows `*model`, a heap allocation that neither moves nor is freed
        // before the context: both live in `Self`, and `ctx` is declared (so dropped) first.
        let ctx: LlamaContext<'static> = unsafe { std::mem::transmute(ctx) };

        let vocab = model.vocab();
        let piece = |t: LlamaToken| {
            String::from_utf8_lossy(&vocab.token_to_piece(t, true, None)).into_owned()
        };
        let bos_text = if vocab.should_add_bos() {
            piece(vocab.bos())
        } else {
            String::new()
        };
        let eos_text = piece(vocab.eos());
        let gguf_template = model
            .chat_template(None)
            .ok()
            .and_then(|t| t.to_string().ok());
        let template = ChatTemplate::resolve(
            config.chat_template.as_deref(),
            gguf_template,
            &bos_text,
            &eos_text,
        )?;
        Ok(Self {
            ctx,
            model,
            path: path.to_path_buf(),
            config: config.clone(),
            template,
            cached: Vec::new(),
            n_ctx,
            threads,
            bos_text,
            guidance: Guidance::default(),
            prompt_cache: None,
            string_closers: None,
        })
    }

    /// Keeps the first prompt's KV state in `dir` and starts from the state a previous process
    /// kept there (see [`prompt_cache`]). Only prompts that may reuse the KV cache use it.
    pub fn with_prompt_cache(mut self, dir: &Path) -> Self {
        self.prompt_cache = PromptCache::new(dir, &self.path, self.n_ctx);
        self
    }

    /// Builds llguidance's view of the vocabulary now rather than in the first constrained
    /// round (the chat start does it while the servers start).
    pub fn prepare_guidance(&self) {
        if let Err(err) = self.guidance.factory(&self.model) {
            tracing::warn!("llguidance is unavailable, grammars fall back to GBNF: {err}");
        }
    }

    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// The loaded llama.cpp model, for callers that need llama.cpp itself (tests, benches).
    pub fn model(&self) -> &LlamaModel {
        &self.model
    }

    /// Tokenizes the rendered conversation; BOS is added unless the template wrote it.
    fn tokenize(&self, prompt: &str) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let mut tokens = Vec::new();
        if !self.bos_text.is_empty() && !prompt.starts_with(&self.bos_text) {
            tokens.push(vocab.bos());
        }
        tokens.extend(vocab.tokenize(prompt.as_bytes(), false, true));
        tokens
    }

    /// The sampler for `sampling`, held to `guide` (llguidance) if it compiles, else to
    /// `grammar` (GBNF).
    fn sampler(
        &self,
        sampling: &SamplingConfig,
        grammar: Option<&str>,
        guide: Option<&str>,
    ) -> Result<TokenSampler, LlmError> {
        let guided = match guide {
            Some(lark) => match self.guidance.compile(&self.model, lark) {
                Ok(m) => Some(Constraint::Guide(Box::new(m))),
                Err(err) if grammar.is_some() => {
                    tracing::warn!("the llguidance grammar does not compile, using GBNF: {err}");
                    None
                }
                // The built-in grammars of some formats name their markers as special tokens;
                // a model whose vocabulary lacks one cannot be held to it. The answer is still
                // read by the detector: generate freely rather than fail the turn.
                Err(err) => {
                    tracing::warn!(
                        "the llguidance grammar does not compile for this model, generating \
                         without a grammar: {err}"
                    );
                    None
                }
            },
            None => None,
        };
        let constraint = match (guided, grammar) {
            (Some(c), _) => Some(c),
            (None, Some(g)) => Some(Constraint::Gbnf(
                LlamaSampler::grammar(&self.model, g, "root").map_err(|e| {
                    LlmError::Request(format!(
                        "invalid GBNF grammar ({e}); the start rule must be `root`"
                    ))
                })?,
            )),
            (None, None) => None,
        };
        let mut chain = Vec::new();
        let s = sampling;
        if s.repeat_penalty != 1.0 || s.frequency_penalty != 0.0 || s.presence_penalty != 0.0 {
            chain.push(LlamaSampler::penalties(
                self.model.n_vocab(),
                s.repeat_last_n.max(0),
                s.repeat_penalty,
                s.frequency_penalty,
                s.presence_penalty,
            ));
        }
        if s.is_greedy() {
            chain.push(LlamaSampler::greedy());
        } else {
            if s.top_k > 0 {
                chain.push(LlamaSampler::top_k(s.top_k));
            }
            chain.push(LlamaSampler::top_p(s.top_p, 1));
            if s.min_p > 0.0 {
                chain.push(LlamaSampler::min_p(s.min_p, 1));
            }
            chain.push(LlamaSampler::temp(s.temperature));
            let seed = s.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos() ^ d.as_secs() as u32)
                    .unwrap_or(0)
            });
            chain.push(LlamaSampler::dist(seed));
        }
        Ok(TokenSampler {
            chain: LlamaSampler::chain_simple(chain),
            constraint,
            masked: 0,
            bias: Vec::new(),
            bias_value: 0.0,
        })
    }

    /// The tokens of `texts` (whole, and word by word as they start a JSON string) that have a
    /// letter or digit, and the tokens that close a string, sorted.
    fn prefer_tokens(&mut self, texts: &[String]) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let mut out = Vec::new();
        for text in texts {
            let pieces = std::iter::once(text.as_str()).chain(
                text.split(|c: char| c.is_whitespace() || "\"'?!,;:()".contains(c))
                    .filter(|w| !w.is_empty()),
            );
            for piece in pieces {
                out.extend(vocab.tokenize(piece.as_bytes(), false, false));
            }
        }
        out.retain(|&t| is_word_piece(&vocab.token_to_piece(t, false, None)));
        out.extend(self.string_closers());
        out.sort();
        out.dedup();
        out
    }

    /// The tokens that end a JSON string value (`"`, `",`, `"}`, `"}}`, …): preferred as much as
    /// the user's words, so the bias does not pull a copied value on past its end ("The Golden
    /// Fork on 2026-12-31 at 20:00" for a restaurant's name). Built on first use.
    fn string_closers(&mut self) -> Vec<LlamaToken> {
        let model = &self.model;
        self.string_closers
            .get_or_insert_with(|| {
                let vocab = model.vocab();
                (0..model.n_vocab())
                    .map(LlamaToken::new)
                    .filter(|&t| {
                        let piece = vocab.token_to_piece(t, false, None);
                        piece.first() == Some(&b'"')
                            && piece[1..].iter().all(|b| b",}] \n".contains(b))
                    })
                    .collect()
            })
            .clone()
    }

    fn decode(&mut self, batch: &mut LlamaBatch) -> Result<(), LlmError> {
        self.ctx
            .decode(batch)
            .map_err(|e| LlmError::Runtime(format!("llama_decode failed: {e}")))
    }
}

impl Backend for LlamaBackend {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: "llama",
            model: self.path.clone(),
            chat_template: self.template.name(),
            context_length: self.n_ctx,
            capabilities: Capabilities {
                grammar: true,
                llguidance: true,
                native_tools: false,
                wraps_tool_results: self.template.wraps_tool_results(),
            },
            detail: format!("llama.cpp on CPU, {} threads", self.threads),
        }
    }

    fn render(&self, messages: &[Message]) -> Result<String, LlmError> {
        self.template.render(messages, true)
    }

    fn generate(
        &mut self,
        request: &GenerateRequest,
        abort: &AbortHandle,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Generation, LlmError> {
        let started = Instant::now();
        if request.messages.is_empty() {
            return Err(LlmError::Request("the conversation is empty".into()));
        }
        let mut prompt = self.template.render(&request.messages, true)?;
        if let Some(prefix) = &request.assistant_prefix {
            prompt.push_str(prefix);
        }
        let tokens = self.tokenize(&prompt);
        let max_new = request
            .max_new_tokens
            .unwrap_or(self.config.max_new_tokens)
            .max(1);
        if tokens.len() as u64 >= u64::from(self.n_ctx) {
            return Err(LlmError::Request(format!(
                "the conversation is {} tokens, more than the context window of {} (model.context_length)",
                tokens.len(),
                self.n_ctx
            )));
        }

        // Reuse the longest common prefix with what is in the KV cache; at least the last
        // prompt token is decoded again, for its logits.
        let mut keep = 0;
        let reuse = request.reuse_cache && self.config.keep_history;
        if reuse
            && self.cached.is_empty()
            && let Some(cache) = &mut self.prompt_cache
        {
            self.ctx.clear_kv_cache();
            self.cached = cache.load(&mut self.ctx, self.n_ctx);
        }
        if reuse {
            keep = self
                .cached
                .iter()
                .zip(&tokens)
                .take_while(|(a, b)| a == b)
                .count();
            keep = keep.min(tokens.len() - 1);
        }
        if keep == 0 {
            self.ctx.clear_kv_cache();
        } else if self
            .ctx
            .kv_cache_seq_rm(0, Some(keep as u32), None)
            .is_err()
        {
            self.ctx.clear_kv_cache();
            keep = 0;
        }
        self.cached.truncate(keep);

        let mut sampling = self.config.sampling.clone();
        if let Some(t) = request.temperature.filter(|t| t.is_finite() && *t >= 0.0) {
            sampling.temperature = t;
        }
        let mut sampler = self.sampler(
            &sampling,
            request.grammar.as_deref(),
            request.guide.as_deref(),
        )?;
        if sampler.constraint.is_some() && request.prefer_bias != 0.0 {
            sampler.bias = self.prefer_tokens(&request.prefer);
            sampler.bias_value = request.prefer_bias;
        }
        let mut batch = LlamaBatch::new(BATCH, 1);
        let prefill_start = Instant::now();
        let mut pos = keep;
        for chunk in tokens[keep..].chunks(BATCH) {
            if abort.is_aborted() {
                break;
            }
            batch.clear();
            for (i, &t) in chunk.iter().enumerate() {
                let last = pos + i == tokens.len() - 1;
                batch
                    .add(t, (pos + i) as i32, &[0], last)
                    .map_err(|e| LlmError::Runtime(format!("batch: {e}")))?;
            }
            self.decode(&mut batch)?;
            self.cached.extend_from_slice(chunk);
            pos += chunk.len();
        }
        let prefill_ms = prefill_start.elapsed().as_secs_f64() * 1000.0;
        if reuse
            && pos == tokens.len()
            && let Some(cache) = &mut self.prompt_cache
        {
            cache.save(&self.ctx, &self.cached, keep);
        }

        let mut stops: Vec<String> = self.config.stop.clone();
        stops.extend(request.stop.iter().cloned());
        if let Some(family) = self.template.family() {
            stops.push(family.end_of_turn().to_string());
        }
        let mut scanner = StopScanner::new(stops);
        let mut utf8 = Utf8Assembler::new();
        let mut text = String::new();
        let mut first_text: Option<Instant> = None;
        let mut generated = 0u32;
        let gen_start = Instant::now();
        let mut emit = |piece: &str, text: &mut String, first_text: &mut Option<Instant>| {
            if !piece.is_empty() {
                first_text.get_or_insert_with(Instant::now);
                text.push_str(piece);
                on_text(piece);
            }
        };
        let finish = loop {
            if abort.is_aborted() {
                break FinishReason::Aborted;
            }
            if generated >= max_new {
                break FinishReason::MaxTokens;
            }
            if self.cached.len() as u64 >= u64::from(self.n_ctx) {
                break FinishReason::ContextFull;
            }
            let token = sampler.sample(&self.ctx, batch.n_tokens() - 1, self.model.vocab().eos());
            let vocab = self.model.vocab();
            if vocab.is_eog(token) {
                break FinishReason::EndOfTurn;
            }
            generated += 1;
            let bytes = vocab.token_to_piece(token, false, None);
            // Words are copied once; the closing quotes stay preferred for every value.
            if !sampler.bias.is_empty() && is_word_piece(&bytes) {
                sampler.spend(token);
            }
            let scan = scanner.push(&utf8.push(&bytes));
            emit(&scan.text, &mut text, &mut first_text);
            if scan.stopped {
                break FinishReason::Stop;
            }
            batch.clear();
            batch
                .add(token, self.cached.len() as i32, &[0], true)
                .map_err(|e| LlmError::Runtime(format!("batch: {e}")))?;
            self.decode(&mut batch)?;
            self.cached.push(token);
        };
        if !matches!(finish, FinishReason::Stop) {
            let rest = utf8.finish();
            let mut tail = scanner.push(&rest).text;
            tail.push_str(&scanner.finish());
            emit(&tail, &mut text, &mut first_text);
        }

        let mut stats = Stats {
            prompt_tokens: tokens.len() as u32,
            cached_tokens: keep as u32,
            prefill_ms,
            generated_tokens: generated,
            generation_ms: gen_start.elapsed().as_secs_f64() * 1000.0,
            time_to_first_token_ms: first_text
                .map(|t| (t - started).as_secs_f64() * 1000.0)
                .unwrap_or_default(),
            constraint: sampler.constraint.as_ref().map(|c| c.name().to_string()),
            masked_tokens: sampler.masked,
            ..Stats::default()
        };
        stats.finish_rates();
        if !(request.reuse_cache && self.config.keep_history) {
            self.cached.clear();
            self.ctx.clear_kv_cache();
        }
        Ok(Generation {
            text,
            finish,
            stats,
        })
    }

    fn reset(&mut self) -> Result<(), LlmError> {
        self.ctx.clear_kv_cache();
        self.cached.clear();
        Ok(())
    }

    fn count_tokens(&self, messages: &[Message]) -> Result<usize, LlmError> {
        Ok(self.tokenize(&self.template.render(messages, true)?).len())
    }
}
