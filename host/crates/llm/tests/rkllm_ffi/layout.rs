//! rkmcp's RKLLM bindings against the layouts of Rockchip's real headers.
//!
//! The FACTS below were taken from each release's own `rkllm.h` in the public rknn-llm repository
//! (`rkllm-runtime/Linux/librkllm_api/include/rkllm.h`), compiled with gcc for x86_64 and with
//! aarch64-linux-gnu-gcc (run under qemu) for aarch64: both LP64 targets gave identical numbers,
//! so one table serves both, and this test runs natively and under qemu (scripts/check.d/
//! 60-aarch64.sh). The upstream files are not in this repository; only these numbers are.
//!
//! | release | upstream commit (header)      | layout |
//! |---------|-------------------------------|--------|
//! | 1.2.0   | 33f17354 (early), 38b25876    | 1.2.0  |
//! | 1.2.1   | the `<stdint.h>` header       | 1.2.1  |
//! | 1.2.2   | no header change (changelog)  | 1.2.1  |
//! | 1.2.3   | no header change (changelog)  | 1.2.1  |
//! | 1.3.0   | 878f9361                      | 1.3.0  |
//!
//! Every struct rkmcp passes to or reads from the runtime is checked: size, alignment and the
//! offset of every field rkmcp declares. A layout mismatch here means a crash on a board.
use std::mem::{align_of, offset_of, size_of};

use rkmcp_llm::sys::*;

/// A struct's layout: size, alignment, and (field, offset) in declaration order.
#[derive(Debug, PartialEq)]
struct Layout {
    size: usize,
    align: usize,
    fields: Vec<(&'static str, usize)>,
}

/// The layout of a Rust binding; `field as "name"` renames (bindgen's anonymous union).
macro_rules! measured {
    ($t:ty { $($f:ident $(as $name:literal)?),* $(,)? }) => {
        Layout {
            size: size_of::<$t>(),
            align: align_of::<$t>(),
            fields: vec![$((measured!(@name $f $($name)?), offset_of!($t, $f))),*],
        }
    };
    (@name $f:ident $name:literal) => { $name };
    (@name $f:ident) => { stringify!($f) };
}

/// A fact from an upstream header.
fn fact(size: usize, align: usize, fields: &[(&'static str, usize)]) -> Layout {
    Layout {
        size,
        align,
        fields: fields.to_vec(),
    }
}

/// `RKLLMParam` up to the three image strings: identical in 1.2.0 and 1.2.1.
const PARAM_1_2: [(&str, usize); 19] = [
    ("model_path", 0),
    ("max_context_len", 8),
    ("max_new_tokens", 12),
    ("top_k", 16),
    ("n_keep", 20),
    ("top_p", 24),
    ("temperature", 28),
    ("repeat_penalty", 32),
    ("frequency_penalty", 36),
    ("presence_penalty", 40),
    ("mirostat", 44),
    ("mirostat_tau", 48),
    ("mirostat_eta", 52),
    ("skip_special_token", 56),
    ("is_async", 57),
    ("img_start", 64),
    ("img_end", 72),
    ("img_content", 80),
    ("extend_param", 88),
];

/// `RKLLMMultiModelInput` of 1.2.0–1.2.3 (the early 1.2.0 header: the first three fields, 24 bytes).
const MULTIMODAL_1_2: [(&str, usize); 6] = [
    ("prompt", 0),
    ("image_embed", 8),
    ("n_image_tokens", 16),
    ("n_image", 24),
    ("image_width", 32),
    ("image_height", 40),
];

/// `RKLLMInferParam` of 1.2.0–1.2.3.
const INFER_1_2: [(&str, usize); 4] = [
    ("mode", 0),
    ("lora_params", 8),
    ("prompt_cache_params", 16),
    ("keep_history", 24),
];

#[test]
fn layout_1_2_0_matches_release_1_2_0() {
    assert_eq!(
        measured!(RKLLMExtendParam_v1_2_0 {
            base_domain_id,
            embed_flash,
            enabled_cpus_num,
            enabled_cpus_mask,
            reserved
        }),
        fact(
            120,
            4,
            &[
                ("base_domain_id", 0),
                ("embed_flash", 4),
                ("enabled_cpus_num", 5),
                ("enabled_cpus_mask", 8),
                ("reserved", 12)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMParam_v1_2_0 {
            model_path,
            max_context_len,
            max_new_tokens,
            top_k,
            n_keep,
            top_p,
            temperature,
            repeat_penalty,
            frequency_penalty,
            presence_penalty,
            mirostat,
            mirostat_tau,
            mirostat_eta,
            skip_special_token,
            is_async,
            img_start,
            img_end,
            img_content,
            extend_param
        }),
        fact(208, 8, &PARAM_1_2)
    );
    assert_eq!(
        measured!(RKLLMMultiModalInput_v1_2_0 {
            prompt,
            image_embed,
            n_image_tokens,
            n_image,
            image_width,
            image_height
        }),
        fact(48, 8, &MULTIMODAL_1_2)
    );
    // The input type first, the union at 8 (56 bytes; 32 with the early header's smaller
    // multimodal member, whose prefix this is: rkmcp passes the larger struct).
    assert_eq!(
        measured!(RKLLMInput_v1_2_0 { input_type, __bindgen_anon_1 as "prompt_input" }),
        fact(56, 8, &[("input_type", 0), ("prompt_input", 8)])
    );
    assert_eq!(
        measured!(RKLLMInferParam_v1_2_0 {
            mode,
            lora_params,
            prompt_cache_params,
            keep_history
        }),
        fact(32, 8, &INFER_1_2)
    );
    // No perf block.
    assert_eq!(
        measured!(RKLLMResult_v1_2_0 {
            text,
            token_id,
            last_hidden_layer,
            logits
        }),
        fact(
            48,
            8,
            &[
                ("text", 0),
                ("token_id", 8),
                ("last_hidden_layer", 16),
                ("logits", 32)
            ]
        )
    );
}

#[test]
fn layout_1_2_1_matches_releases_1_2_1_to_1_2_3() {
    assert_eq!(
        measured!(RKLLMExtendParam {
            base_domain_id,
            embed_flash,
            enabled_cpus_num,
            enabled_cpus_mask,
            n_batch,
            use_cross_attn,
            reserved
        }),
        fact(
            120,
            4,
            &[
                ("base_domain_id", 0),
                ("embed_flash", 4),
                ("enabled_cpus_num", 5),
                ("enabled_cpus_mask", 8),
                ("n_batch", 12),
                ("use_cross_attn", 13),
                ("reserved", 14)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMParam_v1_2_1 {
            model_path,
            max_context_len,
            max_new_tokens,
            top_k,
            n_keep,
            top_p,
            temperature,
            repeat_penalty,
            frequency_penalty,
            presence_penalty,
            mirostat,
            mirostat_tau,
            mirostat_eta,
            skip_special_token,
            is_async,
            img_start,
            img_end,
            img_content,
            extend_param
        }),
        fact(208, 8, &PARAM_1_2)
    );
    assert_eq!(
        measured!(RKLLMInput_v1_2_1 { role, enable_thinking, input_type, __bindgen_anon_1 as "prompt_input" }),
        fact(
            64,
            8,
            &[
                ("role", 0),
                ("enable_thinking", 8),
                ("input_type", 12),
                ("prompt_input", 16)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMInferParam_v1_2_0 {
            mode,
            lora_params,
            prompt_cache_params,
            keep_history
        }),
        fact(32, 8, &INFER_1_2)
    );
    assert_eq!(
        measured!(RKLLMResult {
            text,
            token_id,
            last_hidden_layer,
            logits,
            perf
        }),
        fact(
            72,
            8,
            &[
                ("text", 0),
                ("token_id", 8),
                ("last_hidden_layer", 16),
                ("logits", 32),
                ("perf", 48)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMPerfStat {
            prefill_time_ms,
            prefill_tokens,
            generate_time_ms,
            generate_tokens,
            memory_usage_mb
        }),
        fact(
            20,
            4,
            &[
                ("prefill_time_ms", 0),
                ("prefill_tokens", 4),
                ("generate_time_ms", 8),
                ("generate_tokens", 12),
                ("memory_usage_mb", 16)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMCrossAttnParam {
            encoder_k_cache,
            encoder_v_cache,
            encoder_mask,
            encoder_pos,
            num_tokens
        }),
        fact(
            40,
            8,
            &[
                ("encoder_k_cache", 0),
                ("encoder_v_cache", 8),
                ("encoder_mask", 16),
                ("encoder_pos", 24),
                ("num_tokens", 32)
            ]
        )
    );
}

#[test]
fn layout_1_3_0_matches_release_1_3_0() {
    assert_eq!(
        measured!(RKLLMParam_v1_3_0 {
            model_path,
            max_context_len,
            max_new_tokens,
            top_k,
            n_keep,
            top_p,
            temperature,
            repeat_penalty,
            frequency_penalty,
            presence_penalty,
            mirostat,
            mirostat_tau,
            mirostat_eta,
            skip_special_token,
            ignore_eos_token,
            is_async,
            extend_param
        }),
        fact(
            184,
            8,
            &[
                ("model_path", 0),
                ("max_context_len", 8),
                ("max_new_tokens", 12),
                ("top_k", 16),
                ("n_keep", 20),
                ("top_p", 24),
                ("temperature", 28),
                ("repeat_penalty", 32),
                ("frequency_penalty", 36),
                ("presence_penalty", 40),
                ("mirostat", 44),
                ("mirostat_tau", 48),
                ("mirostat_eta", 52),
                ("skip_special_token", 56),
                ("ignore_eos_token", 57),
                ("is_async", 58),
                ("extend_param", 60),
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMImageInput_v1_3_0 {
            image_embed,
            n_image_tokens,
            n_image,
            image_start,
            image_end,
            image_content,
            image_width,
            image_height
        }),
        fact(
            64,
            8,
            &[
                ("image_embed", 0),
                ("n_image_tokens", 8),
                ("n_image", 16),
                ("image_start", 24),
                ("image_end", 32),
                ("image_content", 40),
                ("image_width", 48),
                ("image_height", 56)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMVideoInput_v1_3_0 {
            video_embed,
            n_frame_tokens,
            n_frame_per_video,
            n_video,
            video_start,
            video_end,
            video_content,
            frame_width,
            frame_height
        }),
        fact(
            72,
            8,
            &[
                ("video_embed", 0),
                ("n_frame_tokens", 8),
                ("n_frame_per_video", 16),
                ("n_video", 24),
                ("video_start", 32),
                ("video_end", 40),
                ("video_content", 48),
                ("frame_width", 56),
                ("frame_height", 64)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMMultiModalInput_v1_3_0 {
            prompt,
            image,
            video
        }),
        fact(144, 8, &[("prompt", 0), ("image", 8), ("video", 72)])
    );
    assert_eq!(
        measured!(RKLLMInput_v1_3_0 { role, enable_thinking, input_type, __bindgen_anon_1 as "prompt_input" }),
        fact(
            160,
            8,
            &[
                ("role", 0),
                ("enable_thinking", 8),
                ("input_type", 12),
                ("prompt_input", 16)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMSamplingParam {
            top_k,
            top_p,
            temperature,
            repeat_penalty,
            frequency_penalty,
            presence_penalty,
            mirostat,
            mirostat_tau,
            mirostat_eta
        }),
        fact(
            36,
            4,
            &[
                ("top_k", 0),
                ("top_p", 4),
                ("temperature", 8),
                ("repeat_penalty", 12),
                ("frequency_penalty", 16),
                ("presence_penalty", 20),
                ("mirostat", 24),
                ("mirostat_tau", 28),
                ("mirostat_eta", 32)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMInferParam_v1_3_0 {
            mode,
            lora_params,
            prompt_cache_params,
            sampling_params,
            keep_history,
            max_new_tokens
        }),
        fact(
            40,
            8,
            &[
                ("mode", 0),
                ("lora_params", 8),
                ("prompt_cache_params", 16),
                ("sampling_params", 24),
                ("keep_history", 32),
                ("max_new_tokens", 36)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMCallback {
            result_callback,
            result_userdata,
            tokenizer_callback,
            tokenizer_userdata,
            embed_callback,
            embed_userdata
        }),
        fact(
            48,
            8,
            &[
                ("result_callback", 0),
                ("result_userdata", 8),
                ("tokenizer_callback", 16),
                ("tokenizer_userdata", 24),
                ("embed_callback", 32),
                ("embed_userdata", 40)
            ]
        )
    );
    // Unchanged from 1.2.1 (the 1.3.0 header declares them identically).
    assert_eq!(size_of::<RKLLMExtendParam>(), 120);
    assert_eq!(size_of::<RKLLMResult>(), 72);
}

/// Identical in 1.2.0, 1.2.1 and 1.3.0.
#[test]
fn shared_structs_and_enums_match_every_release() {
    assert_eq!(
        measured!(RKLLMResultLastHiddenLayer {
            hidden_states,
            embd_size,
            num_tokens
        }),
        fact(
            16,
            8,
            &[("hidden_states", 0), ("embd_size", 8), ("num_tokens", 12)]
        )
    );
    assert_eq!(
        measured!(RKLLMResultLogits {
            logits,
            vocab_size,
            num_tokens
        }),
        fact(
            16,
            8,
            &[("logits", 0), ("vocab_size", 8), ("num_tokens", 12)]
        )
    );
    assert_eq!(
        measured!(RKLLMLoraAdapter {
            lora_adapter_path,
            lora_adapter_name,
            scale
        }),
        fact(
            24,
            8,
            &[
                ("lora_adapter_path", 0),
                ("lora_adapter_name", 8),
                ("scale", 16)
            ]
        )
    );
    assert_eq!(
        measured!(RKLLMEmbedInput { embed, n_tokens }),
        fact(16, 8, &[("embed", 0), ("n_tokens", 8)])
    );
    assert_eq!(
        measured!(RKLLMTokenInput {
            input_ids,
            n_tokens
        }),
        fact(16, 8, &[("input_ids", 0), ("n_tokens", 8)])
    );
    assert_eq!(
        measured!(RKLLMLoraParam { lora_adapter_name }),
        fact(8, 8, &[("lora_adapter_name", 0)])
    );
    assert_eq!(
        measured!(RKLLMPromptCacheParam {
            save_prompt_cache,
            prompt_cache_path
        }),
        fact(16, 8, &[("save_prompt_cache", 0), ("prompt_cache_path", 8)])
    );
    // C enums are 4 bytes on both targets; the values are the same in every release.
    assert_eq!(size_of::<LLMCallState>(), 4);
    assert_eq!(size_of::<RKLLMInputType>(), 4);
    assert_eq!(size_of::<RKLLMInferMode>(), 4);
    assert_eq!(
        [
            RKLLM_RUN_NORMAL,
            RKLLM_RUN_WAITING,
            RKLLM_RUN_FINISH,
            RKLLM_RUN_ERROR
        ],
        [0, 1, 2, 3]
    );
    assert_eq!(
        [
            RKLLM_INPUT_PROMPT,
            RKLLM_INPUT_TOKEN,
            RKLLM_INPUT_EMBED,
            RKLLM_INPUT_MULTIMODAL
        ],
        [0, 1, 2, 3]
    );
    assert_eq!(
        [
            RKLLM_INFER_GENERATE,
            RKLLM_INFER_GET_LAST_HIDDEN_LAYER,
            RKLLM_INFER_GET_LOGITS
        ],
        [0, 1, 2]
    );
    assert_eq!(size_of::<LLMHandle>(), 8);
}

/// Callback and function signatures, as types: this test does not compile if a binding drifts.
#[test]
fn callback_and_function_signatures_match_the_headers() {
    use std::ffi::{c_char, c_int, c_void};
    fn same<T>(_: Option<T>, _: Option<T>) {}
    // 1.2.0: typedef void (*LLMResultCallback)(RKLLMResult*, void*, LLMCallState).
    same::<unsafe extern "C" fn(*mut RKLLMResult_v1_2_0, *mut c_void, LLMCallState)>(
        LLMResultCallback_v1_2_0::None,
        None,
    );
    // 1.2.1 and 1.3.0: the same, returning int.
    same::<unsafe extern "C" fn(*mut RKLLMResult, *mut c_void, LLMCallState) -> c_int>(
        LLMResultCallback::None,
        None,
    );
    // 1.3.0's optional callbacks.
    same::<unsafe extern "C" fn(*mut c_void, *const c_char, i32, *mut i32, i32) -> c_int>(
        LLMTokenizerCallback::None,
        None,
    );
    same::<unsafe extern "C" fn(*mut c_void, *mut i32, u64, *mut c_void, u64) -> c_int>(
        LLMGetEmbedCallback::None,
        None,
    );
    // rkllm_init's third parameter: a callback pointer (1.2.x), a struct pointer (1.3.0).
    same::<
        unsafe extern "C" fn(
            *mut LLMHandle,
            *mut RKLLMParam_v1_2_0,
            LLMResultCallback_v1_2_0,
        ) -> c_int,
    >(rkllm_init_v1_2_0_fn::None, None);
    same::<unsafe extern "C" fn(*mut LLMHandle, *mut RKLLMParam_v1_2_1, LLMResultCallback) -> c_int>(
        rkllm_init_v1_2_1_fn::None,
        None,
    );
    same::<unsafe extern "C" fn(*mut LLMHandle, *mut RKLLMParam_v1_3_0, *mut RKLLMCallback) -> c_int>(
        rkllm_init_v1_3_0_fn::None,
        None,
    );
    // rkllm_clear_kv_cache: (handle, keep) in 1.2.0; (handle, keep, start, end) from 1.2.1.
    same::<unsafe extern "C" fn(LLMHandle, c_int) -> c_int>(
        rkllm_clear_kv_cache_v1_2_0_fn::None,
        None,
    );
    same::<unsafe extern "C" fn(LLMHandle, c_int, *mut c_int, *mut c_int) -> c_int>(
        rkllm_clear_kv_cache_fn::None,
        None,
    );
}
