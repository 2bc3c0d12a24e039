// logits: llama.cpp's logits for a sequence of token ids, for
// bench/llamacpp -compare (crosscheck.sh builds it against the llama.cpp
// that run.sh builds).
//
//   logits model.gguf id...
//
// One batch with every position's logits kept, the K/V cache in F32; it
// prints one line per position: the vocabulary's logits, space-separated.
#include <stdio.h>
#include <stdlib.h>

#include "ggml.h"
#include "llama.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: logits model.gguf id...\n");
        return 2;
    }
    int n = argc - 2;
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (model == NULL) {
        fprintf(stderr, "logits: cannot load %s\n", argv[1]);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n + 16;
    cp.n_batch = cp.n_ubatch = n;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (ctx == NULL) {
        fprintf(stderr, "logits: cannot create a context\n");
        return 1;
    }
    int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = atoi(argv[i + 2]);
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "logits: llama_decode failed\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        const float *l = llama_get_logits_ith(ctx, i);
        for (int v = 0; v < vocab; v++) {
            printf(v ? " %.9g" : "%.9g", l[v]);
        }
        printf("\n");
    }
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
