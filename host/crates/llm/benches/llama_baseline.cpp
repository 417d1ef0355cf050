// Baseline for rkmcp's CPU backend: plain C++ on the llama.cpp C API, linked against the very
// static libraries llama-cpp-sys-2 built for rkmcp (same sources, same flags). It measures what
// llama-bench measures — pp: one batch of N prompt tokens from an empty KV cache; tg: N tokens
// decoded one at a time without sampling — because the crate does not ship llama-bench.cpp.
//
// usage: llama_baseline MODEL THREADS PROMPT_TOKENS GEN_TOKENS REPS
// prints one JSON line: {"pp_ts": …, "tg_ts": …}
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "llama.h"

static double now_s() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s MODEL THREADS PROMPT_TOKENS GEN_TOKENS REPS\n", argv[0]);
        return 2;
    }
    const char * path = argv[1];
    const int threads = std::atoi(argv[2]);
    const int n_prompt = std::atoi(argv[3]);
    const int n_gen = std::atoi(argv[4]);
    const int reps = std::atoi(argv[5]);

    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model * model = llama_model_load_from_file(path, llama_model_default_params());
    if (!model) {
        std::fprintf(stderr, "cannot load %s\n", path);
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_prompt + n_gen + 16;
    cp.n_batch = 512;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        std::fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    std::mt19937 rng(42);
    std::uniform_int_distribution<llama_token> tok(0, n_vocab - 1);
    std::vector<llama_token> prompt(n_prompt);
    llama_memory_t mem = llama_get_memory(ctx);

    // Warm-up, as llama-bench does.
    llama_token t0 = tok(rng);
    llama_decode(ctx, llama_batch_get_one(&t0, 1));
    llama_synchronize(ctx);

    double pp_sum = 0, tg_sum = 0;
    for (int r = 0; r < reps; r++) {
        for (auto & t : prompt) t = tok(rng);
        llama_memory_clear(mem, true);
        double start = now_s();
        if (llama_decode(ctx, llama_batch_get_one(prompt.data(), n_prompt)) != 0) return 1;
        llama_synchronize(ctx);
        pp_sum += n_prompt / (now_s() - start);

        llama_memory_clear(mem, true);
        llama_token t = tok(rng);
        start = now_s();
        for (int i = 0; i < n_gen; i++) {
            if (llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) return 1;
            llama_synchronize(ctx);
            t = tok(rng);
        }
        tg_sum += n_gen / (now_s() - start);
    }
    std::printf("{\"pp_ts\": %.3f, \"tg_ts\": %.3f}\n", pp_sum / reps, tg_sum / reps);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
