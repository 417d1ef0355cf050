//! LLM backends: the backend trait, RKLLM (NPU, loaded at run time) and llama.cpp (CPU).
