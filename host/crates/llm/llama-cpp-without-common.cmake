# Included by CMake before llama.cpp's `project()` (CMAKE_PROJECT_INCLUDE_BEFORE, set in
# .cargo/config.toml): llama.cpp is built without its `common` library.
#
# llama-cpp-sys-2 turns `common` on through its default feature, which llama-cpp-2 enables
# whatever its own features say, and then builds llama.cpp's `common` (argument parsing, chat
# parsers, Jinja, downloads) and the vendored cpp-httplib it needs: about half of llama.cpp's
# C++ compile time. rkmcp never calls into it: llama-cpp-2 reaches `common` only behind its own
# `common` feature, which rkmcp-llm leaves off (default-features = false), so no `llama_rs_*`
# symbol is referenced and nothing is missing at link time. llama-cpp-sys-2 links `common` only
# when the library exists, and says so in one build warning:
#   "common feature was enabled, but no common library was found".
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library (off: rkmcp does not use it)" FORCE)
set(LLAMA_BUILD_COMMON OFF)
