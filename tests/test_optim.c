/* test_optim.c — optimizer updates against torch.optim's own numbers, and
 * the learning-rate schedules (by hand and against torch.optim.lr_scheduler).
 *
 * tests/golden/make_golden_optim.py runs torch.optim.SGD/Adam/AdamW on one
 * 6-element float32 tensor with a different gradient at each step (and, for
 * some variants, a different lr per step, set in param_groups as a scheduler
 * does) and stores the weights after every step in
 * tests/golden/optim.safetensors. Here the same steps go through
 * xt_optim_declare / xt_optim_set_scalars (the lr written into the store's
 * lr slot) / xt_optim_trace / xt_mark_step, and after every step
 *     max_i |ours_i - torch_i|  <=  OPT_TOL * max_i |torch_i|
 * must hold (the worst element's error against the largest magnitude of that
 * step's weights; per element relative error is meaningless for the weight
 * that stays 0). A few float32 roundings per step put ours within ~1e-7 of
 * torch's; any formula difference is orders of magnitude larger. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "io/safetensors.h"
#include "optim/optim.h"
#include "test.h"

#define OPT_FIXTURE "tests/golden/optim.safetensors"
#define OPT_TOL 1e-6
#define NW 6
#define MAX_STEPS 8

static int open_fixture(xt_st_file *f) {
    xt_err e = {0};
    if (xt_st_read(OPT_FIXTURE, f, &e)) {
        CHECK_MSG(0, "%s", e.msg);
        return -1;
    }
    return 0;
}

/* Run len(lr) optimizer steps on w (NW values) from w0, step s with gradient
 * grads[s] and learning rate lr[s]; traj[s] = w after step s. Returns the
 * optimizer (its slot ids) in *out when out is not NULL. */
static void run_optim(xt_config *c, const float *w0, const float *grads, const double *lr, int steps, float *traj, xt_optim *out) {
    xt_store st;
    xt_store_init(&st);
    xt_model m;
    memset(&m, 0, sizeof m);
    m.nparams = 1;
    m.params[0] = xt_store_add(&st, "w", XT_SLOT_PARAM, XT_F32, 1, (int32_t[]){NW});
    int gs = xt_store_add(&st, "g", XT_SLOT_BUFFER, XT_F32, 1, (int32_t[]){NW});
    xt_optim o;
    xt_err e = {0};
    CHECK(xt_optim_declare(&o, c, &m, &st, &e) == 0);
    CHECK(xt_store_finalize(&st, &e) == 0);
    memcpy(st.slots[m.params[0]].data, w0, NW * sizeof(float));
    xt_engine *en = xt_engine_new(&st, NULL);
    for (int s = 0; s < steps; s++) {
        memcpy(st.slots[gs].data, grads + s * NW, NW * sizeof(float));
        xt_graph *gr = xt_engine_graph(en);
        xt_optim_set_scalars(&o, &st, lr[s]);
        xt_t grad = xt_leaf(gr, gs);
        xt_optim_trace(&o, gr, &grad);
        CHECK(xt_mark_step(en, &e) == 0);
        memcpy(traj + s * NW, st.slots[m.params[0]].data, NW * sizeof(float));
    }
    if (out) *out = o;
    xt_engine_free(en);
    xt_store_free(&st);
}

static double meta_num(const xt_st_file *f, const char *variant, const char *key, int *missing) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", variant, key);
    const char *v = xt_st_meta_get(f, k);
    if (!v) {
        *missing = 1;
        return 0;
    }
    return strtod(v, NULL);
}

/* The fixture's `variant` through xlatrain's optimizer, step by step against
 * torch's weights. Returns the worst step's error (INFINITY if it could not
 * run); *o (if not NULL) gets the optimizer as declared. */
static double check_variant(const char *variant, xt_optim *o) {
    xt_st_file f;
    if (open_fixture(&f)) return INFINITY;
    char k[128];
    snprintf(k, sizeof k, "%s.optimizer", variant);
    const char *kind = xt_st_meta_get(&f, k), *tv = xt_st_meta_get(&f, "torch.version");
    snprintf(k, sizeof k, "%s.lr", variant);
    const xt_st_tensor *tlr = xt_st_find(&f, k);
    snprintf(k, sizeof k, "%s.w", variant);
    const xt_st_tensor *tw = xt_st_find(&f, k), *w0 = xt_st_find(&f, "w0"), *g = xt_st_find(&f, "grad");
    xt_config c;
    xt_config_defaults(&c);
    int missing = !kind || !tv || !tlr || !tw || !w0 || !g;
    c.momentum = meta_num(&f, variant, "momentum", &missing);
    c.nesterov = (int)meta_num(&f, variant, "nesterov", &missing);
    c.weight_decay = meta_num(&f, variant, "weight_decay", &missing);
    c.beta1 = meta_num(&f, variant, "beta1", &missing);
    c.beta2 = meta_num(&f, variant, "beta2", &missing);
    c.adam_eps = meta_num(&f, variant, "eps", &missing);
    int steps = tlr ? (int)tlr->shape[0] : 0;
    if (missing || tlr->dtype != XT_ST_F64 || steps < 1 || steps > MAX_STEPS || tw->nbytes != (size_t)steps * NW * 4 ||
        w0->nbytes != NW * 4 || g->nbytes < (size_t)steps * NW * 4) {
        CHECK_MSG(0, "%s: variant '%s' is missing or malformed (regenerate with tests/golden/make_golden_optim.py)", OPT_FIXTURE, variant);
        xt_st_close(&f);
        return INFINITY;
    }
    c.optimizer = !strcmp(kind, "sgd") ? XT_OPT_SGD : !strcmp(kind, "adam") ? XT_OPT_ADAM : XT_OPT_ADAMW;
    CHECK_MSG(!strcmp(kind, "sgd") || !strcmp(kind, "adam") || !strcmp(kind, "adamw"), "unknown optimizer '%s'", kind);
    c.learning_rate = ((const double *)tlr->data)[0];
    float traj[MAX_STEPS * NW];
    run_optim(&c, w0->data, g->data, tlr->data, steps, traj, o);
    double worst = 0;
    for (int s = 0; s < steps; s++) {
        const float *want = (const float *)tw->data + s * NW, *got = traj + s * NW;
        double scale = 0, err = 0;
        for (int i = 0; i < NW; i++) scale = fmax(scale, fabs(want[i]));
        for (int i = 0; i < NW; i++) err = fmax(err, fabs((double)got[i] - want[i]));
        err /= scale;
        worst = fmax(worst, err);
        CHECK_MSG(err <= OPT_TOL, "%s step %d: max|ours - torch| = %.3g of max|torch| (tolerance %g, torch %s); "
                  "w = [%.8g %.8g %.8g %.8g %.8g %.8g], torch [%.8g %.8g %.8g %.8g %.8g %.8g]", variant, s + 1, err, OPT_TOL, tv,
                  got[0], got[1], got[2], got[3], got[4], got[5], want[0], want[1], want[2], want[3], want[4], want[5]);
    }
    if (getenv("XT_GOLDEN_VERBOSE")) fprintf(stderr, "    %s: worst step error %.3g (torch %s)\n", variant, worst, tv);
    xt_st_close(&f);
    return worst;
}

TEST(optim_sgd_momentum_matches_torch) { check_variant("sgd_momentum", NULL); }

TEST(optim_sgd_nesterov_and_weight_decay_match_torch) { check_variant("sgd_nesterov_wd", NULL); }

TEST(optim_sgd_momentum_weight_decay_changing_lr_match_torch) { check_variant("sgd_momentum_wd_lr_changes", NULL); }

TEST(optim_plain_sgd_without_momentum) {
    xt_optim o;
    check_variant("sgd_plain", &o);
    CHECK_EQ(o.state1[0], -1); /* no momentum buffer is declared */
}

TEST(optim_adam_matches_torch) { check_variant("adam", NULL); }

TEST(optim_adam_betas_eps_changing_lr_match_torch) { check_variant("adam_betas_eps_lr_changes", NULL); }

TEST(optim_adamw_matches_torch) { check_variant("adamw", NULL); }

TEST(optim_adamw_betas_changing_lr_match_torch) { check_variant("adamw_lr_changes", NULL); }

/* StepLR, CosineAnnealingLR (per epoch) and a LinearLR warm-up (per step)
 * from torch.optim.lr_scheduler against xt_schedule_lr, base lr 0.1. */
TEST(schedules_match_torch) {
    xt_st_file f;
    if (open_fixture(&f)) return;
    const char *tv = xt_st_meta_get(&f, "torch.version");
    const xt_st_tensor *ts = xt_st_find(&f, "sched.step"), *tc = xt_st_find(&f, "sched.cosine"), *tw = xt_st_find(&f, "sched.warmup");
    if (!ts || !tc || !tw || ts->shape[0] != 11 || tc->shape[0] != 11 || tw->shape[0] != 25) {
        CHECK_MSG(0, "%s: no schedules (regenerate with tests/golden/make_golden_optim.py)", OPT_FIXTURE);
        xt_st_close(&f);
        return;
    }
    xt_config c;
    xt_config_defaults(&c);
    c.learning_rate = 0.1;
    c.num_epochs = 10;
    c.scale_lr_by_world_size = 0;
    c.schedule = XT_SCHED_STEP;
    c.step_size = 3;
    c.gamma = 0.5;
    for (int ep = 0; ep <= 10; ep++)
        CHECK_MSG(fabs(xt_schedule_lr(&c, 1, ep, 0, 100) - ((const double *)ts->data)[ep]) <= 1e-12, "StepLR epoch %d: %.17g vs torch %.17g (torch %s)",
                  ep, xt_schedule_lr(&c, 1, ep, 0, 100), ((const double *)ts->data)[ep], tv);
    c.schedule = XT_SCHED_COSINE;
    for (int ep = 0; ep <= 10; ep++)
        CHECK_MSG(fabs(xt_schedule_lr(&c, 1, ep, 0, 100) - ((const double *)tc->data)[ep]) <= 1e-12, "CosineAnnealingLR epoch %d: %.17g vs torch %.17g (torch %s)",
                  ep, xt_schedule_lr(&c, 1, ep, 0, 100), ((const double *)tc->data)[ep], tv);
    c.schedule = XT_SCHED_CONSTANT;
    c.warmup_epochs = 2;
    for (int k = 0; k < 25; k++) /* 10 steps per epoch */
        CHECK_MSG(fabs(xt_schedule_lr(&c, 1, k / 10, k % 10, 10) - ((const double *)tw->data)[k]) <= 1e-12, "warm-up step %d: %.17g vs torch LinearLR %.17g (torch %s)",
                  k, xt_schedule_lr(&c, 1, k / 10, k % 10, 10), ((const double *)tw->data)[k], tv);
    xt_st_close(&f);
}

TEST(schedules_constant_step_cosine_warmup) {
    xt_config c;
    xt_config_defaults(&c);
    c.learning_rate = 0.1;
    c.num_epochs = 10;
    c.scale_lr_by_world_size = 1;
    CHECK_NEAR(xt_schedule_lr(&c, 1, 5, 0, 100), 0.1, 1e-12);
    CHECK_NEAR(xt_schedule_lr(&c, 4, 5, 0, 100), 0.4, 1e-12); /* the seed's lr * world size */
    c.scale_lr_by_world_size = 0;
    CHECK_NEAR(xt_schedule_lr(&c, 4, 5, 0, 100), 0.1, 1e-12);
    c.schedule = XT_SCHED_STEP;
    c.step_size = 3;
    c.gamma = 0.5;
    CHECK_NEAR(xt_schedule_lr(&c, 1, 2, 0, 100), 0.1, 1e-12);
    CHECK_NEAR(xt_schedule_lr(&c, 1, 3, 0, 100), 0.05, 1e-12);
    CHECK_NEAR(xt_schedule_lr(&c, 1, 9, 0, 100), 0.0125, 1e-12);
    c.schedule = XT_SCHED_COSINE;
    CHECK_NEAR(xt_schedule_lr(&c, 1, 0, 0, 100), 0.1, 1e-12);
    CHECK_NEAR(xt_schedule_lr(&c, 1, 5, 0, 100), 0.05, 1e-12);
    CHECK_NEAR(xt_schedule_lr(&c, 1, 10, 0, 100), 0.0, 1e-12);
    c.schedule = XT_SCHED_CONSTANT;
    c.warmup_epochs = 2;
    CHECK_NEAR(xt_schedule_lr(&c, 1, 0, 0, 100), 0.1 * 1 / 200, 1e-12);
    CHECK_NEAR(xt_schedule_lr(&c, 1, 1, 49, 100), 0.1 * 150 / 200, 1e-12);
    CHECK_NEAR(xt_schedule_lr(&c, 1, 2, 0, 100), 0.1, 1e-12);
}
