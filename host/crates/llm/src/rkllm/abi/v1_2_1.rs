//! Layout 1.2.1 (releases 1.2.1, 1.2.2, 1.2.3): `RKLLMInput` leads with `role` and
//! `enable_thinking`, the result callback returns int and the result carries `perf`;
//! `rkllm_init` still takes one result-callback pointer and `RKLLMParam` the image markers.
use std::ffi::c_int;

use super::v1_2_0::V1_2_0;
use super::{InitParams, KeepAlive, Layout, ResultSink, RunInput, result_callback};
use crate::sys;

pub(crate) enum V1_2_1 {}

impl Layout for V1_2_1 {
    type Param = sys::RKLLMParam_v1_2_1;
    type Callback = sys::LLMResultCallback;
    type Input = sys::RKLLMInput_v1_2_1;
    type Infer = <V1_2_0 as Layout>::Infer;
    type ClearKvCache =
        unsafe extern "C" fn(sys::LLMHandle, c_int, *mut c_int, *mut c_int) -> c_int;

    fn fill(param: &mut Self::Param, params: &InitParams<'_>) {
        fill_param!(*param, params);
    }

    fn callback<S: ResultSink>() -> (Self::Callback, KeepAlive) {
        (Some(result_callback::<S>), None)
    }

    fn input(input: &RunInput<'_>) -> Self::Input {
        let mut rk_input = sys::RKLLMInput_v1_2_1 {
            role: input.role.as_ptr(),
            enable_thinking: input.enable_thinking,
            input_type: sys::RKLLM_INPUT_PROMPT,
            ..Default::default()
        };
        rk_input.__bindgen_anon_1.prompt_input = input.prompt.as_ptr();
        rk_input
    }

    /// The token limit is the one given to `rkllm_init`: this layout has none per run.
    fn infer(input: &RunInput<'_>) -> Self::Infer {
        V1_2_0::infer(input)
    }

    unsafe fn clear(f: Self::ClearKvCache, handle: sys::LLMHandle, keep: c_int) -> c_int {
        // SAFETY: per the caller; null positions mean "the whole cache".
        unsafe { f(handle, keep, std::ptr::null_mut(), std::ptr::null_mut()) }
    }
}
