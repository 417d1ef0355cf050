//! RKLLM backend: Rockchip's NPU runtime `librkllmrt.so`, opened at run time.
//!
//! # Finding the library
//! The first of: `--rkllm-lib`, `RKLLM_LIB`, `model.rkllm_lib`; else `librkllmrt.so` in
//! `/usr/lib`, `/usr/local/lib`, `/usr/lib/aarch64-linux-gnu`, `/lib`, `/opt/lib` and the
//! directories of `LD_LIBRARY_PATH`, else whatever the dynamic loader finds by that name.
//!
//! # Choosing the ABI
//! `rkllm_init` changed its third parameter in 1.3.0 (an `RKLLMCallback` struct instead of a
//! function pointer) and several structs changed layout, so calling a library with the wrong ABI
//! crashes. Both versions export the same symbol names, so the ABI is chosen by:
//! 1. `model.rkllm_abi = "1.2"|"1.3"` (or `--rkllm-abi`) when set;
//! 2. otherwise the version string the library carries — the runtime logs
//!    `rkllm-runtime version: X.Y.Z` at start-up and that text is in the file; rkmcp reads it
//!    without running any of the library's code. A bare `X.Y.Z` string is used when it is the
//!    only 1.x version in the file;
//! 3. otherwise loading fails and says to set `model.rkllm_abi`.
//!
//! 1.0/1.1 runtimes (callback returning void, different structs) are refused.
use std::ffi::{CString, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::LlmError;
use crate::backend::{
    AbortHandle, Backend, BackendInfo, Capabilities, FinishReason, GenerateRequest, Generation,
    Message, Role, Stats,
};
use crate::config::{AbiSetting, ModelConfig};
use crate::sys;
use crate::template::ChatTemplate;
use crate::text::{StopScanner, Utf8Assembler};

/// The two supported C ABIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Abi {
    #[serde(rename = "1.2")]
    V1_2,
    #[serde(rename = "1.3")]
    V1_3,
}

impl std::fmt::Display for Abi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Abi::V1_2 => "1.2",
            Abi::V1_3 => "1.3",
        })
    }
}

const LIB_NAME: &str = "librkllmrt.so";
const INSTALL_HINT: &str = "Install Rockchip's RKLLM runtime: copy librkllmrt.so from the rknn-llm release \
(rkllm-runtime/Linux/librkllm_api/aarch64/) to /usr/lib, or point rkmcp at it with --rkllm-lib, RKLLM_LIB or \
model.rkllm_lib";

/// Library files to try, in order, for an explicit path (flag, env or config) or none.
pub fn candidate_paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(path) = explicit {
        return vec![path.to_path_buf()];
    }
    if let Some(env) = std::env::var_os("RKLLM_LIB").filter(|v| !v.is_empty()) {
        return vec![PathBuf::from(env)];
    }
    let mut dirs: Vec<PathBuf> = [
        "/usr/lib",
        "/usr/local/lib",
        "/usr/lib/aarch64-linux-gnu",
        "/lib",
        "/opt/lib",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Some(ld) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&ld).filter(|p| !p.as_os_str().is_empty()));
    }
    dirs.into_iter().map(|d| d.join(LIB_NAME)).collect()
}

/// The library file to open: the first candidate that exists.
pub fn find_library(explicit: Option<&Path>) -> Result<PathBuf, LlmError> {
    let candidates = candidate_paths(explicit);
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    Err(LlmError::RkllmLibrary(format!(
        "the RKLLM runtime was not found; tried: {}. {INSTALL_HINT}",
        tried.join(", ")
    )))
}

/// Reads the runtime version embedded in the library file (see the module docs).
pub fn detect_version(path: &Path) -> Result<Option<String>, std::io::Error> {
    let bytes = std::fs::read(path)?;
    let strings = printable_strings(&bytes);
    const MARKER: &str = "rkllm-runtime version";
    for s in &strings {
        if let Some(pos) = s.find(MARKER) {
            let rest = s[pos + MARKER.len()..].trim_start_matches([':', ' ', 'v']);
            if let Some(v) = leading_version(rest) {
                return Ok(Some(v));
            }
        }
    }
    // The marker may be a format string ("…version: %s") with the number stored on its own.
    let mut bare: Vec<String> = strings
        .iter()
        .filter_map(|s| {
            let s = s.trim().trim_start_matches('v');
            (leading_version(s).as_deref() == Some(s) && s.starts_with("1.")).then(|| s.to_string())
        })
        .collect();
    bare.sort();
    bare.dedup_by(|a, b| major_minor(a) == major_minor(b));
    Ok(if bare.len() == 1 { bare.pop() } else { None })
}

fn printable_strings(bytes: &[u8]) -> Vec<&str> {
    bytes
        .split(|b| !(0x20..0x7f).contains(b))
        .filter(|s| s.len() >= 5)
        .filter_map(|s| std::str::from_utf8(s).ok())
        .collect()
}

/// `X.Y.Z` at the start of `s` (digits only).
fn leading_version(s: &str) -> Option<String> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let v = s[..end].trim_end_matches('.');
    let parts: Vec<&str> = v.split('.').collect();
    (parts.len() == 3 && parts.iter().all(|p| !p.is_empty())).then(|| v.to_string())
}

fn major_minor(v: &str) -> (u32, u32) {
    let mut it = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// The ABI for `path` given the configured setting.
pub fn detect_abi(path: &Path, setting: AbiSetting) -> Result<(Abi, Option<String>), LlmError> {
    let version = detect_version(path)
        .map_err(|e| LlmError::RkllmLibrary(format!("cannot read {}: {e}", path.display())))?;
    let abi = match setting {
        AbiSetting::V1_2 => Abi::V1_2,
        AbiSetting::V1_3 => Abi::V1_3,
        AbiSetting::Auto => match version.as_deref().map(major_minor) {
            Some((1, 2)) => Abi::V1_2,
            Some((1, m)) if m >= 3 => Abi::V1_3,
            Some(_) => {
                return Err(LlmError::RkllmLibrary(format!(
                    "{} is RKLLM runtime {}; rkmcp supports the 1.2 and 1.3 ABIs. Install runtime 1.2.x or 1.3.x, \
                     or set model.rkllm_abi if you know the ABI matches",
                    path.display(),
                    version.as_deref().unwrap_or("?")
                )));
            }
            None => {
                return Err(LlmError::RkllmLibrary(format!(
                    "cannot tell which RKLLM ABI {} has (no `rkllm-runtime version` string in it). Set \
                     model.rkllm_abi = \"1.2\" or \"1.3\" (or --rkllm-abi) to the version you installed",
                    path.display()
                )));
            }
        },
    };
    Ok((abi, version))
}

enum Init {
    V1_2(
        unsafe extern "C" fn(
            *mut sys::LLMHandle,
            *mut sys::RKLLMParam_v1_2,
            sys::LLMResultCallback,
        ) -> c_int,
    ),
    V1_3(
        unsafe extern "C" fn(
            *mut sys::LLMHandle,
            *mut sys::RKLLMParam_v1_3,
            *mut sys::RKLLMCallback,
        ) -> c_int,
    ),
}

enum CreateDefault {
    V1_2(unsafe extern "C" fn() -> sys::RKLLMParam_v1_2),
    V1_3(unsafe extern "C" fn() -> sys::RKLLMParam_v1_3),
}

enum Run {
    V1_2(
        unsafe extern "C" fn(
            sys::LLMHandle,
            *mut sys::RKLLMInput_v1_2,
            *mut sys::RKLLMInferParam_v1_2,
            *mut c_void,
        ) -> c_int,
    ),
    V1_3(
        unsafe extern "C" fn(
            sys::LLMHandle,
            *mut sys::RKLLMInput_v1_3,
            *mut sys::RKLLMInferParam_v1_3,
            *mut c_void,
        ) -> c_int,
    ),
}

type HandleFn = unsafe extern "C" fn(sys::LLMHandle) -> c_int;
type ClearKvFn = unsafe extern "C" fn(sys::LLMHandle, c_int, *mut c_int, *mut c_int) -> c_int;
type ThreeStrFn = unsafe extern "C" fn(
    sys::LLMHandle,
    *const std::ffi::c_char,
    *const std::ffi::c_char,
    *const std::ffi::c_char,
) -> c_int;

/// An opened `librkllmrt.so` with its functions resolved for one ABI.
pub struct RkllmLibrary {
    pub path: PathBuf,
    pub abi: Abi,
    pub version: Option<String>,
    create_default: CreateDefault,
    init: Init,
    run: Run,
    abort: HandleFn,
    destroy: HandleFn,
    is_running: Option<HandleFn>,
    clear_kv_cache: Option<ClearKvFn>,
    set_chat_template: Option<ThreeStrFn>,
    set_function_tools: Option<ThreeStrFn>,
    // Declared last: dropped after the function pointers above, which point into it.
    _lib: libloading::Library,
}

impl std::fmt::Debug for RkllmLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RkllmLibrary")
            .field("path", &self.path)
            .field("abi", &self.abi)
            .finish()
    }
}

const REQUIRED: [&str; 5] = [
    "rkllm_createDefaultParam",
    "rkllm_init",
    "rkllm_run",
    "rkllm_abort",
    "rkllm_destroy",
];

impl RkllmLibrary {
    /// Opens the library at `path` (see [`find_library`]) with the ABI from `setting`.
    pub fn open(path: &Path, setting: AbiSetting) -> Result<Self, LlmError> {
        if !path.is_file() {
            return Err(LlmError::RkllmLibrary(format!(
                "{} does not exist. {INSTALL_HINT}",
                path.display()
            )));
        }
        // SAFETY: loading runs the library's initialisers; the user chose this file as the RKLLM
        // runtime. There is no way to load native code without trusting it.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
            LlmError::RkllmLibrary(format!(
                "cannot load {}: {e}. {INSTALL_HINT}",
                path.display()
            ))
        })?;
        let missing: Vec<&str> = REQUIRED
            .iter()
            .copied()
            // SAFETY: only checks that the symbol exists; the pointer is not used.
            .filter(|name| unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_err())
            .collect();
        if !missing.is_empty() {
            return Err(LlmError::RkllmLibrary(format!(
                "{} is not the RKLLM runtime: it does not export {}. {INSTALL_HINT}",
                path.display(),
                missing.join(", ")
            )));
        }
        let (abi, version) = detect_abi(path, setting)?;

        // SAFETY (all lookups below): the names are the RKLLM API and the types come from our
        // header for the ABI chosen above; a wrong ABI is what the detection guards against.
        unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
            unsafe { lib.get::<T>(name.as_bytes()).ok().map(|s| *s) }
        }
        let required = |name: &str| {
            LlmError::RkllmLibrary(format!("{}: symbol {name} vanished", path.display()))
        };
        unsafe {
            let (create_default, init, run) = match abi {
                Abi::V1_2 => (
                    CreateDefault::V1_2(
                        sym(&lib, "rkllm_createDefaultParam")
                            .ok_or_else(|| required("rkllm_createDefaultParam"))?,
                    ),
                    Init::V1_2(sym(&lib, "rkllm_init").ok_or_else(|| required("rkllm_init"))?),
                    Run::V1_2(sym(&lib, "rkllm_run").ok_or_else(|| required("rkllm_run"))?),
                ),
                Abi::V1_3 => (
                    CreateDefault::V1_3(
                        sym(&lib, "rkllm_createDefaultParam")
                            .ok_or_else(|| required("rkllm_createDefaultParam"))?,
                    ),
                    Init::V1_3(sym(&lib, "rkllm_init").ok_or_else(|| required("rkllm_init"))?),
                    Run::V1_3(sym(&lib, "rkllm_run").ok_or_else(|| required("rkllm_run"))?),
                ),
            };
            Ok(Self {
                path: path.to_path_buf(),
                abi,
                version,
                create_default,
                init,
                run,
                abort: sym(&lib, "rkllm_abort").ok_or_else(|| required("rkllm_abort"))?,
                destroy: sym(&lib, "rkllm_destroy").ok_or_else(|| required("rkllm_destroy"))?,
                is_running: sym(&lib, "rkllm_is_running"),
                clear_kv_cache: sym(&lib, "rkllm_clear_kv_cache"),
                set_chat_template: sym(&lib, "rkllm_set_chat_template"),
                set_function_tools: sym(&lib, "rkllm_set_function_tools"),
                _lib: lib,
            })
        }
    }

    pub fn has_function_tools(&self) -> bool {
        self.set_function_tools.is_some()
    }
}

/// A live `LLMHandle`. Destroyed on drop.
struct Session {
    lib: Arc<RkllmLibrary>,
    handle: sys::LLMHandle,
    /// 1.3 may keep the pointer it got in `rkllm_init`: the struct lives as long as the handle.
    _callbacks: Option<Box<sys::RKLLMCallback>>,
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

    /// Whether the runtime reports a run in progress (`rkllm_is_running` returns 0 then).
    fn is_running(&self) -> Option<bool> {
        // SAFETY: the handle is alive as long as `self`.
        self.lib.is_running.map(|f| unsafe { f(self.handle) } == 0)
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

/// The result callback: runs on a runtime thread while `rkllm_run` blocks the calling thread.
unsafe extern "C" fn result_callback(
    result: *mut sys::RKLLMResult,
    userdata: *mut c_void,
    state: sys::LLMCallState,
) -> c_int {
    if userdata.is_null() {
        return sys::RKLLM_CALLBACK_CONTINUE as c_int;
    }
    // Unwinding out of an extern "C" function aborts the process: contain any panic here.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: userdata is the `RunState` that `generate` passed to rkllm_run, alive and not
        // otherwise accessed until rkllm_run returns; callbacks for one run do not overlap.
        let run = unsafe { &mut *(userdata as *mut RunState<'_>) };
        // SAFETY: the runtime passes a valid result (or null) for the duration of the call.
        let result = unsafe { result.as_ref() };
        let bytes = result
            .filter(|r| !r.text.is_null())
            // SAFETY: `text` is a NUL-terminated string owned by the runtime during the call.
            .map(|r| unsafe { std::ffi::CStr::from_ptr(r.text) }.to_bytes())
            .unwrap_or_default();
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
                if let Some(r) = result {
                    run.perf = Some(r.perf);
                }
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
    sys::RKLLM_CALLBACK_CONTINUE as c_int
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
        macro_rules! fill {
            ($p:expr) => {{
                $p.model_path = model_c.as_ptr();
                $p.max_context_len = ctx;
                $p.max_new_tokens = config.max_new_tokens.min(i32::MAX as u32) as i32;
                $p.top_k = if s.is_greedy() { 1 } else { s.top_k };
                $p.top_p = s.top_p;
                $p.temperature = if s.is_greedy() { 0.0 } else { s.temperature };
                $p.repeat_penalty = s.repeat_penalty;
                $p.frequency_penalty = s.frequency_penalty;
                $p.presence_penalty = s.presence_penalty;
                $p.skip_special_token = true;
                $p.is_async = false;
            }};
        }
        let mut handle: sys::LLMHandle = std::ptr::null_mut();
        let mut callbacks = None;
        // SAFETY: the param structs come from the library's own defaults for the detected ABI;
        // `model_c` outlives the call; the callback struct (1.3) lives as long as the session.
        let rc = unsafe {
            match (&lib.create_default, &lib.init) {
                (CreateDefault::V1_2(create), Init::V1_2(init)) => {
                    let mut p = create();
                    fill!(p);
                    init(&mut handle, &mut p, Some(result_callback))
                }
                (CreateDefault::V1_3(create), Init::V1_3(init)) => {
                    let mut p = create();
                    fill!(p);
                    let cb = callbacks.insert(Box::new(sys::RKLLMCallback {
                        result_callback: Some(result_callback),
                        ..Default::default()
                    }));
                    init(&mut handle, &mut p, &mut **cb)
                }
                _ => unreachable!("functions are resolved for one ABI"),
            }
        };
        if rc != 0 || handle.is_null() {
            return Err(LlmError::Model(format!(
                "rkllm_init failed (code {rc}) for {} with runtime {} (ABI {}). Check that the model was \
                 converted for this runtime version and platform, and the NPU driver is loaded (rkmcp doctor)",
                model.display(),
                lib.path.display(),
                lib.abi
            )));
        }
        let session = Arc::new(Session {
            lib,
            handle,
            _callbacks: callbacks,
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
        if let Some(f) = self.session.lib.clear_kv_cache {
            // SAFETY: valid handle; null positions mean "the whole cache".
            unsafe {
                f(
                    self.session.handle,
                    1,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
        }
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
                native_tools: lib.has_function_tools(),
            },
            detail: format!(
                "runtime {} (ABI {}{})",
                lib.path.display(),
                lib.abi,
                lib.version
                    .as_deref()
                    .map(|v| format!(", version {v}"))
                    .unwrap_or_default()
            ),
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
        let thinking = self.config.enable_thinking;
        // SAFETY: input structs and strings outlive the synchronous rkllm_run; `state` is only
        // touched by the callback until rkllm_run returns.
        let rc = unsafe {
            match &session.lib.run {
                Run::V1_2(run) => {
                    let mut input = sys::RKLLMInput_v1_2 {
                        role: role_c.as_ptr(),
                        enable_thinking: thinking,
                        input_type: sys::RKLLM_INPUT_PROMPT,
                        ..Default::default()
                    };
                    input.__bindgen_anon_1.prompt_input = prompt_c.as_ptr();
                    let mut infer = sys::RKLLMInferParam_v1_2 {
                        mode: sys::RKLLM_INFER_GENERATE,
                        keep_history,
                        ..Default::default()
                    };
                    run(session.handle, &mut input, &mut infer, userdata)
                }
                Run::V1_3(run) => {
                    let mut input = sys::RKLLMInput_v1_3 {
                        role: role_c.as_ptr(),
                        enable_thinking: thinking,
                        input_type: sys::RKLLM_INPUT_PROMPT,
                        ..Default::default()
                    };
                    input.__bindgen_anon_1.prompt_input = prompt_c.as_ptr();
                    let mut infer = sys::RKLLMInferParam_v1_3 {
                        mode: sys::RKLLM_INFER_GENERATE,
                        keep_history,
                        max_new_tokens: max_new.min(i32::MAX as u32) as i32,
                        ..Default::default()
                    };
                    run(session.handle, &mut input, &mut infer, userdata)
                }
            }
        };
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
