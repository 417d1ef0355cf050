//! The KV state of a run's first prompt, kept on disk for the next run (llama.cpp state files).
//!
//! Every `ask` and every new `chat` starts with the same long prefix: the system prompt with the
//! tool section. On the default model that prefix is ~350 tokens, and prefilling it was about
//! half of a one-question run. The in-memory prefix reuse of [`super::LlamaBackend`] cannot help
//! a new process, so the first prompt's KV state is saved, and the next process loads it before
//! its first prompt; the common-prefix logic then keeps what matches and drops the rest.
//!
//! A state file holds keys and values, not the model: loaded into a different model of the same
//! shape it would be accepted and silently wrong. The file name therefore carries a hash of the
//! model file's identity (canonical path, size, modification time) and the context size. A
//! changed model gets another file; the stale one is replaced when the same model path is saved.
//! Writes go to a temporary file renamed into place, so a concurrent run never reads half a file.
//! Any failure (unreadable, corrupt, from another llama.cpp) only costs the prefill it would have
//! saved.
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::token::LlamaToken;

/// The one sequence the backend uses.
const SEQ: i32 = 0;

#[derive(Debug)]
pub struct PromptCache {
    path: PathBuf,
    /// The file was read (or found missing) once; later prompts use the in-memory cache.
    loaded: bool,
    /// Saved once per process: later rounds share the first prompt's prefix anyway.
    saved: bool,
}

impl PromptCache {
    /// The cache file in `dir` for `model` with a context of `n_ctx` tokens; `None` when the model
    /// file cannot be inspected (then nothing is cached).
    pub fn new(dir: &Path, model: &Path, n_ctx: u32) -> Option<Self> {
        let path = model.canonicalize().ok()?;
        let meta = std::fs::metadata(&path).ok()?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        path.hash(&mut hasher);
        meta.len().hash(&mut hasher);
        meta.modified().ok().hash(&mut hasher);
        n_ctx.hash(&mut hasher);
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Some(Self {
            path: dir.join(format!("{stem}-{:016x}.kv", hasher.finish())),
            loaded: false,
            saved: false,
        })
    }

    /// The tokens whose state is now in `ctx`'s KV cache (empty: nothing loaded). Reads the file
    /// the first time only; `ctx` must hold nothing yet.
    pub fn load(&mut self, ctx: &mut LlamaContext<'_>, n_ctx: u32) -> Vec<LlamaToken> {
        if std::mem::replace(&mut self.loaded, true) || !self.path.is_file() {
            return Vec::new();
        }
        match ctx.state_seq_load_file(&self.path, SEQ, n_ctx as usize) {
            Ok((tokens, _)) => {
                tracing::debug!(
                    "prompt cache: {} tokens from {}",
                    tokens.len(),
                    self.path.display()
                );
                tokens
            }
            Err(e) => {
                // A partial load may have filled some cells.
                ctx.clear_kv_cache();
                tracing::debug!("prompt cache: {} not used: {e}", self.path.display());
                Vec::new()
            }
        }
    }

    /// Saves the state of `tokens` (all in `ctx`'s KV cache) when this process has not yet, and
    /// when less than half of them came from the cache: a prompt that mostly matched the file
    /// would only rewrite it with a different question at its end.
    pub fn save(&mut self, ctx: &LlamaContext<'_>, tokens: &[LlamaToken], reused: usize) {
        if self.saved || tokens.is_empty() || reused * 2 >= tokens.len() {
            return;
        }
        self.saved = true;
        let Some(dir) = self.path.parent() else {
            return;
        };
        let temp = self
            .path
            .with_extension(format!("kv.{}.tmp", std::process::id()));
        let written = std::fs::create_dir_all(dir)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                ctx.state_seq_save_file(&temp, SEQ, tokens)
                    .map_err(|e| e.to_string())
            })
            .and_then(|_| std::fs::rename(&temp, &self.path).map_err(|e| e.to_string()));
        match written {
            Ok(()) => tracing::debug!(
                "prompt cache: saved {} tokens to {}",
                tokens.len(),
                self.path.display()
            ),
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                tracing::debug!("prompt cache: cannot save {}: {e}", self.path.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_name_follows_the_model_file_and_the_context_size() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("tiny.gguf");
        std::fs::write(&model, b"one").unwrap();
        let cache = dir.path().join("cache");
        let a = PromptCache::new(&cache, &model, 2048).unwrap().path;
        assert_eq!(a, PromptCache::new(&cache, &model, 2048).unwrap().path);
        assert!(a.starts_with(&cache));
        assert!(
            a.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("tiny-")
        );
        assert_ne!(a, PromptCache::new(&cache, &model, 4096).unwrap().path);
        // Another model under the same name (a different size) gets another file.
        std::fs::write(&model, b"other model").unwrap();
        assert_ne!(a, PromptCache::new(&cache, &model, 2048).unwrap().path);
        assert!(PromptCache::new(&cache, &dir.path().join("missing.gguf"), 2048).is_none());
    }
}
