//! TEST DOUBLE of Rockchip's `librkllmrt.so`. It is NOT an LLM runtime.
//!
//! It exports the RKLLM C API (the subset rkmcp uses) with the exact struct layouts of
//! `host/crates/llm/rkllm/rkllm.h`, so rkmcp's whole FFI path — `dlopen`, symbol lookup, layout
//! detection, `rkllm_init`, `rkllm_run`, result callbacks from a runtime thread, `rkllm_abort`,
//! `rkllm_destroy` — runs in CI on machines without an NPU. One build is one layout, as a real
//! release is:
//!
//! | features       | layout (releases)     | version string | differences                         |
//! |----------------|-----------------------|----------------|-------------------------------------|
//! | (default)      | 1.3.0                 | 1.3.0          | `RKLLMCallback` struct, run limits  |
//! | `abi-v1-2-1`   | 1.2.1 (1.2.1–1.2.3)   | 1.2.1          | one callback pointer, role, perf    |
//! | `abi-v1-2-0`   | 1.2.0                 | 1.2.0          | no role, void callback, no perf, no |
//! |                |                       |                | `rkllm_set_function_tools`          |
//!
//! The artifact is `librkllmrt_test_double.so`.
//!
//! Token streams are scripted by a directive in the prompt, `[[NAME]]`:
//! - (none)    — "Hello from the RKLLM test double." in several pieces, then FINISH;
//! - `utf8`    — text with 2-, 3- and 4-byte UTF-8 characters whose bytes are split over
//!   callbacks: the leading bytes come with state WAITING, the rest with the next NORMAL call;
//! - `echo`    — one piece describing what the runtime received (role, enable_thinking,
//!   keep_history, prompt, parameters, tools, chat template, cleared KV caches);
//! - `error`   — two pieces, then state ERROR;
//! - `fail`    — `rkllm_run` returns -1 without calling back;
//! - `slow`    — up to 2000 pieces 5 ms apart; stops early on `rkllm_abort`.
//!
//! `rkllm_init` fails (-1) when `model_path` cannot be read or its content starts with `BAD`.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]
// Every export is called from C through the RKLLM ABI, whose contract (valid pointers from the
// caller) is the safety documentation; marking the Rust signatures `unsafe` would not change
// what C callers may do.
#![allow(clippy::not_unsafe_ptr_arg_deref, clippy::missing_safety_doc)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::Duration;

#[allow(dead_code, clippy::all)]
mod sys {
    include!("../../llm/rkllm/bindings.rs");
}
use sys::*;

#[cfg(all(feature = "abi-v1-2-0", feature = "abi-v1-2-1"))]
compile_error!("choose one layout: abi-v1-2-0, abi-v1-2-1, or neither for 1.3.0");

/// The types of one layout, and what differs in behaviour.
#[cfg(feature = "abi-v1-2-0")]
mod layout {
    use super::sys::*;
    pub type Param = RKLLMParam_v1_2_0;
    pub type Input = RKLLMInput_v1_2_0;
    pub type InferParam = RKLLMInferParam_v1_2_0;
    pub type Result = RKLLMResult_v1_2_0;
    pub type Callback = LLMResultCallback_v1_2_0;
    /// `rkllm_is_running` while running, per the 1.2.x header.
    pub const RUNNING: std::ffi::c_int = 0;
    /// What rkmcp's detection looks for; the real runtime logs the same words at start-up.
    #[used]
    #[unsafe(no_mangle)]
    pub static RKLLM_TEST_DOUBLE_VERSION: [u8; 44] =
        *b"rkllm-runtime version: 1.2.0 (TEST DOUBLE)\0\0";
}
#[cfg(feature = "abi-v1-2-1")]
mod layout {
    use super::sys::*;
    pub type Param = RKLLMParam_v1_2_1;
    pub type Input = RKLLMInput_v1_2_1;
    pub type InferParam = RKLLMInferParam_v1_2_0;
    pub type Result = RKLLMResult;
    pub type Callback = LLMResultCallback;
    pub const RUNNING: std::ffi::c_int = 0;
    #[used]
    #[unsafe(no_mangle)]
    pub static RKLLM_TEST_DOUBLE_VERSION: [u8; 44] =
        *b"rkllm-runtime version: 1.2.1 (TEST DOUBLE)\0\0";
}
#[cfg(not(any(feature = "abi-v1-2-0", feature = "abi-v1-2-1")))]
mod layout {
    use super::sys::*;
    pub type Param = RKLLMParam_v1_3_0;
    pub type Input = RKLLMInput_v1_3_0;
    pub type InferParam = RKLLMInferParam_v1_3_0;
    pub type Result = RKLLMResult;
    pub type Callback = LLMResultCallback;
    /// Per the 1.3.0 header: 1 while a run is in progress.
    pub const RUNNING: std::ffi::c_int = 1;
    #[used]
    #[unsafe(no_mangle)]
    pub static RKLLM_TEST_DOUBLE_VERSION: [u8; 44] =
        *b"rkllm-runtime version: 1.3.0 (TEST DOUBLE)\0\0";
}
use layout::{Callback, InferParam, Input, Param};

/// Handles created and not yet destroyed, so tests can check that rkmcp destroys what it creates.
static LIVE_HANDLES: AtomicUsize = AtomicUsize::new(0);

struct Instance {
    callback: Callback,
    default_userdata: *mut c_void,
    max_new_tokens: i32,
    max_context_len: i32,
    temperature: f32,
    top_k: i32,
    running: AtomicBool,
    abort: AtomicBool,
    cleared: AtomicI32,
    config: Mutex<Config>,
}

#[derive(Default)]
struct Config {
    tools: Option<(String, String, String)>,
    template: Option<(String, String, String)>,
}

/// Handles are raw pointers to `Instance`; the runtime contract makes the caller keep them alive.
struct SendPtr(*mut c_void);
// SAFETY: the pointers are only dereferenced while the caller keeps the handle alive, as the real
// runtime requires; the double's own async thread is joined by `rkllm_destroy`'s contract.
unsafe impl Send for SendPtr {}

fn cstr(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: callers pass NUL-terminated strings per the RKLLM API.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

fn default_param() -> Param {
    Param {
        max_context_len: 512,
        max_new_tokens: -1,
        top_k: 1,
        top_p: 0.9,
        temperature: 0.8,
        repeat_penalty: 1.1,
        skip_special_token: true,
        ..Default::default()
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_createDefaultParam() -> Param {
    default_param()
}

#[cfg(any(feature = "abi-v1-2-0", feature = "abi-v1-2-1"))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rkllm_init(
    handle: *mut LLMHandle,
    param: *mut Param,
    callback: Callback,
) -> c_int {
    unsafe { init(handle, param, callback, std::ptr::null_mut()) }
}

#[cfg(not(any(feature = "abi-v1-2-0", feature = "abi-v1-2-1")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rkllm_init(
    handle: *mut LLMHandle,
    param: *mut Param,
    callback: *mut RKLLMCallback,
) -> c_int {
    if callback.is_null() {
        return -1;
    }
    // SAFETY: checked non-null; the caller owns the struct for the duration of the call.
    let cb = unsafe { &*callback };
    unsafe { init(handle, param, cb.result_callback, cb.result_userdata) }
}

unsafe fn init(
    handle: *mut LLMHandle,
    param: *mut Param,
    callback: Callback,
    userdata: *mut c_void,
) -> c_int {
    if handle.is_null() || param.is_null() || callback.is_none() {
        return -1;
    }
    // SAFETY: checked non-null above.
    let p = unsafe { &*param };
    let model = cstr(p.model_path);
    match std::fs::read(&model) {
        Ok(bytes) if !bytes.starts_with(b"BAD") => {}
        _ => {
            eprintln!("E rkllm-test-double: cannot load model {model}");
            return -1;
        }
    }
    let inst = Box::new(Instance {
        callback,
        default_userdata: userdata,
        max_new_tokens: p.max_new_tokens,
        max_context_len: p.max_context_len,
        temperature: p.temperature,
        top_k: p.top_k,
        running: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        cleared: AtomicI32::new(0),
        config: Mutex::new(Config::default()),
    });
    LIVE_HANDLES.fetch_add(1, Ordering::SeqCst);
    // SAFETY: checked non-null above.
    unsafe { *handle = Box::into_raw(inst).cast() };
    0
}

fn instance<'a>(handle: LLMHandle) -> Option<&'a Instance> {
    // SAFETY: a non-null handle came from `rkllm_init` and is alive until `rkllm_destroy`.
    (!handle.is_null()).then(|| unsafe { &*(handle as *const Instance) })
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_destroy(handle: LLMHandle) -> c_int {
    if handle.is_null() {
        return -1;
    }
    // SAFETY: the handle came from `Box::into_raw` in `init`.
    drop(unsafe { Box::from_raw(handle as *mut Instance) });
    LIVE_HANDLES.fetch_sub(1, Ordering::SeqCst);
    0
}

/// Test-only export: handles not yet destroyed.
#[unsafe(no_mangle)]
pub extern "C" fn rkllm_test_double_live_handles() -> c_int {
    LIVE_HANDLES.load(Ordering::SeqCst) as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_abort(handle: LLMHandle) -> c_int {
    match instance(handle) {
        Some(inst) => {
            inst.abort.store(true, Ordering::SeqCst);
            0
        }
        None => -1,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_is_running(handle: LLMHandle) -> c_int {
    // The documented convention of the layout's header.
    match instance(handle) {
        Some(inst) if inst.running.load(Ordering::SeqCst) => layout::RUNNING,
        Some(_) => 1 - layout::RUNNING,
        None => -1,
    }
}

/// 1.2.0 clears the whole cache only.
#[cfg(feature = "abi-v1-2-0")]
#[unsafe(no_mangle)]
pub extern "C" fn rkllm_clear_kv_cache(handle: LLMHandle, keep_system: c_int) -> c_int {
    clear_kv_cache(handle, keep_system)
}

#[cfg(not(feature = "abi-v1-2-0"))]
#[unsafe(no_mangle)]
pub extern "C" fn rkllm_clear_kv_cache(
    handle: LLMHandle,
    keep_system: c_int,
    start: *mut c_int,
    end: *mut c_int,
) -> c_int {
    // Ranges are only valid after a paused run; rkmcp always clears the whole cache.
    if !start.is_null() || !end.is_null() {
        return -1;
    }
    clear_kv_cache(handle, keep_system)
}

fn clear_kv_cache(handle: LLMHandle, _keep_system: c_int) -> c_int {
    match instance(handle) {
        Some(inst) => {
            inst.cleared.fetch_add(1, Ordering::SeqCst);
            0
        }
        None => -1,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_set_chat_template(
    handle: LLMHandle,
    system: *const c_char,
    prefix: *const c_char,
    postfix: *const c_char,
) -> c_int {
    let Some(inst) = instance(handle) else {
        return -1;
    };
    let mut cfg = inst.config.lock().unwrap_or_else(|e| e.into_inner());
    cfg.template = Some((cstr(system), cstr(prefix), cstr(postfix)));
    0
}

/// Since 1.2.1: the 1.2.0 double does not export it, as the real 1.2.0 runtime does not.
#[cfg(not(feature = "abi-v1-2-0"))]
#[unsafe(no_mangle)]
pub extern "C" fn rkllm_set_function_tools(
    handle: LLMHandle,
    system: *const c_char,
    tools: *const c_char,
    tool_response: *const c_char,
) -> c_int {
    let Some(inst) = instance(handle) else {
        return -1;
    };
    let mut cfg = inst.config.lock().unwrap_or_else(|e| e.into_inner());
    // The known runtime behaviour: tools need a chat template, and an empty one disables them.
    if matches!(&cfg.template, Some((s, p, q)) if s.is_empty() && p.is_empty() && q.is_empty()) {
        return -1;
    }
    cfg.tools = Some((cstr(system), cstr(tools), cstr(tool_response)));
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_load_prompt_cache(handle: LLMHandle, path: *const c_char) -> c_int {
    if instance(handle).is_none() || !std::path::Path::new(&cstr(path)).is_file() {
        -1
    } else {
        0
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_release_prompt_cache(handle: LLMHandle) -> c_int {
    if instance(handle).is_none() { -1 } else { 0 }
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_load_lora(handle: LLMHandle, adapter: *mut RKLLMLoraAdapter) -> c_int {
    if instance(handle).is_none() || adapter.is_null() {
        return -1;
    }
    // SAFETY: checked non-null.
    let path = cstr(unsafe { (*adapter).lora_adapter_path });
    if std::path::Path::new(&path).is_file() {
        0
    } else {
        -1
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_run(
    handle: LLMHandle,
    input: *mut Input,
    infer: *mut InferParam,
    userdata: *mut c_void,
) -> c_int {
    let Some(inst) = instance(handle) else {
        return -1;
    };
    if input.is_null() || infer.is_null() {
        return -1;
    }
    if inst.running.swap(true, Ordering::SeqCst) {
        return -1; // one run at a time, as on the NPU
    }
    inst.abort.store(false, Ordering::SeqCst);
    // SAFETY: checked non-null; valid for the duration of this synchronous call.
    let request = unsafe { Request::read(&*input, &*infer) };
    let userdata = if userdata.is_null() {
        inst.default_userdata
    } else {
        userdata
    };
    let rc = play(inst, &request, userdata);
    inst.running.store(false, Ordering::SeqCst);
    rc
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_run_async(
    handle: LLMHandle,
    input: *mut Input,
    infer: *mut InferParam,
    userdata: *mut c_void,
) -> c_int {
    let Some(inst) = instance(handle) else {
        return -1;
    };
    if input.is_null() || infer.is_null() || inst.running.swap(true, Ordering::SeqCst) {
        return -1;
    }
    inst.abort.store(false, Ordering::SeqCst);
    // SAFETY: as in `rkllm_run`; the request is copied before this function returns.
    let request = unsafe { Request::read(&*input, &*infer) };
    let userdata = SendPtr(if userdata.is_null() {
        inst.default_userdata
    } else {
        userdata
    });
    let handle = SendPtr(handle);
    std::thread::spawn(move || {
        let (handle, userdata) = (handle, userdata);
        if let Some(inst) = instance(handle.0) {
            play(inst, &request, userdata.0);
            inst.running.store(false, Ordering::SeqCst);
        }
    });
    0
}

struct Request {
    role: String,
    thinking: bool,
    prompt: String,
    keep_history: c_int,
    max_new_tokens: Option<i32>,
}

impl Request {
    unsafe fn read(input: &Input, infer: &InferParam) -> Request {
        let prompt = if input.input_type == RKLLM_INPUT_PROMPT {
            // SAFETY: input_type says the union holds `prompt_input`.
            cstr(unsafe { input.__bindgen_anon_1.prompt_input })
        } else {
            String::new()
        };
        #[cfg(any(feature = "abi-v1-2-0", feature = "abi-v1-2-1"))]
        let max_new_tokens = None;
        #[cfg(not(any(feature = "abi-v1-2-0", feature = "abi-v1-2-1")))]
        let max_new_tokens = (infer.max_new_tokens > 0).then_some(infer.max_new_tokens);
        // 1.2.0 has no role and no thinking switch.
        #[cfg(feature = "abi-v1-2-0")]
        let (role, thinking) = (String::new(), false);
        #[cfg(not(feature = "abi-v1-2-0"))]
        let (role, thinking) = (cstr(input.role), input.enable_thinking);
        Request {
            role,
            thinking,
            prompt,
            keep_history: infer.keep_history,
            max_new_tokens,
        }
    }
}

fn emit(inst: &Instance, userdata: *mut c_void, bytes: &[u8], state: LLMCallState) {
    let text = CString::new(bytes).unwrap_or_default();
    let mut result = layout::Result {
        text: text.as_ptr(),
        token_id: 1,
        ..Default::default()
    };
    if state == RKLLM_RUN_FINISH {
        result.text = std::ptr::null();
    }
    // 1.2.0 has no performance statistics.
    #[cfg(not(feature = "abi-v1-2-0"))]
    if state == RKLLM_RUN_FINISH {
        result.perf = RKLLMPerfStat {
            prefill_time_ms: 12.5,
            prefill_tokens: 7,
            generate_time_ms: 40.0,
            generate_tokens: 4,
            memory_usage_mb: 321.0,
        };
    }
    if let Some(cb) = inst.callback {
        // SAFETY: rkmcp registered this callback with the userdata it expects. (The 1.2.0
        // callback returns nothing; later ones return an int this double ignores.)
        #[allow(clippy::let_unit_value)]
        let _ = unsafe { cb(&mut result, userdata, state) };
    }
}

fn play(inst: &Instance, req: &Request, userdata: *mut c_void) -> c_int {
    let directive = req.prompt.find("[[").and_then(|start| {
        let rest = &req.prompt[start + 2..];
        rest.find("]]").map(|end| rest[..end].to_string())
    });
    let normal = |s: &str| emit(inst, userdata, s.as_bytes(), RKLLM_RUN_NORMAL);
    match directive.as_deref() {
        Some("fail") => return -1,
        Some("utf8") => {
            // "é" (2 bytes), "€" (3 bytes), "😀" (4 bytes), "日本" (3+3), each split mid-character.
            let pieces: [(&[u8], LLMCallState); 10] = [
                (b"caf", RKLLM_RUN_NORMAL),
                (b"\xC3", RKLLM_RUN_WAITING),
                (b"\xA9 costs 5", RKLLM_RUN_NORMAL),
                (b"\xE2\x82", RKLLM_RUN_WAITING),
                (b"\xAC ", RKLLM_RUN_NORMAL),
                (b"\xF0", RKLLM_RUN_WAITING),
                (b"\x9F\x98", RKLLM_RUN_WAITING),
                (b"\x80 \xE6\x97", RKLLM_RUN_NORMAL),
                (b"\xA5\xE6\x9C", RKLLM_RUN_WAITING),
                (b"\xAC", RKLLM_RUN_NORMAL),
            ];
            for (bytes, state) in pieces {
                emit(inst, userdata, bytes, state);
            }
        }
        Some("echo") => {
            let cfg = inst.config.lock().unwrap_or_else(|e| e.into_inner());
            let tools = cfg
                .tools
                .as_ref()
                .map(|(s, t, r)| format!("system={s:?} tools={t} response={r:?}"));
            let template = cfg
                .template
                .as_ref()
                .map(|(s, p, q)| format!("{s:?}|{p:?}|{q:?}"));
            normal(&format!(
                "role={} thinking={} keep_history={} max_new_tokens={} run_max_new_tokens={:?} ctx={} temperature={} top_k={} cleared={} tools={:?} template={:?} prompt={:?}",
                req.role,
                req.thinking,
                req.keep_history,
                inst.max_new_tokens,
                req.max_new_tokens,
                inst.max_context_len,
                inst.temperature,
                inst.top_k,
                inst.cleared.load(Ordering::SeqCst),
                tools,
                template,
                req.prompt,
            ));
        }
        Some("error") => {
            normal("partial ");
            normal("answer");
            emit(inst, userdata, b"", RKLLM_RUN_ERROR);
            return 0;
        }
        Some("slow") => {
            let limit = req.max_new_tokens.unwrap_or(2000).min(2000);
            for i in 0..limit {
                if inst.abort.load(Ordering::SeqCst) {
                    break;
                }
                normal(&format!("t{i} "));
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        _ => {
            for piece in ["Hello", " from", " the", " RKLLM", " test", " double."] {
                normal(piece);
            }
        }
    }
    emit(inst, userdata, b"", RKLLM_RUN_FINISH);
    0
}
