//! Layout 1.3.0 (release 1.3.0): `rkllm_init` takes an `RKLLMCallback` struct, `RKLLMParam`
//! gained `ignore_eos_token` and lost the image markers, `RKLLMInferParam` has a per-run token
//! limit and sampling override, and the multimodal input has image and video parts.
use std::ffi::c_int;

use super::v1_2_1::V1_2_1;
use super::{InitParams, KeepAlive, Layout, ResultSink, RunInput, result_callback};
use crate::sys;

pub(crate) enum V1_3_0 {}

impl Layout for V1_3_0 {
    type Param = sys::RKLLMParam_v1_3_0;
    type Callback = *mut sys::RKLLMCallback;
    type Input = sys::RKLLMInput_v1_3_0;
    type Infer = sys::RKLLMInferParam_v1_3_0;
    type ClearKvCache = <V1_2_1 as Layout>::ClearKvCache;

    fn fill(param: &mut Self::Param, params: &InitParams<'_>) {
        fill_param!(*param, params);
    }

    /// The runtime may keep the `RKLLMCallback` pointer: the struct is boxed, to live as long as
    /// the handle (moving the box does not move the struct).
    fn callback<S: ResultSink>() -> (Self::Callback, KeepAlive) {
        let mut callbacks = Box::new(sys::RKLLMCallback {
            result_callback: Some(result_callback::<S>),
            ..Default::default()
        });
        let ptr: *mut sys::RKLLMCallback = &mut *callbacks;
        (ptr, Some(callbacks))
    }

    fn input(input: &RunInput<'_>) -> Self::Input {
        let mut rk_input = sys::RKLLMInput_v1_3_0 {
            role: input.role.as_ptr(),
            enable_thinking: input.enable_thinking,
            input_type: sys::RKLLM_INPUT_PROMPT,
            ..Default::default()
        };
        rk_input.__bindgen_anon_1.prompt_input = input.prompt.as_ptr();
        rk_input
    }

    fn infer(input: &RunInput<'_>) -> Self::Infer {
        sys::RKLLMInferParam_v1_3_0 {
            mode: sys::RKLLM_INFER_GENERATE,
            keep_history: input.keep_history,
            max_new_tokens: input.max_new_tokens,
            ..Default::default()
        }
    }

    unsafe fn clear(f: Self::ClearKvCache, handle: sys::LLMHandle, keep: c_int) -> c_int {
        // SAFETY: per the caller.
        unsafe { V1_2_1::clear(f, handle, keep) }
    }
}
