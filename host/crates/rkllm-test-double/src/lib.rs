//! TEST DOUBLE of Rockchip's `librkllmrt.so`. It is NOT an LLM runtime.
//!
//! It exports the RKLLM C API (the subset rkmcp uses) with the exact struct layouts of
//! `host/crates/llm/rkllm/rkllm.h`, so rkmcp's whole FFI path — `dlopen`, symbol lookup, ABI
//! detection, `rkllm_init`, `rkllm_run`, result callbacks from a runtime thread, `rkllm_abort`,
//! `rkllm_destroy` — runs in CI on machines without an NPU. Build it with the default features for
//! the 1.3 ABI (`RKLLMCallback` struct) or with `--features abi-v1-2` for the 1.2 ABI (one
//! result-callback pointer). The artifact is `librkllmrt_test_double.so`.
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

#[cfg(feature = "abi-v1-2")]
type Param = RKLLMParam_v1_2;
#[cfg(not(feature = "abi-v1-2"))]
type Param = RKLLMParam_v1_3;
#[cfg(feature = "abi-v1-2")]
type Input = RKLLMInput_v1_2;
#[cfg(not(feature = "abi-v1-2"))]
type Input = RKLLMInput_v1_3;
#[cfg(feature = "abi-v1-2")]
type InferParam = RKLLMInferParam_v1_2;
#[cfg(not(feature = "abi-v1-2"))]
type InferParam = RKLLMInferParam_v1_3;

/// What rkmcp's ABI detection looks for; the real runtime prints the same words at start-up.
#[cfg(feature = "abi-v1-2")]
#[used]
#[unsafe(no_mangle)]
pub static RKLLM_TEST_DOUBLE_VERSION: [u8; 44] = *b"rkllm-runtime version: 1.2.1 (TEST DOUBLE)\0\0";
#[cfg(not(feature = "abi-v1-2"))]
#[used]
#[unsafe(no_mangle)]
pub static RKLLM_TEST_DOUBLE_VERSION: [u8; 44] = *b"rkllm-runtime version: 1.3.0 (TEST DOUBLE)\0\0";

/// Handles created and not yet destroyed, so tests can check that rkmcp destroys what it creates.
static LIVE_HANDLES: AtomicUsize = AtomicUsize::new(0);

struct Instance {
    callback: LLMResultCallback,
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

#[cfg(feature = "abi-v1-2")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rkllm_init(
    handle: *mut LLMHandle,
    param: *mut Param,
    callback: LLMResultCallback,
) -> c_int {
    unsafe { init(handle, param, callback, std::ptr::null_mut()) }
}

#[cfg(not(feature = "abi-v1-2"))]
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
    callback: LLMResultCallback,
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
    // The documented convention: 0 while a run is in progress, non-zero otherwise.
    match instance(handle) {
        Some(inst) if inst.running.load(Ordering::SeqCst) => 0,
        Some(_) => 1,
        None => -1,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rkllm_clear_kv_cache(
    handle: LLMHandle,
    _keep_system: c_int,
    _start: *mut c_int,
    _end: *mut c_int,
) -> c_int {
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
        #[cfg(feature = "abi-v1-2")]
        let max_new_tokens = None;
        #[cfg(not(feature = "abi-v1-2"))]
        let max_new_tokens = (infer.max_new_tokens > 0).then_some(infer.max_new_tokens);
        Request {
            role: cstr(input.role),
            thinking: input.enable_thinking,
            prompt,
            keep_history: infer.keep_history,
            max_new_tokens,
        }
    }
}

fn emit(inst: &Instance, userdata: *mut c_void, bytes: &[u8], state: LLMCallState) {
    let text = CString::new(bytes).unwrap_or_default();
    let mut result = RKLLMResult {
        text: text.as_ptr(),
        token_id: 1,
        ..Default::default()
    };
    if state == RKLLM_RUN_FINISH {
        result.text = std::ptr::null();
        result.perf = RKLLMPerfStat {
            prefill_time_ms: 12.5,
            prefill_tokens: 7,
            generate_time_ms: 40.0,
            generate_tokens: 4,
            memory_usage_mb: 321.0,
        };
    }
    if let Some(cb) = inst.callback {
        // SAFETY: rkmcp registered this callback with the userdata it expects.
        unsafe { cb(&mut result, userdata, state) };
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
