//! Converters: tool definitions to prompt sections, RKLLM JSON and grammars; tool results to text.
