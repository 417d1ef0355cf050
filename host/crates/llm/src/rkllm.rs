//! RKLLM backend: Rockchip's NPU runtime `librkllmrt.so`, opened at run time.
//!
//! # Finding the library
//! The first of: `--rkllm-lib`, `RKLLM_LIB`, `model.rkllm_lib`; else `librkllmrt.so` in
//! `/usr/lib`, `/usr/local/lib`, `/usr/lib/aarch64-linux-gnu`, `/lib`, `/opt/lib` and the
//! directories of `LD_LIBRARY_PATH`, else whatever the dynamic loader finds by that name.
//!
//! # Choosing the layout
//! Calling a library with the wrong struct layouts crashes or silently misreads fields, and the
//! releases export the same symbol names, so [`abi::choose`] decides from:
//! 1. `model.rkllm_abi = "1.2"|"1.3"` (or `--rkllm-abi`) when set ("1.2" is split into 1.2.0 and
//!    1.2.1–1.2.3 by the symbols the library exports);
//! 2. otherwise the version string the library carries (`rkllm-runtime version: X.Y.Z`, read from
//!    the file without running its code), looked up in [`abi::RELEASES`] and checked against the
//!    symbols (`rkllm_set_function_tools` exists from 1.2.1 on);
//! 3. otherwise the symbols alone, which identify 1.2.0 but not 1.2.1–1.3.0 apart.
//!
//! Releases older than 1.2.0 and releases whose header has not been compared are refused with an
//! error naming the version and what to install.

use std::ffi::{CString, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::LlmError;
use crate::backend::{
    AbortHandle, Backend, BackendInfo, Capabilities, FinishReason, GenerateRequest, Generation,
    Message, Role, Stats,
};
use crate::config::ModelConfig;
use crate::sys;
use crate::template::ChatTemplate;
use crate::text::{StopScanner, Utf8Assembler};

pub mod abi;
mod library;

pub use abi::{Abi, RELEASES, Refusal, Symbols};
use abi::{InitParams, ResultSink, ResultView, RunInput};
pub use library::{RkllmLibrary, candidate_paths, detect_version, find_library};

/// A live `LLMHandle`. Destroyed on drop.
struct Session {
    lib: Arc<RkllmLibrary>,
    handle: sys::LLMHandle,
    /// What `rkllm_init` may keep a pointer to (1.3.0's callback struct) lives as long as the handle.
    _keep_alive: abi::KeepAlive,
    /// Serialises runs and destruction against `rkllm_abort` calls from other threads.
    running: Mutex<()>,
}

// SAFETY: the runtime documents abort/is_running as callable from another thread while a run is
// in progress; every other call goes through `&mut RkllmBackend`, i.e. one thread at a time.
unsafe impl Send for Session {}
unsafe impl Sync for Session {}

impl Session {
    fn abort(&self) {
        // SAFETY: the handle is alive as long as `self`.
        unsafe { (self.lib.abort)(self.handle) };
    }

    /// Whether the runtime reports a run in progress (what `rkllm_is_running` returns then
    /// depends on the release).
    fn is_running(&self) -> Option<bool> {
        let running = self.lib.functions.running_code();
        // SAFETY: the handle is alive as long as `self`.
        self.lib
            .is_running
            .map(|f| unsafe { f(self.handle) } == running)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _guard = self.running.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: created by rkllm_init, destroyed exactly once here.
        unsafe { (self.lib.destroy)(self.handle) };
    }
}

/// What the result callback writes into during one `rkllm_run`.
struct RunState<'a> {
    utf8: Utf8Assembler,
    stop: StopScanner,
    text: String,
    sink: &'a mut dyn FnMut(&str),
    started: Instant,
    first_text: Option<Instant>,
    callbacks: u32,
    max_new_tokens: u32,
    perf: Option<sys::RKLLMPerfStat>,
    error: bool,
    finish: Option<FinishReason>,
    session: &'a Session,
}

impl RunState<'_> {
    fn deliver(&mut self, text: &str) {
        if self.finish.is_some() || text.is_empty() {
            return;
        }
        let scan = self.stop.push(text);
        if !scan.text.is_empty() {
            self.first_text.get_or_insert_with(Instant::now);
            self.text.push_str(&scan.text);
            (self.sink)(&scan.text);
        }
        if scan.stopped {
            self.finish = Some(FinishReason::Stop);
            self.session.abort();
        }
    }
}

/// Receives the result callbacks of `generate`; each layout's trampoline converts its result
/// struct into a [`ResultView`] first.
struct RunSink;

impl ResultSink for RunSink {
    /// Runs on a runtime thread while `rkllm_run` blocks the calling thread.
    unsafe fn on_result(
        userdata: *mut c_void,
        result: Option<ResultView<'_>>,
        state: sys::LLMCallState,
    ) {
        if userdata.is_null() {
            return;
        }
        // Unwinding out of an extern "C" function aborts the process: contain any panic here.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: userdata is the `RunState` that `generate` passed to rkllm_run, alive and
            // not otherwise accessed until rkllm_run returns; callbacks for one run do not overlap.
            let run = unsafe { &mut *(userdata as *mut RunState<'_>) };
            let bytes = result.map(|r| r.text).unwrap_or_default();
            match state {
                sys::RKLLM_RUN_NORMAL | sys::RKLLM_RUN_WAITING => {
                    run.callbacks += 1;
                    // WAITING carries the first bytes of a character split over tokens: they are
                    // kept by the assembler until the rest arrives.
                    let text = run.utf8.push(bytes);
                    run.deliver(&text);
                    if state == sys::RKLLM_RUN_NORMAL
                        && run.finish.is_none()
                        && run.callbacks >= run.max_new_tokens
                    {
                        run.finish = Some(FinishReason::MaxTokens);
                        run.session.abort();
                    }
                }
                sys::RKLLM_RUN_FINISH => {
                    run.perf = result.and_then(|r| r.perf);
                    let rest = run.utf8.finish();
                    run.deliver(&rest);
                    let held = run.stop.finish();
                    run.deliver(&held);
                }
                sys::RKLLM_RUN_ERROR => run.error = true,
                _ => {}
            }
        }));
        if outcome.is_err() {
            tracing::error!("panic in the RKLLM result callback");
        }
    }
}

/// The RKLLM backend.
pub struct RkllmBackend {
    session: Arc<Session>,
    config: ModelConfig,
    model: PathBuf,
    /// Set when rkmcp renders prompts itself (`model.chat_template`); unset: the runtime's
    /// template from the `.rkllm` file.
    template: Option<ChatTemplate>,
    /// The conversation that is in the runtime's KV cache (prompt and answers).
    in_cache: Vec<Message>,
    tools_sent: Option<(String, String)>,
}

impl std::fmt::Debug for RkllmBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RkllmBackend")
            .field("model", &self.model)
            .field("lib", &self.session.lib)
            .finish()
    }
}

impl RkllmBackend {
    /// Loads `model` (a `.rkllm` file) with the runtime library `lib`.
    pub fn load(
        lib: Arc<RkllmLibrary>,
        model: &Path,
        config: &ModelConfig,
    ) -> Result<Self, LlmError> {
        config.validate().map_err(LlmError::Config)?;
        if !model.is_file() {
            return Err(LlmError::Model(format!(
                "model file {} does not exist",
                model.display()
            )));
        }
        let model_c = CString::new(model.to_string_lossy().as_bytes()).map_err(|_| {
            LlmError::Model(format!(
                "model path {} contains a NUL byte",
                model.display()
            ))
        })?;
        let ctx = config.context_length.unwrap_or(4096).min(i32::MAX as u32) as i32;
        let s = &config.sampling;
        let params = InitParams {
            model_path: &model_c,
            max_context_len: ctx,
            max_new_tokens: config.max_new_tokens.min(i32::MAX as u32) as i32,
            top_k: if s.is_greedy() { 1 } else { s.top_k },
            top_p: s.top_p,
            temperature: if s.is_greedy() { 0.0 } else { s.temperature },
            repeat_penalty: s.repeat_penalty,
            frequency_penalty: s.frequency_penalty,
            presence_penalty: s.presence_penalty,
        };
        let mut handle: sys::LLMHandle = std::ptr::null_mut();
        // SAFETY: the library's functions were resolved for its layout; `model_c` outlives the
        // call; what init may keep a pointer to is stored in the session with the handle.
        let (rc, keep_alive) = unsafe { lib.functions.init::<RunSink>(&params, &mut handle) };
        if rc != 0 || handle.is_null() {
            return Err(LlmError::Model(format!(
                "rkllm_init failed (code {rc}) for {} with runtime {} ({}). Check that the model was \
                 converted for this runtime version and platform, and the NPU driver is loaded (rkmcp doctor)",
                model.display(),
                lib.path.display(),
                lib.describe()
            )));
        }
        let session = Arc::new(Session {
            lib,
            handle,
            _keep_alive: keep_alive,
            running: Mutex::new(()),
        });
        let template = match &config.chat_template {
            Some(t) => {
                let template = ChatTemplate::resolve(Some(t), None, "", "")?;
                // An empty template turns the runtime's own templating off: rkmcp sends the
                // fully rendered conversation.
                if let Some(f) = session.lib.set_chat_template {
                    let empty = c"";
                    // SAFETY: valid handle and NUL-terminated strings.
                    unsafe {
                        f(
                            session.handle,
                            empty.as_ptr(),
                            empty.as_ptr(),
                            empty.as_ptr(),
                        )
                    };
                }
                Some(template)
            }
            None => None,
        };
        Ok(Self {
            session,
            config: config.clone(),
            model: model.to_path_buf(),
            template,
            in_cache: Vec::new(),
            tools_sent: None,
        })
    }

    pub fn library(&self) -> &RkllmLibrary {
        &self.session.lib
    }

    /// Whether the runtime says a run is in progress (`rkllm_is_running`).
    pub fn is_running(&self) -> Option<bool> {
        self.session.is_running()
    }

    fn clear_cache(&mut self) {
        // SAFETY: valid handle.
        unsafe {
            self.session
                .lib
                .functions
                .clear_kv_cache(self.session.handle, true)
        };
        self.in_cache.clear();
    }

    /// The text and role to send, and whether the KV cache continues.
    fn prompt_for(&mut self, request: &GenerateRequest) -> Result<(String, Role), LlmError> {
        let messages = &request.messages;
        let Some(last) = messages.last() else {
            return Err(LlmError::Request("the conversation is empty".into()));
        };
        if !matches!(last.role, Role::User | Role::Tool) {
            return Err(LlmError::Request(format!(
                "the last message must be from the user or a tool, not {}",
                last.role.as_str()
            )));
        }
        let keep = request.reuse_cache && self.config.keep_history;
        let continues = keep && !self.in_cache.is_empty() && messages.starts_with(&self.in_cache);
        if !continues && !self.in_cache.is_empty() {
            self.clear_cache();
        }
        let role = last.role;
        if let Some(template) = &self.template {
            let full = template.render(messages, true)?;
            if continues {
                let before = template.render(&self.in_cache, false)?;
                if let Some(delta) = full.strip_prefix(&before) {
                    return Ok((delta.to_string(), role));
                }
                self.clear_cache();
            }
            return Ok((full, role));
        }
        // The runtime's template wraps what we send as one turn of `role`.
        let new = if continues {
            &messages[self.in_cache.len()..]
        } else {
            &messages[..]
        };
        let mut parts = Vec::new();
        for m in new {
            match m.role {
                // Native tools carry the system prompt (see generate); otherwise it leads the
                // first turn.
                Role::System if self.tools_sent.is_some() => {}
                Role::Assistant => {}
                _ => parts.push(m.content.as_str()),
            }
        }
        Ok((parts.join("\n\n"), role))
    }

    fn set_tools(&mut self, request: &GenerateRequest) -> Result<(), LlmError> {
        let Some(tools) = request
            .tools_json
            .as_ref()
            .filter(|_| self.config.native_tools)
        else {
            return Ok(());
        };
        let Some(f) = self.session.lib.set_function_tools else {
            return Err(LlmError::Request(format!(
                "native tool calling needs rkllm_set_function_tools (runtime ≥ 1.2.1); {} lacks it. Set \
                 model.native_tools = false",
                self.session.lib.path.display()
            )));
        };
        let system = request
            .messages
            .iter()
            .find(|m| m.role == Role::System)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        if self.tools_sent.as_ref() == Some(&(system.clone(), tools.clone())) {
            return Ok(());
        }
        let c = |s: &str| {
            CString::new(s)
                .map_err(|_| LlmError::Request("tool descriptions contain a NUL byte".into()))
        };
        let (sys_c, tools_c, resp_c) = (c(&system)?, c(tools)?, c("tool_response")?);
        // SAFETY: valid handle and NUL-terminated strings that outlive the call.
        let rc = unsafe {
            f(
                self.session.handle,
                sys_c.as_ptr(),
                tools_c.as_ptr(),
                resp_c.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(LlmError::Runtime(format!(
                "rkllm_set_function_tools failed (code {rc}); the runtime refuses tools when the chat template \
                 is empty (model.chat_template set) or the model has none"
            )));
        }
        self.tools_sent = Some((system, tools.clone()));
        self.clear_cache();
        Ok(())
    }
}

impl Backend for RkllmBackend {
    fn info(&self) -> BackendInfo {
        let lib = &self.session.lib;
        BackendInfo {
            backend: "rkllm",
            model: self.model.clone(),
            chat_template: self
                .template
                .as_ref()
                .map(ChatTemplate::name)
                .unwrap_or_else(|| "runtime".into()),
            context_length: self.config.context_length.unwrap_or(4096),
            capabilities: Capabilities {
                grammar: false,
                llguidance: false,
                native_tools: lib.has_function_tools(),
                wraps_tool_results: self
                    .template
                    .as_ref()
                    .is_some_and(ChatTemplate::wraps_tool_results),
            },
            detail: format!("runtime {} ({})", lib.path.display(), lib.describe()),
        }
    }

    fn render(&self, messages: &[Message]) -> Result<String, LlmError> {
        match &self.template {
            Some(t) => t.render(messages, true),
            None => Ok(messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default()),
        }
    }

    fn generate(
        &mut self,
        request: &GenerateRequest,
        abort: &AbortHandle,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Generation, LlmError> {
        if request.grammar.is_some() {
            return Err(LlmError::Request(
                "the RKLLM backend cannot constrain output with a grammar".into(),
            ));
        }
        if request.assistant_prefix.is_some() {
            return Err(LlmError::Request(
                "the RKLLM backend cannot continue an answer that was started for it".into(),
            ));
        }
        let started = Instant::now();
        if abort.is_aborted() {
            return Ok(Generation {
                text: String::new(),
                finish: FinishReason::Aborted,
                stats: Stats::default(),
            });
        }
        self.set_tools(request)?;
        let (prompt, role) = self.prompt_for(request)?;
        let prompt_c = CString::new(prompt)
            .map_err(|_| LlmError::Request("the prompt contains a NUL byte".into()))?;
        let role_c = CString::new(role.as_str()).expect("role names have no NUL");
        let keep_history = c_int::from(self.config.keep_history);
        let max_new = request
            .max_new_tokens
            .unwrap_or(self.config.max_new_tokens)
            .max(1);
        let mut stops = self.config.stop.clone();
        stops.extend(request.stop.iter().cloned());

        let session = Arc::clone(&self.session);
        let _run_guard = session.running.lock().unwrap_or_else(|e| e.into_inner());
        let hook_session = Arc::clone(&session);
        let _hook = abort.on_abort(Box::new(move || hook_session.abort()));
        let mut state = RunState {
            utf8: Utf8Assembler::new(),
            stop: StopScanner::new(stops),
            text: String::new(),
            sink: on_text,
            started,
            first_text: None,
            callbacks: 0,
            max_new_tokens: max_new,
            perf: None,
            error: false,
            finish: None,
            session: &session,
        };
        let userdata = (&mut state as *mut RunState<'_>).cast::<c_void>();
        let input = RunInput {
            role: &role_c,
            enable_thinking: self.config.enable_thinking,
            prompt: &prompt_c,
            keep_history,
            max_new_tokens: max_new.min(i32::MAX as u32) as i32,
        };
        // SAFETY: input structs and strings outlive the synchronous rkllm_run; `state` is only
        // touched by the callback until rkllm_run returns, and RunSink expects a RunState.
        let rc = unsafe { session.lib.functions.run(session.handle, &input, userdata) };
        let state = state;
        if rc != 0 {
            self.in_cache.clear();
            return Err(LlmError::Runtime(format!("rkllm_run failed (code {rc})")));
        }
        if state.error {
            self.in_cache.clear();
            return Err(LlmError::Runtime(format!(
                "the RKLLM runtime reported an error after {} characters of output",
                state.text.chars().count()
            )));
        }
        let finish = if abort.is_aborted() {
            FinishReason::Aborted
        } else {
            state.finish.unwrap_or(FinishReason::EndOfTurn)
        };
        let mut stats = Stats::default();
        if let Some(perf) = state.perf {
            stats.prompt_tokens = perf.prefill_tokens.max(0) as u32;
            stats.prefill_ms = f64::from(perf.prefill_time_ms);
            stats.generated_tokens = perf.generate_tokens.max(0) as u32;
            stats.generation_ms = f64::from(perf.generate_time_ms);
        } else {
            stats.generated_tokens = state.callbacks;
            stats.generation_ms = state.started.elapsed().as_secs_f64() * 1000.0;
        }
        stats.time_to_first_token_ms = state
            .first_text
            .map(|t| (t - state.started).as_secs_f64() * 1000.0)
            .unwrap_or_default();
        stats.finish_rates();
        if self.config.keep_history && finish != FinishReason::Aborted {
            self.in_cache = request.messages.clone();
            self.in_cache.push(Message::assistant(state.text.clone()));
        } else {
            self.in_cache.clear();
        }
        Ok(Generation {
            text: state.text,
            finish,
            stats,
        })
    }

    fn reset(&mut self) -> Result<(), LlmError> {
        self.clear_cache();
        Ok(())
    }
}
