/*
 * The C ABI of Rockchip's RKLLM runtime (librkllmrt.so), written for rkmcp from the public
 * rknn-llm releases' own rkllm.h (rkllm-runtime/Linux/librkllm_api/include/rkllm.h). No upstream
 * text is copied here; the layouts were compared field by field, and the layout facts of every
 * release (sizeof/offsetof on x86_64 and aarch64) are recorded in host/crates/llm/tests/rkllm_ffi/
 * layout.rs, which checks these declarations against them.
 *
 * rkmcp never links librkllmrt.so: it opens it at run time (dlopen) and looks each function up by
 * name. This header therefore declares function-pointer types (suffix `_fn`) instead of
 * prototypes, and it describes every supported layout side by side. A suffix names the FIRST
 * release with that layout; the comment on each type lists all releases that share it.
 *
 *   layout  releases            how rkmcp tells it (host/crates/llm/src/rkllm/abi.rs)
 *   1.2.0   1.2.0               version string 1.2.0; or no version string, rkllm_set_chat_template
 *                               but no rkllm_set_function_tools
 *   1.2.1   1.2.1, 1.2.2, 1.2.3 version string 1.2.1-1.2.3 (and rkllm_set_function_tools exported)
 *   1.3.0   1.3.0               version string 1.3.0
 *   -       1.0.x, 1.1.x        refused: other structs (no n_keep, no chat template API)
 *   -       anything else       refused until its header has been compared (1.2.1 changed the
 *                               layout in a patch release, so an unknown patch is not assumed safe)
 *
 * The 1.2.2 and 1.2.3 changelogs list no API change and the repository holds one header for
 * 1.2.1-1.2.3. An early 1.2.0 header had a 3-field multimodal input (RKLLMInput 32 bytes instead
 * of 56): every field rkmcp uses has the same offset, and rkmcp passes the larger struct.
 *
 * What changed in 1.2.1 (from 1.2.0):
 *   - RKLLMInput starts with `role` and `enable_thinking` (the input type moved from offset 0 to 12);
 *   - RKLLMResult gained `perf` (48 -> 72 bytes); the result callback returns int (0 continue,
 *     1 pause) instead of void;
 *   - RKLLMExtendParam: `n_batch` and `use_cross_attn` taken from the reserved bytes (same size);
 *   - rkllm_clear_kv_cache gained `start_pos`/`end_pos`; new rkllm_set_function_tools,
 *     rkllm_get_kv_cache_size, rkllm_set_cross_attn_params.
 * What changed in 1.3.0:
 *   - rkllm_init takes `RKLLMCallback*` (result, tokenizer and embedding callbacks, each with its
 *     own userdata) instead of one `LLMResultCallback` function pointer;
 *   - RKLLMParam gained `ignore_eos_token` and lost the image marker strings (`img_start`,
 *     `img_end`, `img_content`), which moved into the multimodal input (now image + video);
 *   - RKLLMInferParam gained per-call `sampling_params` and `max_new_tokens`;
 *   - rkllm_is_running is documented as returning 1 while a run is in progress (1.2.x: 0).
 *
 * No includes beyond the freestanding C headers, so the header parses for any target without a
 * sysroot (bindgen runs with -ffreestanding when cross-compiling).
 */
#ifndef RKMCP_RKLLM_H
#define RKMCP_RKLLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Identical in every supported layout (1.2.0 - 1.3.0) --------------------------------- */

typedef void *LLMHandle;

/* State passed to the result callback. WAITING means the runtime holds back bytes of an
 * incomplete UTF-8 sequence: the text of that call is not a complete character yet. */
typedef enum {
    RKLLM_RUN_NORMAL = 0,
    RKLLM_RUN_WAITING = 1,
    RKLLM_RUN_FINISH = 2,
    RKLLM_RUN_ERROR = 3,
} LLMCallState;

typedef enum {
    RKLLM_INPUT_PROMPT = 0,
    RKLLM_INPUT_TOKEN = 1,
    RKLLM_INPUT_EMBED = 2,
    RKLLM_INPUT_MULTIMODAL = 3,
} RKLLMInputType;

typedef enum {
    RKLLM_INFER_GENERATE = 0,
    RKLLM_INFER_GET_LAST_HIDDEN_LAYER = 1,
    RKLLM_INFER_GET_LOGITS = 2,
} RKLLMInferMode;

/* Return value of an int-returning result callback (1.2.1 and later; 2 is documented from 1.3.0). */
enum {
    RKLLM_CALLBACK_CONTINUE = 0,
    RKLLM_CALLBACK_PAUSE = 1,
    RKLLM_CALLBACK_RELEASE = 2,
};

typedef struct {
    const char *lora_adapter_path;
    const char *lora_adapter_name;
    float scale;
} RKLLMLoraAdapter;

typedef struct {
    float *embed;
    size_t n_tokens;
} RKLLMEmbedInput;

typedef struct {
    int32_t *input_ids;
    size_t n_tokens;
} RKLLMTokenInput;

typedef struct {
    const char *lora_adapter_name;
} RKLLMLoraParam;

typedef struct {
    int save_prompt_cache;
    const char *prompt_cache_path;
} RKLLMPromptCacheParam;

typedef struct {
    const float *hidden_states;
    int embd_size;
    int num_tokens;
} RKLLMResultLastHiddenLayer;

typedef struct {
    const float *logits;
    int vocab_size;
    int num_tokens;
} RKLLMResultLogits;

/* ---- Layout 1.2.0 (release 1.2.0) ---------------------------------------------------------- */

/* Release 1.2.0. (1.2.1 named two of the reserved bytes; see RKLLMExtendParam.) */
typedef struct {
    int32_t base_domain_id;
    int8_t embed_flash;
    int8_t enabled_cpus_num;
    uint32_t enabled_cpus_mask;
    uint8_t reserved[106];
} RKLLMExtendParam_v1_2_0;

/* Release 1.2.0. */
typedef struct {
    const char *model_path;
    int32_t max_context_len;
    int32_t max_new_tokens;
    int32_t top_k;
    int32_t n_keep;
    float top_p;
    float temperature;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int32_t mirostat;
    float mirostat_tau;
    float mirostat_eta;
    bool skip_special_token;
    bool is_async;
    const char *img_start;
    const char *img_end;
    const char *img_content;
    RKLLMExtendParam_v1_2_0 extend_param;
} RKLLMParam_v1_2_0;

/* Releases 1.2.0 - 1.2.3 (upstream name RKLLMMultiModelInput). The early 1.2.0 header had only
 * the first three fields. */
typedef struct {
    char *prompt;
    float *image_embed;
    size_t n_image_tokens;
    size_t n_image;
    size_t image_width;
    size_t image_height;
} RKLLMMultiModalInput_v1_2_0;

/* Release 1.2.0: no role, no thinking switch; the input type is the first field. */
typedef struct {
    RKLLMInputType input_type;
    union {
        const char *prompt_input;
        RKLLMEmbedInput embed_input;
        RKLLMTokenInput token_input;
        RKLLMMultiModalInput_v1_2_0 multimodal_input;
    };
} RKLLMInput_v1_2_0;

/* Releases 1.2.0 - 1.2.3. */
typedef struct {
    RKLLMInferMode mode;
    RKLLMLoraParam *lora_params;
    RKLLMPromptCacheParam *prompt_cache_params;
    int keep_history;
} RKLLMInferParam_v1_2_0;

/* Release 1.2.0: no performance statistics. */
typedef struct {
    const char *text;
    int32_t token_id;
    RKLLMResultLastHiddenLayer last_hidden_layer;
    RKLLMResultLogits logits;
} RKLLMResult_v1_2_0;

/* Release 1.2.0: the result callback returns nothing. */
typedef void (*LLMResultCallback_v1_2_0)(RKLLMResult_v1_2_0 *result, void *userdata, LLMCallState state);

/* ---- Shared by layouts 1.2.1 and 1.3.0 (releases 1.2.1 - 1.3.0) --------------------------- */

typedef struct {
    int32_t base_domain_id;
    int8_t embed_flash;
    int8_t enabled_cpus_num;
    uint32_t enabled_cpus_mask;
    uint8_t n_batch;
    int8_t use_cross_attn;
    uint8_t reserved[104];
} RKLLMExtendParam;

typedef struct {
    float *encoder_k_cache;
    float *encoder_v_cache;
    float *encoder_mask;
    int32_t *encoder_pos;
    int num_tokens;
} RKLLMCrossAttnParam;

typedef struct {
    float prefill_time_ms;
    int prefill_tokens;
    float generate_time_ms;
    int generate_tokens;
    float memory_usage_mb;
} RKLLMPerfStat;

typedef struct {
    const char *text;
    int32_t token_id;
    RKLLMResultLastHiddenLayer last_hidden_layer;
    RKLLMResultLogits logits;
    RKLLMPerfStat perf;
} RKLLMResult;

/* Returns one of RKLLM_CALLBACK_*. */
typedef int (*LLMResultCallback)(RKLLMResult *result, void *userdata, LLMCallState state);

/* ---- Layout 1.2.1 (releases 1.2.1, 1.2.2, 1.2.3) ------------------------------------------ */

typedef struct {
    const char *model_path;
    int32_t max_context_len;
    int32_t max_new_tokens;
    int32_t top_k;
    int32_t n_keep;
    float top_p;
    float temperature;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int32_t mirostat;
    float mirostat_tau;
    float mirostat_eta;
    bool skip_special_token;
    bool is_async;
    const char *img_start;
    const char *img_end;
    const char *img_content;
    RKLLMExtendParam extend_param;
} RKLLMParam_v1_2_1;

typedef struct {
    const char *role;
    bool enable_thinking;
    RKLLMInputType input_type;
    union {
        const char *prompt_input;
        RKLLMEmbedInput embed_input;
        RKLLMTokenInput token_input;
        RKLLMMultiModalInput_v1_2_0 multimodal_input;
    };
} RKLLMInput_v1_2_1;

/* ---- Layout 1.3.0 (release 1.3.0) --------------------------------------------------------- */

typedef int (*LLMGetEmbedCallback)(void *userdata, int32_t *tokens, uint64_t num_tokens, void *embed,
                                   uint64_t len);
typedef int (*LLMTokenizerCallback)(void *userdata, const char *text, int32_t text_len, int32_t *tokens,
                                    int32_t n_tokens_max);

typedef struct {
    LLMResultCallback result_callback;
    void *result_userdata;
    LLMTokenizerCallback tokenizer_callback;
    void *tokenizer_userdata;
    LLMGetEmbedCallback embed_callback;
    void *embed_userdata;
} RKLLMCallback;

typedef struct {
    const char *model_path;
    int32_t max_context_len;
    int32_t max_new_tokens;
    int32_t top_k;
    int32_t n_keep;
    float top_p;
    float temperature;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int32_t mirostat;
    float mirostat_tau;
    float mirostat_eta;
    bool skip_special_token;
    bool ignore_eos_token;
    bool is_async;
    RKLLMExtendParam extend_param;
} RKLLMParam_v1_3_0;

/* Upstream: the anonymous struct `image` of RKLLMMultiModalInput. */
typedef struct {
    float *image_embed;
    size_t n_image_tokens;
    size_t n_image;
    const char *image_start;
    const char *image_end;
    const char *image_content;
    size_t image_width;
    size_t image_height;
} RKLLMImageInput_v1_3_0;

/* Upstream: the anonymous struct `video` of RKLLMMultiModalInput. */
typedef struct {
    float *video_embed;
    size_t n_frame_tokens;
    size_t n_frame_per_video;
    size_t n_video;
    const char *video_start;
    const char *video_end;
    const char *video_content;
    size_t frame_width;
    size_t frame_height;
} RKLLMVideoInput_v1_3_0;

typedef struct {
    char *prompt;
    RKLLMImageInput_v1_3_0 image;
    RKLLMVideoInput_v1_3_0 video;
} RKLLMMultiModalInput_v1_3_0;

typedef struct {
    const char *role;
    bool enable_thinking;
    RKLLMInputType input_type;
    union {
        const char *prompt_input;
        RKLLMEmbedInput embed_input;
        RKLLMTokenInput token_input;
        RKLLMMultiModalInput_v1_3_0 multimodal_input;
    };
} RKLLMInput_v1_3_0;

typedef struct {
    int32_t top_k;
    float top_p;
    float temperature;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int32_t mirostat;
    float mirostat_tau;
    float mirostat_eta;
} RKLLMSamplingParam;

typedef struct {
    RKLLMInferMode mode;
    RKLLMLoraParam *lora_params;
    RKLLMPromptCacheParam *prompt_cache_params;
    RKLLMSamplingParam *sampling_params;
    int keep_history;
    int32_t max_new_tokens;
} RKLLMInferParam_v1_3_0;

/* ---- Functions (looked up by name at run time) -------------------------------------------- */

typedef RKLLMParam_v1_2_0 (*rkllm_createDefaultParam_v1_2_0_fn)(void);
typedef RKLLMParam_v1_2_1 (*rkllm_createDefaultParam_v1_2_1_fn)(void);
typedef RKLLMParam_v1_3_0 (*rkllm_createDefaultParam_v1_3_0_fn)(void);
typedef int (*rkllm_init_v1_2_0_fn)(LLMHandle *handle, RKLLMParam_v1_2_0 *param, LLMResultCallback_v1_2_0 callback);
typedef int (*rkllm_init_v1_2_1_fn)(LLMHandle *handle, RKLLMParam_v1_2_1 *param, LLMResultCallback callback);
typedef int (*rkllm_init_v1_3_0_fn)(LLMHandle *handle, RKLLMParam_v1_3_0 *param, RKLLMCallback *callback);
typedef int (*rkllm_run_v1_2_0_fn)(LLMHandle handle, RKLLMInput_v1_2_0 *input, RKLLMInferParam_v1_2_0 *infer_params,
                                   void *userdata);
typedef int (*rkllm_run_v1_2_1_fn)(LLMHandle handle, RKLLMInput_v1_2_1 *input, RKLLMInferParam_v1_2_0 *infer_params,
                                   void *userdata);
typedef int (*rkllm_run_v1_3_0_fn)(LLMHandle handle, RKLLMInput_v1_3_0 *input, RKLLMInferParam_v1_3_0 *infer_params,
                                   void *userdata);
/* rkllm_run_async has the same signature as rkllm_run in each layout. */
typedef rkllm_run_v1_2_0_fn rkllm_run_async_v1_2_0_fn;
typedef rkllm_run_v1_2_1_fn rkllm_run_async_v1_2_1_fn;
typedef rkllm_run_v1_3_0_fn rkllm_run_async_v1_3_0_fn;
/* 1.2.0 clears the whole cache only. */
typedef int (*rkllm_clear_kv_cache_v1_2_0_fn)(LLMHandle handle, int keep_system_prompt);
/* 1.2.1 - 1.3.0: null positions clear the whole cache. */
typedef int (*rkllm_clear_kv_cache_fn)(LLMHandle handle, int keep_system_prompt, int *start_pos, int *end_pos);

/* Identical in every supported layout. */
typedef int (*rkllm_load_lora_fn)(LLMHandle handle, RKLLMLoraAdapter *lora_adapter);
typedef int (*rkllm_load_prompt_cache_fn)(LLMHandle handle, const char *prompt_cache_path);
typedef int (*rkllm_release_prompt_cache_fn)(LLMHandle handle);
typedef int (*rkllm_destroy_fn)(LLMHandle handle);
typedef int (*rkllm_abort_fn)(LLMHandle handle);
typedef int (*rkllm_is_running_fn)(LLMHandle handle);
typedef int (*rkllm_set_chat_template_fn)(LLMHandle handle, const char *system_prompt, const char *prompt_prefix,
                                          const char *prompt_postfix);

/* Since 1.2.1. */
typedef int (*rkllm_get_kv_cache_size_fn)(LLMHandle handle, int *cache_sizes);
typedef int (*rkllm_set_function_tools_fn)(LLMHandle handle, const char *system_prompt, const char *tools,
                                           const char *tool_response_str);
typedef int (*rkllm_set_cross_attn_params_fn)(LLMHandle handle, RKLLMCrossAttnParam *cross_attn_params);

#ifdef __cplusplus
}
#endif

#endif /* RKMCP_RKLLM_H */
