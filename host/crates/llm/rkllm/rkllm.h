/*
 * The C ABI of Rockchip's RKLLM runtime (librkllmrt.so), written for rkmcp from the documented
 * API of the public rknn-llm releases 1.2.x and 1.3.x.
 *
 * rkmcp never links librkllmrt.so: it opens it at run time (dlopen) and looks each function up by
 * name. This header therefore declares function-pointer types (suffix `_fn`) instead of
 * prototypes, and it describes BOTH ABIs side by side:
 *
 *   - types that are identical in 1.2 and 1.3 have their upstream names;
 *   - types whose layout changed carry a suffix, `_v1_2` or `_v1_3`;
 *   - functions whose signature changed have one pointer type per version.
 *
 * What changed in 1.3.0:
 *   - rkllm_init takes `RKLLMCallback*` (result, tokenizer and embedding callbacks, each with its
 *     own userdata) instead of one `LLMResultCallback` function pointer;
 *   - RKLLMParam gained `ignore_eos_token` and lost the image marker strings (`img_start`,
 *     `img_end`, `img_content`), which moved into the multimodal input;
 *   - RKLLMInferParam gained per-call `sampling_params` and `max_new_tokens`.
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

/* ---- Shared by 1.2 and 1.3 ---------------------------------------------------------------- */

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

/* Return value of a result callback. */
enum {
    RKLLM_CALLBACK_CONTINUE = 0,
    RKLLM_CALLBACK_PAUSE = 1,
    RKLLM_CALLBACK_RELEASE = 2,
};

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
    float *encoder_k_cache;
    float *encoder_v_cache;
    float *encoder_mask;
    int32_t *encoder_pos;
    int num_tokens;
} RKLLMCrossAttnParam;

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

/* ---- 1.2.x -------------------------------------------------------------------------------- */

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
} RKLLMParam_v1_2;

typedef struct {
    char *prompt;
    float *image_embed;
    size_t n_image_tokens;
    size_t n_image;
    size_t image_width;
    size_t image_height;
} RKLLMMultiModalInput_v1_2;

typedef struct {
    const char *role;
    bool enable_thinking;
    RKLLMInputType input_type;
    union {
        const char *prompt_input;
        RKLLMEmbedInput embed_input;
        RKLLMTokenInput token_input;
        RKLLMMultiModalInput_v1_2 multimodal_input;
    };
} RKLLMInput_v1_2;

typedef struct {
    RKLLMInferMode mode;
    RKLLMLoraParam *lora_params;
    RKLLMPromptCacheParam *prompt_cache_params;
    int keep_history;
} RKLLMInferParam_v1_2;

/* ---- 1.3.x -------------------------------------------------------------------------------- */

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
} RKLLMParam_v1_3;

typedef struct {
    float *image_embed;
    size_t n_image_tokens;
    size_t n_image;
    const char *image_start;
    const char *image_end;
    const char *image_content;
    size_t image_width;
    size_t image_height;
} RKLLMImageInput_v1_3;

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
} RKLLMVideoInput_v1_3;

typedef struct {
    char *prompt;
    RKLLMImageInput_v1_3 image;
    RKLLMVideoInput_v1_3 video;
} RKLLMMultiModalInput_v1_3;

typedef struct {
    const char *role;
    bool enable_thinking;
    RKLLMInputType input_type;
    union {
        const char *prompt_input;
        RKLLMEmbedInput embed_input;
        RKLLMTokenInput token_input;
        RKLLMMultiModalInput_v1_3 multimodal_input;
    };
} RKLLMInput_v1_3;

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
} RKLLMInferParam_v1_3;

/* ---- Functions (looked up by name at run time) -------------------------------------------- */

typedef RKLLMParam_v1_2 (*rkllm_createDefaultParam_v1_2_fn)(void);
typedef RKLLMParam_v1_3 (*rkllm_createDefaultParam_v1_3_fn)(void);
typedef int (*rkllm_init_v1_2_fn)(LLMHandle *handle, RKLLMParam_v1_2 *param, LLMResultCallback callback);
typedef int (*rkllm_init_v1_3_fn)(LLMHandle *handle, RKLLMParam_v1_3 *param, RKLLMCallback *callback);
typedef int (*rkllm_run_v1_2_fn)(LLMHandle handle, RKLLMInput_v1_2 *input, RKLLMInferParam_v1_2 *infer_params,
                                 void *userdata);
typedef int (*rkllm_run_v1_3_fn)(LLMHandle handle, RKLLMInput_v1_3 *input, RKLLMInferParam_v1_3 *infer_params,
                                 void *userdata);
/* rkllm_run_async has the same signature as rkllm_run in each version. */
typedef rkllm_run_v1_2_fn rkllm_run_async_v1_2_fn;
typedef rkllm_run_v1_3_fn rkllm_run_async_v1_3_fn;

/* Unchanged between 1.2 and 1.3. */
typedef int (*rkllm_load_lora_fn)(LLMHandle handle, RKLLMLoraAdapter *lora_adapter);
typedef int (*rkllm_load_prompt_cache_fn)(LLMHandle handle, const char *prompt_cache_path);
typedef int (*rkllm_release_prompt_cache_fn)(LLMHandle handle);
typedef int (*rkllm_destroy_fn)(LLMHandle handle);
typedef int (*rkllm_abort_fn)(LLMHandle handle);
typedef int (*rkllm_is_running_fn)(LLMHandle handle);
typedef int (*rkllm_clear_kv_cache_fn)(LLMHandle handle, int keep_system_prompt, int *start_pos, int *end_pos);
typedef int (*rkllm_get_kv_cache_size_fn)(LLMHandle handle, int *cache_sizes);
typedef int (*rkllm_set_chat_template_fn)(LLMHandle handle, const char *system_prompt, const char *prompt_prefix,
                                          const char *prompt_postfix);
typedef int (*rkllm_set_function_tools_fn)(LLMHandle handle, const char *system_prompt, const char *tools,
                                           const char *tool_response_str);
typedef int (*rkllm_set_cross_attn_params_fn)(LLMHandle handle, RKLLMCrossAttnParam *cross_attn_params);

#ifdef __cplusplus
}
#endif

#endif /* RKMCP_RKLLM_H */
