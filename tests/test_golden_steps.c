/* test_golden_steps.c — five real training steps of the seed CNN against
 * PyTorch: from the same initial weights, over the same five batches (the
 * last one partial), in training mode, every parameter and every BN
 * running_mean/running_var after the fifth step must equal what torch.optim
 * SGD (momentum; Nesterov + weight decay), Adam and AdamW give.
 *
 * The steps go through the trainer's own step, xt_run_train_step
 * (src/run/step.c): bind the batch, write the learning rate into the
 * optimizer's lr slot (xt_optim_set_scalars), trace the model, xt_backward,
 * xt_all_reduce, xt_optim_trace, xt_mark_step; the run is declared and set up
 * by xt_run_setup_model, as `xlatrain train` does, with world size 1.
 *
 * Tolerance ("1e-5 relative"), per tensor T with PyTorch's values b and ours a:
 *     max_i |a_i - b_i|  <=  1e-5 * max_i |b_i|
 * i.e. the worst element's error is at most 1e-5 of the tensor's largest
 * magnitude. Not per element: after five float32 steps an element near zero
 * (a weight crossing zero, a bias of ~1e-4) carries the absolute rounding of
 * the sums that produced it, so its own relative error says nothing. For
 * scale: PyTorch's float32 run is itself up to ~2e-7 (SGD) and ~1.5e-6
 * (Adam/AdamW) from the same run in float64 by this measure (recorded as
 * <variant>.f32_vs_f64 in the fixture), and ours is ~3e-7 / ~2.5e-6 from
 * PyTorch's (XT_GOLDEN_VERBOSE=1 prints it): Adam divides by sqrt(v), so a
 * small gradient's rounding becomes a full-size relative error in its
 * update. 1e-5 leaves room for a different summation order but not for a
 * wrong formula: momentum 0.5 -> 0.5005 gives 5.5e-3, Nesterov's lookahead
 * dropped 0.12, SGD weight decay dropped 0.03, Adam's bias correction one
 * step late 0.03, AdamW decaying by (lr/bc1)*wd 1.9e-3, BN's running_var
 * biased 1.4e-3, Adam's eps added before the bias correction 3e-5.
 *
 * The same for grad_clip_norm (clip_grad_norm_ between backward and step)
 * and label_smoothing (CrossEntropyLoss(label_smoothing=)), alone and with
 * Nesterov and weight decay.
 *
 * Golden values: tests/golden/make_golden_steps.py and
 * make_golden_clip_smooth.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "io/safetensors.h"
#include "run/run.h"
#include "run/step.h"
#include "test.h"

#define FIXTURE "tests/golden/seed_cnn_steps.safetensors"
#define CLIP_FIXTURE "tests/golden/seed_cnn_clip_smooth.safetensors" /* make_golden_clip_smooth.py */
#define REL_TOL 1e-5

/* max |a - b| / max |b| over a tensor (the measure above) */
static double tensor_rel_err(const float *a, const float *b, int64_t n) {
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst / fmax(scale, 1e-30);
}

static const char *meta(const xt_st_file *f, const char *variant, const char *key) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", variant, key);
    return xt_st_meta_get(f, k);
}

/* Train `variant` for the fixture's steps; returns the largest tensor error
 * (or INFINITY when it could not run) and checks every tensor. */
static double run_fixture(const char *fixture, const char *variant, int no_planner) {
    xt_err e = {0};
    xt_st_file f;
    if (xt_st_read(fixture, &f, &e)) {
        CHECK_MSG(0, "%s", e.msg);
        return INFINITY;
    }
    const char *tv = xt_st_meta_get(&f, "torch.version");
    const char *opt = meta(&f, variant, "optimizer"), *lr_s = meta(&f, variant, "lr"), *mom = meta(&f, variant, "momentum"),
               *wd = meta(&f, variant, "weight_decay"), *nest = meta(&f, variant, "nesterov"), *steps_s = xt_st_meta_get(&f, "steps");
    if (!opt || !lr_s || !mom || !wd || !nest || !steps_s || !tv) {
        CHECK_MSG(0, "%s: no hyperparameters for variant '%s' (regenerate it with its script in tests/golden/)", fixture, variant);
        xt_st_close(&f);
        return INFINITY;
    }
    static xt_config c;
    static xt_cli cli;
    static xt_run r;
    memset(&r, 0, sizeof r);
    memset(&cli, 0, sizeof cli);
    xt_config_defaults(&c);
    CHECK(xt_spec_load(&c.spec, "models/fashion_cnn.yaml", &e) == 0);
    c.optimizer = !strcmp(opt, "sgd") ? XT_OPT_SGD : !strcmp(opt, "adam") ? XT_OPT_ADAM : XT_OPT_ADAMW;
    CHECK_MSG(!strcmp(opt, "sgd") || !strcmp(opt, "adam") || !strcmp(opt, "adamw"), "unknown optimizer '%s'", opt);
    c.learning_rate = strtod(lr_s, NULL);
    c.momentum = strtod(mom, NULL);
    c.weight_decay = strtod(wd, NULL);
    c.nesterov = atoi(nest);
    /* make_golden_clip_smooth.py's variants: clip_grad_norm_ and CrossEntropyLoss(label_smoothing=) */
    const char *clip = meta(&f, variant, "grad_clip_norm"), *smooth = meta(&f, variant, "label_smoothing");
    c.grad_clip_norm = clip ? strtod(clip, NULL) : 0;
    c.label_smoothing = smooth ? strtod(smooth, NULL) : 0;
    c.beta1 = 0.9; /* torch.optim's defaults, which the fixture uses */
    c.beta2 = 0.999;
    c.adam_eps = 1e-8;
    c.batch_size = 8;
    c.num_cores = 1;
    r.c = &c;
    r.cli = &cli;
    r.world = 1;
    CHECK_MSG(xt_run_setup_model(&r, &e) == 0, "%s", e.msg);

    /* PyTorch's initial weights into every parameter and buffer */
    const int *lists[2] = {r.model.params, r.model.buffers};
    int counts[2] = {r.model.nparams, r.model.nbuffers};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            const xt_slot *s = &r.store.slots[lists[l][i]];
            char name[200];
            int64_t shape[4];
            for (int k = 0; k < s->rank; k++) shape[k] = s->shape[k];
            snprintf(name, sizeof name, "init.%s", s->name);
            CHECK_MSG(xt_st_copy(&f, name, XT_ST_F32, s->rank, shape, s->data, &e) == 0, "%s", e.msg);
        }

    int steps = atoi(steps_s);
    char lname[128];
    snprintf(lname, sizeof lname, "%s.loss", variant);
    const xt_st_tensor *want_loss = xt_st_find(&f, lname);
    CHECK_MSG(want_loss && want_loss->rank == 1 && want_loss->shape[0] == steps, "%s: no %s[%d]", fixture, lname, steps);
    xt_engine_opts eo = {.fuse = 1, .no_memory_planner = no_planner}; /* as xt_worker_main */
    xt_engine *en = xt_engine_new(&r.store, &eo);
    for (int s = 0; s < steps && want_loss; s++) {
        char xn[32], yn[32];
        snprintf(xn, sizeof xn, "x.%d", s);
        snprintf(yn, sizeof yn, "y.%d", s);
        const xt_st_tensor *tx = xt_st_find(&f, xn), *ty = xt_st_find(&f, yn);
        if (!tx || !ty) {
            CHECK_MSG(0, "%s: no batch %d", fixture, s);
            break;
        }
        xt_batch b = {.n = (int)ty->shape[0], .number = s, .x = (float *)tx->data, .y = (int32_t *)ty->data};
        float loss = NAN;
        int rc = xt_run_train_step(&r, en, &b, c.learning_rate, &loss, &e);
        CHECK_MSG(rc == 0, "step %d: %s", s, e.msg);
        if (rc) break;
        r.global_step++;
        double wl = ((const float *)want_loss->data)[s];
        CHECK_MSG(fabs(loss - wl) <= REL_TOL * fabs(wl), "%s step %d: loss %.9g, PyTorch %.9g (torch %s)", variant, s, loss, wl, tv);
    }
    xt_engine_free(en);

    double worst = 0;
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            const xt_slot *s = &r.store.slots[lists[l][i]];
            char name[200];
            snprintf(name, sizeof name, "%s.%s", variant, s->name);
            const xt_st_tensor *t = xt_st_find(&f, name);
            if (!t || (int64_t)(t->nbytes / 4) != s->numel) {
                CHECK_MSG(0, "%s: no %s with %lld values", fixture, name, (long long)s->numel);
                worst = INFINITY;
                continue;
            }
            double err = tensor_rel_err(s->data, t->data, s->numel);
            worst = fmax(worst, err);
            CHECK_MSG(err <= REL_TOL, "%s after %d steps: max|ours - PyTorch| = %.3g of max|PyTorch| (tolerance %g; torch %s, "
                      "whose own float32-vs-float64 gap is %s)", name, steps, err, REL_TOL, tv, meta(&f, variant, "f32_vs_f64"));
        }
    for (int i = 0; i < c.spec.nlayers; i++)
        if (c.spec.layers[i].kind == XT_L_BATCHNORM2D) CHECK_EQ(r.model.layers[i].num_batches_tracked, steps);
    if (getenv("XT_GOLDEN_VERBOSE")) fprintf(stderr, "    %s: worst tensor error %.3g (torch %s)\n", variant, worst, tv);
    xt_model_free(&r.model);
    xt_store_free(&r.store);
    xt_spec_free(&c.spec);
    xt_st_close(&f);
    return worst;
}

static double run_variant(const char *variant, int no_planner) { return run_fixture(FIXTURE, variant, no_planner); }

/* The clipping variants clip on every step: each step's total norm before
 * clipping (from PyTorch) is above max_norm, so a test that passes without
 * clipping cannot pass these. */
static void clip_variant(const char *variant) {
    xt_err e = {0};
    xt_st_file f;
    CHECK_MSG(xt_st_read(CLIP_FIXTURE, &f, &e) == 0, "%s", e.msg);
    const char *norms = meta(&f, variant, "clip_norms"), *max_s = meta(&f, variant, "grad_clip_norm");
    CHECK_MSG(norms && max_s && *norms, "%s: no clip_norms for %s", CLIP_FIXTURE, variant);
    for (const char *p = norms; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        CHECK_MSG(strtod(p, NULL) > 1.5 * strtod(max_s, NULL), "%s: a step's norm %g is not clipped by %s", variant, strtod(p, NULL), max_s);
    xt_st_close(&f);
    run_fixture(CLIP_FIXTURE, variant, 0);
}

TEST(golden_steps_grad_clip_norm_matches_pytorch) { clip_variant("sgd_clip"); }
TEST(golden_steps_label_smoothing_matches_pytorch) { run_fixture(CLIP_FIXTURE, "sgd_smooth", 0); }
TEST(golden_steps_clip_and_smoothing_with_nesterov_weight_decay_match_pytorch) { clip_variant("sgd_nesterov_wd_clip_smooth"); }
TEST(golden_steps_sgd_momentum_matches_pytorch) { run_variant("sgd", 0); }
TEST(golden_steps_sgd_nesterov_weight_decay_matches_pytorch) { run_variant("sgd_nesterov_wd", 0); }
TEST(golden_steps_adam_matches_pytorch) { run_variant("adam", 0); }
TEST(golden_steps_adamw_matches_pytorch) { run_variant("adamw", 0); }
/* The same with memory planning off (every value its own buffer, no
 * in-place update): a planner bug shows as a difference between the two. */
TEST(golden_steps_sgd_momentum_matches_pytorch_without_memory_planner) { run_variant("sgd", 1); }
TEST(golden_steps_sgd_nesterov_weight_decay_matches_pytorch_without_memory_planner) { run_variant("sgd_nesterov_wd", 1); }
TEST(golden_steps_adam_matches_pytorch_without_memory_planner) { run_variant("adam", 1); }
TEST(golden_steps_adamw_matches_pytorch_without_memory_planner) { run_variant("adamw", 1); }
