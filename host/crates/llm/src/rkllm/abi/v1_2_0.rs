//! Layout 1.2.0 (release 1.2.0): `rkllm_init` takes a result callback that returns nothing,
//! `RKLLMInput` starts with the input type (no role, no thinking switch), `RKLLMResult` has no
//! performance statistics, and `rkllm_clear_kv_cache` takes no positions.
use std::ffi::{c_int, c_void};

use super::{InitParams, KeepAlive, Layout, ResultSink, ResultView, RunInput, text_bytes};
use crate::sys;

pub(crate) enum V1_2_0 {}

impl Layout for V1_2_0 {
    type Param = sys::RKLLMParam_v1_2_0;
    type Callback = sys::LLMResultCallback_v1_2_0;
    type Input = sys::RKLLMInput_v1_2_0;
    type Infer = sys::RKLLMInferParam_v1_2_0;
    type ClearKvCache = unsafe extern "C" fn(sys::LLMHandle, c_int) -> c_int;

    fn fill(param: &mut Self::Param, params: &InitParams<'_>) {
        fill_param!(*param, params);
    }

    fn callback<S: ResultSink>() -> (Self::Callback, KeepAlive) {
        (Some(result_callback::<S>), None)
    }

    /// The role and the thinking switch do not exist here: the runtime's chat template wraps the
    /// prompt as a user turn.
    fn input(input: &RunInput<'_>) -> Self::Input {
        let mut rk_input = sys::RKLLMInput_v1_2_0 {
            input_type: sys::RKLLM_INPUT_PROMPT,
            ..Default::default()
        };
        rk_input.__bindgen_anon_1.prompt_input = input.prompt.as_ptr();
        rk_input
    }

    fn infer(input: &RunInput<'_>) -> Self::Infer {
        sys::RKLLMInferParam_v1_2_0 {
            mode: sys::RKLLM_INFER_GENERATE,
            keep_history: input.keep_history,
            ..Default::default()
        }
    }

    unsafe fn clear(f: Self::ClearKvCache, handle: sys::LLMHandle, keep: c_int) -> c_int {
        // SAFETY: per the caller.
        unsafe { f(handle, keep) }
    }
}

unsafe extern "C" fn result_callback<S: ResultSink>(
    result: *mut sys::RKLLMResult_v1_2_0,
    userdata: *mut c_void,
    state: sys::LLMCallState,
) {
    // SAFETY: the runtime passes a valid result (or null) for the duration of the call.
    let view = unsafe { result.as_ref() }.map(|r| ResultView {
        // SAFETY: `text` is owned by the runtime during the call.
        text: unsafe { text_bytes(r.text) },
        perf: None,
    });
    // SAFETY: userdata is what rkmcp passed to rkllm_run.
    unsafe { S::on_result(userdata, view, state) };
}
