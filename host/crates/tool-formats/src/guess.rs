//! Guessing the tool-call format from a chat template and/or model name. The markers live with
//! each format (`formats::*::FORMAT.hints`); their ranks order them across formats.

use crate::ToolFormat;

/// The first (lowest-ranked) format whose marker `hit` accepts, among the markers `pick` takes
/// from each format's hints.
fn best(
    pick: impl Fn(&crate::formats::Hints) -> &'static [(&'static str, u16)],
    hit: impl Fn(&str) -> bool,
) -> Option<ToolFormat> {
    ToolFormat::all()
        .iter()
        .flat_map(|f| pick(&f.spec().hints).iter().map(move |(m, r)| (*r, *f, *m)))
        .filter(|(_, _, m)| hit(m))
        .min_by_key(|(r, _, _)| *r)
        .map(|(_, f, _)| f)
}

pub(crate) fn guess(chat_template: Option<&str>, model_name: Option<&str>) -> ToolFormat {
    if let Some(f) = guess_matched(chat_template, model_name) {
        return f;
    }
    if let Some(t) = chat_template
        && let Some(f) = best(|h| h.family, |m| t.contains(m))
    {
        return f;
    }
    ToolFormat::ToolCallJson
}

/// The format a template's call-syntax marker or the model's name points at; `None` when only a
/// family resemblance (or nothing) would decide.
pub(crate) fn guess_matched(
    chat_template: Option<&str>,
    model_name: Option<&str>,
) -> Option<ToolFormat> {
    if let Some(t) = chat_template {
        // Several markers may appear (e.g. a Qwen3-Coder template also contains `<tool_call>`):
        // the ranks decide, not the position in the template.
        if let Some(f) = best(|h| h.template, |m| t.contains(m)) {
            return Some(f);
        }
    }
    let n = model_name?;
    let squashed: String = n
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.' | ' '))
        .collect();
    best(|h| h.names, |m| squashed.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ToolFormat::*;

    // Fragments of real chat templates (the parts that decide the format).
    const QWEN25: &str = r##"{{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
{%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}"##;
    const QWEN3_CODER: &str = r##"{{- "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n</function>\n</tool_call>" }}"##;
    const LLAMA31: &str = r##"{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}{{- "Environment: ipython\n" }}{%- endif %}
{{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
{{- "<|python_tag|>" + tool_call.name + ".call(" }}"##;
    const LLAMA31_NO_TAG: &str = r##"<|start_header_id|>user<|end_header_id|>
Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables."##;
    const MISTRAL_SMALL: &str = r##"{{- "[AVAILABLE_TOOLS] [" }}{%- for tool in tools %}{%- set tool = tool.function %}{%- endfor %}
{{- "[TOOL_CALLS] [" }}{%- for tool_call in tool_calls %}{%- set out = tool_call.function|tojson %}{{- out[:-1] }}{%- endfor %}
{{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}"##;
    const DEEPSEEK_V31: &str = r##"{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>'+ tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}"##;
    const GPT_OSS: &str = r##"{{- "<|start|>assistant to=" }}{{- "functions." + tool_call.name + "<|channel|>commentary " }}{{- (tool_call.content_type if tool_call.content_type is defined else "json") + "<|message|>" }}{{- "<|call|>" }}"##;
    const GRANITE3: &str = r##"{%- if tools %}
    {{- '<|start_of_role|>available_tools<|end_of_role|>\n' }}
    {%- for tool in tools %}{{- tool | tojson(indent=4) }}{%- endfor %}
    {{- '<|end_of_text|>\n' }}
{%- endif %}
{{- '<|start_of_role|>assistant<|end_of_role|><|tool_call|>' + message['tool_calls'] | tojson }}"##;
    const GRANITE_NO_CALL_MARKER: &str =
        r##"{{- '<|start_of_role|>available_tools<|end_of_role|>\n' }}"##;
    const GEMMA3: &str = r##"{{ bos_token }}{%- for message in loop_messages -%}{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}{%- endfor -%}{%- if add_generation_prompt -%}{{'<start_of_turn>model\n'}}{%- endif -%}"##;
    const SMOLLM2: &str = r##"{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"##;
    const LLAMA32_PYTHONIC: &str = r##"{{- "You are an expert in composing functions. You are given a question and a set of possible functions.\nIf you decide to invoke any of the function(s), you MUST put it in the format of [func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n" }}"##;
    const LLAMA4: &str = r##"{{- '<|header_start|>assistant<|header_end|>\n\n' -}}{%- if message.tool_calls -%}{{- "<|python_start|>" }}{{- "[" + tool_call.function.name + "(" }}{{- "<|python_end|>" }}{%- endif -%}"##;
    const SEED_MARKDOWN: &str = r##"To call a tool, reply with [TOOL_CALL]{"name": "tool", "arguments": {}}[END_TOOL_CALL]"##;

    const GEMMA4: &str = r##"{{- '<|turn>model\n' -}}{%- for tool_call in message['tool_calls'] -%}{{- '<|tool_call>call:' + function['name'] + '{' -}}{{- key + ':<|"|>' + value + '<|"|>' -}}{{- '}<tool_call|>' -}}"##;
    const GLM45: &str = r##"[gMASK]<sop>{%- if tools -%}<|system|>\n# Tools\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n</tool_call>{%- endif -%}"##;
    const KIMI_K2: &str = r##"{%- if message['tool_calls'] -%}<|tool_calls_section_begin|>{%- for tool_call in message['tool_calls'] -%}<|tool_call_begin|>{{ tool_call['id'] }}<|tool_call_argument_begin|>{{ tool_call['function']['arguments'] }}<|tool_call_end|>{%- endfor -%}<|tool_calls_section_end|>{%- endif -%}<|im_assistant|>"##;
    const DEEPSEEK_V32: &str =
        r##"{{ '<｜DSML｜function_calls>\n<｜DSML｜invoke name="' + tool.name + '">' }}"##;
    const DEEPSEEK_V41: &str = r##"{{ '<｜DSML｜ calls>\n<｜DSML｜ invoke name="' + tool.name + '">' }}{{ '<｜DSML｜ parameter name="' + k + '" string="' + s + '">' }}"##;
    const KIMI_K3: &str = r##"{%- if message['tool_calls'] -%}<|open|>tools<|sep|>{%- for tc in message['tool_calls'] -%}<|open|>call tool="{{ tc.function.name }}" index="{{ loop.index }}"<|sep|>{%- for k, v in args.items() -%}<|open|>argument key="{{ k }}" type="{{ kind(v) }}"<|sep|>{{ v }}<|close|>argument<|sep|>{%- endfor -%}<|close|>call<|sep|>{%- endfor -%}<|close|>tools<|sep|>{%- endif -%}<|close|>message<|sep|>"##;
    const PHI4_MINI: &str = r##"<|system|>{{ message['content'] }}<|tool|>{{ message['tools'] }}<|/tool|><|end|>{% if message['tool_calls'] %}functools[{{ message['tool_calls'] | tojson }}]{% endif %}"##;
    const LFM2: &str = r##"{{- '<|im_start|>assistant\n' -}}{{- '<|tool_call_start|>[' + calls + ']<|tool_call_end|>' -}}"##;
    const SMOLLM3: &str = r##"{%- if xml_tools or python_tools or tools -%}<|im_start|>system\n{%- set xml_tool_string = '<tool_call>' -%}{%- endif -%}"##;

    #[test]
    fn guesses_from_real_template_fragments() {
        let cases: &[(&str, &str, ToolFormat)] = &[
            ("qwen2.5", QWEN25, Hermes),
            ("qwen3-coder", QWEN3_CODER, Qwen3Coder),
            ("llama3.1", LLAMA31, Llama3),
            ("llama3.1 without tag", LLAMA31_NO_TAG, Llama3),
            ("mistral small 3.1", MISTRAL_SMALL, Mistral),
            ("deepseek v3.1", DEEPSEEK_V31, Deepseek),
            ("gpt-oss", GPT_OSS, Harmony),
            ("granite 3", GRANITE3, Granite),
            ("granite 3 family only", GRANITE_NO_CALL_MARKER, Granite),
            ("gemma 3", GEMMA3, Gemma),
            ("smollm2 chatml", SMOLLM2, Hermes),
            ("llama 3.2 pythonic", LLAMA32_PYTHONIC, Pythonic),
            ("llama 4", LLAMA4, Pythonic),
            ("seed markdown", SEED_MARKDOWN, ToolCallJson),
            ("gemma 4", GEMMA4, Gemma4),
            ("glm 4.5", GLM45, Glm),
            ("kimi k2", KIMI_K2, KimiK2),
            ("deepseek v3.2", DEEPSEEK_V32, DeepseekDsml),
            ("deepseek v4.1", DEEPSEEK_V41, DeepseekV41),
            ("kimi k3", KIMI_K3, KimiK3),
            ("phi-4-mini", PHI4_MINI, Phi4),
            ("lfm2", LFM2, Lfm2),
            ("smollm3", SMOLLM3, Smollm3),
        ];
        for (what, tmpl, want) in cases {
            assert_eq!(guess(Some(tmpl), None), *want, "{what}");
        }
    }

    #[test]
    fn template_markers_beat_model_names() {
        assert_eq!(guess(Some(QWEN3_CODER), Some("Llama-3.1-8B")), Qwen3Coder);
        // A bare ChatML template is only a family hint: a known model name wins over it.
        assert_eq!(
            guess(Some(SMOLLM2), Some("Mistral-7B-Instruct-v0.3")),
            Mistral
        );
    }

    #[test]
    fn guesses_from_model_names() {
        let cases: &[(&str, ToolFormat)] = &[
            ("Qwen2.5-1.5B-Instruct", Hermes),
            ("qwen3-0.6b-w8a8.rkllm", Hermes),
            ("Qwen3-Coder-30B-A3B-Instruct-Q4_K_M.gguf", Qwen3Coder),
            ("Qwen3.5-4B", Qwen3Coder),
            ("Meta-Llama-3.1-8B-Instruct", Llama3),
            ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", Llama3),
            ("Llama-4-Scout-17B-16E", Pythonic),
            ("Mistral-7B-Instruct-v0.3", Mistral),
            ("Ministral-8B-Instruct-2410", Mistral),
            ("gemma-3-1b-it", Gemma),
            ("DeepSeek-R1-Distill-Qwen-1.5B", Deepseek),
            ("gpt-oss-20b", Harmony),
            ("granite-3.1-2b-instruct", Granite),
            ("Hermes-3-Llama-3.2-3B", Hermes),
            ("SmolLM2-135M-Instruct.Q4_1.gguf", ToolCallJson),
            ("gemma-4-E4B-it-Q4_K_M.gguf", Gemma4),
            ("functiongemma-270m-it", FunctionGemma),
            ("GLM-4.5-Air", Glm),
            ("GLM-4.7-Flash", Glm),
            ("Kimi-K2-Instruct-0905", KimiK2),
            ("DeepSeek-V3.2-Exp", DeepseekDsml),
            ("DeepSeek-V4", DeepseekDsml),
            ("DeepSeek-V4.1", DeepseekV41),
            ("Kimi-K3-Instruct", KimiK3),
            ("Kimi-K2-Thinking", KimiK2),
            ("DeepSeek-V3.1-Terminus", Deepseek),
            ("Phi-4-mini-instruct", Phi4),
            ("LFM2-1.2B-Tool", Lfm2),
            ("xLAM-2-8b-fc-r", Xlam),
            ("SmolLM3-3B", Smollm3),
            ("granite-4.0-h-micro", Hermes),
        ];
        for (name, want) in cases {
            assert_eq!(guess(None, Some(name)), *want, "{name}");
        }
        assert_eq!(guess(None, None), ToolCallJson);
        assert_eq!(
            guess(Some("{{ messages }}"), Some("unknown-model")),
            ToolCallJson
        );
    }
}
