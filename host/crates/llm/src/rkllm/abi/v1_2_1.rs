//! Layout 1.2.1 (releases 1.2.1, 1.2.2, 1.2.3): `RKLLMInput` leads with `role` and
//! `enable_thinking`, the result callback returns int and the result carries `perf`;
//! `rkllm_init` still takes one result-callback pointer and `RKLLMParam` the image markers.
use std::ffi::{c_int, c_void};

use super::{InitParams, ResultSink, RunInput, result_callback, sym};
use crate::sys;

type CreateDefault = unsafe extern "C" fn() -> sys::RKLLMParam_v1_2_1;
type Init = unsafe extern "C" fn(
    *mut sys::LLMHandle,
    *mut sys::RKLLMParam_v1_2_1,
    sys::LLMResultCallback,
) -> c_int;
type Run = unsafe extern "C" fn(
    sys::LLMHandle,
    *mut sys::RKLLMInput_v1_2_1,
    *mut sys::RKLLMInferParam_v1_2_0,
    *mut c_void,
) -> c_int;
type ClearKvCache = unsafe extern "C" fn(sys::LLMHandle, c_int, *mut c_int, *mut c_int) -> c_int;

pub(crate) struct Functions {
    create_default: CreateDefault,
    init: Init,
    run: Run,
    clear_kv_cache: Option<ClearKvCache>,
}

impl Functions {
    /// # Safety
    /// `lib` has layout 1.2.1.
    pub(super) unsafe fn resolve(lib: &libloading::Library) -> Result<Self, &'static str> {
        // SAFETY: the types are this layout's, per the caller.
        unsafe {
            Ok(Self {
                create_default: sym(lib, "rkllm_createDefaultParam")
                    .ok_or("rkllm_createDefaultParam")?,
                init: sym(lib, "rkllm_init").ok_or("rkllm_init")?,
                run: sym(lib, "rkllm_run").ok_or("rkllm_run")?,
                clear_kv_cache: sym(lib, "rkllm_clear_kv_cache"),
            })
        }
    }

    /// # Safety
    /// See [`super::Functions::init`].
    pub(super) unsafe fn init<S: ResultSink>(
        &self,
        params: &InitParams<'_>,
        handle: &mut sys::LLMHandle,
    ) -> c_int {
        // SAFETY: the defaults come from the library itself; `params` outlives the call.
        unsafe {
            let mut param = (self.create_default)();
            fill_param!(param, params);
            (self.init)(handle, &mut param, Some(result_callback::<S>))
        }
    }

    /// The token limit is the one given to `rkllm_init`: this layout has none per run.
    ///
    /// # Safety
    /// See [`super::Functions::run`].
    pub(super) unsafe fn run(
        &self,
        handle: sys::LLMHandle,
        input: &RunInput<'_>,
        userdata: *mut c_void,
    ) -> c_int {
        let mut rk_input = sys::RKLLMInput_v1_2_1 {
            role: input.role.as_ptr(),
            enable_thinking: input.enable_thinking,
            input_type: sys::RKLLM_INPUT_PROMPT,
            ..Default::default()
        };
        rk_input.__bindgen_anon_1.prompt_input = input.prompt.as_ptr();
        let mut infer = sys::RKLLMInferParam_v1_2_0 {
            mode: sys::RKLLM_INFER_GENERATE,
            keep_history: input.keep_history,
            ..Default::default()
        };
        // SAFETY: the structs and strings outlive the synchronous call.
        unsafe { (self.run)(handle, &mut rk_input, &mut infer, userdata) }
    }

    /// # Safety
    /// A live handle.
    pub(super) unsafe fn clear_kv_cache(
        &self,
        handle: sys::LLMHandle,
        keep: c_int,
    ) -> Option<c_int> {
        // SAFETY: per the caller; null positions mean "the whole cache".
        self.clear_kv_cache
            .map(|f| unsafe { f(handle, keep, std::ptr::null_mut(), std::ptr::null_mut()) })
    }
}
