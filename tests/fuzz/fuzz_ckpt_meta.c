/* fuzz_ckpt_meta.c — the training position a checkpoint carries in its
 * safetensors __metadata__ ("xlatrain.*"), as xt_ckpt_load (src/run/
 * checkpoint.c) reads it when resuming.
 *
 * Once per process: a small model (conv2d, batchnorm2d, maxpool2d, linear;
 * Adam, so there is optimizer state) is declared as a run would. Per input:
 * the input is metadata text, one KEY=VALUE per line (up to 64 lines; a line
 * without '=' is skipped). A checkpoint with the model's real tensors and
 * exactly that metadata is written with xt_st_write (so the data checksum
 * is right) to this process's scratch directory and loaded with xt_ckpt_load.
 * Unless the input has its own xlatrain.model_hash line, the model's hash is
 * added, so the fuzzer starts past the "another model" check; a line
 * "!eval" loads as --eval-only does (no optimizer state needed).
 * Whatever the metadata says, the load must not crash or leak; after a load
 * that succeeds, the restored loss/accuracy history is drawn into curves.png
 * (io/curves.c) as a resumed run does after its next epoch.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "fuzz_util.h"
#include "io/curves.h"
#include "io/safetensors.h"
#include "run/checkpoint.h"
#include "run/run.h"

#define MAX_META 64

static xt_config cfg;
static xt_cli cli;
static xt_run run;
static xt_st_tensor *tensors;
static int ntensors;
static int64_t nbt[XT_SPEC_MAX_LAYERS];
static char nbt_names[XT_SPEC_MAX_LAYERS][96];
static char hash_text[32];
static char ckpt_path[700], curves_path[700];

/* The tensors xt_ckpt_save writes: parameters, buffers, optimizer state and
 * every batch norm's num_batches_tracked (checkpoint.c's is_saved_state). */
static void collect(void) {
    const xt_store *st = &run.store;
    const xt_spec *sp = run.model.spec;
    tensors = calloc((size_t)st->n + (size_t)sp->nlayers + 1, sizeof *tensors);
    FUZZ_ASSERT(tensors, "out of memory");
    for (int i = 0; i < st->n; i++) {
        const xt_slot *s = &st->slots[i];
        int saved = s->kind == XT_SLOT_PARAM || s->kind == XT_SLOT_BUFFER ||
                    (s->kind == XT_SLOT_STATE && s->rank > 0 && !strncmp(s->name, "optim.", 6));
        if (!saved) continue;
        xt_st_tensor *t = &tensors[ntensors++];
        t->name = s->name;
        t->dtype = XT_ST_F32;
        t->rank = s->rank;
        for (int k = 0; k < s->rank; k++) t->shape[k] = s->shape[k];
        t->data = s->data;
    }
    for (int l = 0; l < sp->nlayers; l++) {
        if (sp->layers[l].kind != XT_L_BATCHNORM2D) continue;
        nbt[l] = 7;
        snprintf(nbt_names[l], sizeof nbt_names[l], "%s.num_batches_tracked", sp->layers[l].name);
        tensors[ntensors++] = (xt_st_tensor){.name = nbt_names[l], .dtype = XT_ST_I64, .rank = 0, .data = &nbt[l]};
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    static const char *const sets[] = {
        ("model={input: [1, 28, 28], layers: [{conv2d: {name: conv1, out: 2, kernel: 5}}, {batchnorm2d: {name: bn1}}, "
         "{maxpool2d: {kernel: 4}}, relu, flatten, {linear: {name: fc1, out: 10}}, log_softmax]}"),
        "optimizer.name=adam", "batch_size=4", "num_cores=1", "dataset=synthetic",
    };
    xt_err e = {0};
    if (xt_config_load(&cfg, NULL, sets, (int)(sizeof sets / sizeof *sets), &e)) {
        fprintf(stderr, "fuzz_ckpt_meta: config: %s\n", e.msg);
        abort();
    }
    run.c = &cfg;
    run.cli = &cli;
    run.world = 1;
    run.best_acc = -1;
    run.hist_loss = calloc(XT_MAX_EPOCHS, sizeof *run.hist_loss);
    run.hist_acc = calloc(XT_MAX_EPOCHS, sizeof *run.hist_acc);
    if (!run.hist_loss || !run.hist_acc || xt_run_setup_model(&run, &e)) {
        fprintf(stderr, "fuzz_ckpt_meta: model: %s\n", e.msg);
        abort();
    }
    collect();
    snprintf(hash_text, sizeof hash_text, "%016" PRIx64, run.model_hash);
    snprintf(ckpt_path, sizeof ckpt_path, "%s/checkpoint-epoch001.safetensors", fuzz_scratch_dir());
    snprintf(curves_path, sizeof curves_path, "%s/curves.png", fuzz_scratch_dir());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    xt_st_meta meta[MAX_META + 1];
    int nm = 0, have_hash = 0;
    cli.eval_only = 0;
    for (char *line = text, *next; line && nm < MAX_META; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        if (!strcmp(line, "!eval")) {
            cli.eval_only = 1;
            continue;
        }
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        meta[nm++] = (xt_st_meta){line, eq + 1};
        have_hash |= !strcmp(line, "xlatrain.model_hash");
    }
    if (!have_hash) meta[nm++] = (xt_st_meta){"xlatrain.model_hash", hash_text};
    xt_err e = {0};
    /* refused (a duplicate key, the reserved crc key): not a checkpoint the loader can meet */
    if (xt_st_write(ckpt_path, tensors, ntensors, meta, nm, &e) != 0) {
        fuzz_note("not written", e.msg);
    } else {
        memset(&e, 0, sizeof e);
        run.nhist = 0;
        if (xt_ckpt_load(&run, ckpt_path, &e) == 0) {
            fuzz_note("loaded", NULL);
            FUZZ_ASSERT(run.nhist >= 0 && run.nhist <= XT_MAX_EPOCHS, "nhist %d", run.nhist);
            if (run.nhist > 0) {
                xt_err ce = {0};
                (void)xt_curves_write(curves_path, run.hist_loss, run.hist_acc, run.nhist, &ce);
            }
        } else {
            fuzz_note("refused", e.msg);
            FUZZ_ASSERT(e.code && e.msg[0], "a failure without a message");
        }
    }
    free(text);
    return 0;
}
