/* test_optim.c — optimizer updates against hand-computed values of
 * torch.optim's formulas, and the learning-rate schedules. */
#include <math.h>
#include <string.h>

#include "config/config.h"
#include "optim/optim.h"
#include "test.h"

/* Run `steps` optimizer steps on w (3 values) with constant gradient g. */
static void run_optim(xt_config *c, const float *w0, const float *g, int steps, float *w_out) {
    xt_store st;
    xt_store_init(&st);
    xt_model m;
    memset(&m, 0, sizeof m);
    m.nparams = 1;
    m.params[0] = xt_store_add(&st, "w", XT_SLOT_PARAM, XT_F32, 1, (int32_t[]){3});
    int gs = xt_store_add(&st, "g", XT_SLOT_BUFFER, XT_F32, 1, (int32_t[]){3});
    xt_optim o;
    xt_err e = {0};
    CHECK(xt_optim_declare(&o, c, &m, &st, &e) == 0);
    CHECK(xt_store_finalize(&st, &e) == 0);
    memcpy(st.slots[m.params[0]].data, w0, 12);
    memcpy(st.slots[gs].data, g, 12);
    xt_engine *en = xt_engine_new(&st, NULL);
    for (int s = 0; s < steps; s++) {
        xt_graph *gr = xt_engine_graph(en);
        xt_optim_set_scalars(&o, &st, c->learning_rate);
        xt_t grad = xt_leaf(gr, gs);
        xt_optim_trace(&o, gr, &grad);
        CHECK(xt_mark_step(en, &e) == 0);
    }
    memcpy(w_out, st.slots[m.params[0]].data, 12);
    xt_engine_free(en);
    xt_store_free(&st);
}

static const float W0[3] = {1.0f, -2.0f, 0.5f}, G[3] = {0.1f, 0.2f, -0.3f};

TEST(optim_sgd_momentum_matches_torch) {
    xt_config c;
    xt_config_defaults(&c);
    c.learning_rate = 0.1;
    c.momentum = 0.9;
    float w[3];
    run_optim(&c, W0, G, 3, w);
    /* buf: g, 1.9g, 2.71g; w -= lr * sum = 0.1 * 5.61 g */
    for (int i = 0; i < 3; i++) CHECK_NEAR(w[i], W0[i] - 0.1 * 5.61 * G[i], 1e-6);
}

TEST(optim_sgd_nesterov_and_weight_decay_match_torch) {
    xt_config c;
    xt_config_defaults(&c);
    c.learning_rate = 0.1;
    c.momentum = 0.5;
    c.nesterov = 1;
    c.weight_decay = 0.01;
    float w[3];
    run_optim(&c, W0, G, 2, w);
    for (int i = 0; i < 3; i++) {
        double x = W0[i], buf = 0;
        for (int s = 0; s < 2; s++) {
            double g = G[i] + 0.01 * x;
            buf = 0.5 * buf + g;
            x -= 0.1 * (g + 0.5 * buf);
        }
        CHECK_NEAR(w[i], x, 1e-6);
    }
}

TEST(optim_plain_sgd_without_momentum) {
    xt_config c;
    xt_config_defaults(&c);
    c.learning_rate = 0.5;
    c.momentum = 0;
    float w[3];
    run_optim(&c, W0, G, 2, w);
    for (int i = 0; i < 3; i++) CHECK_NEAR(w[i], W0[i] - 2 * 0.5 * G[i], 1e-6);
}

/* torch.optim.Adam / AdamW, written out step by step in double */
static void adam_ref(int adamw, double lr, double wd, int steps, double *x) {
    double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    for (int i = 0; i < 3; i++) {
        double m = 0, v = 0;
        for (int t = 1; t <= steps; t++) {
            double g = G[i];
            if (adamw) x[i] *= 1 - lr * wd;
            else g += wd * x[i];
            m = b1 * m + (1 - b1) * g;
            v = b2 * v + (1 - b2) * g * g;
            double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
            x[i] -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps);
        }
    }
}

TEST(optim_adam_matches_torch) {
    xt_config c;
    xt_config_defaults(&c);
    c.optimizer = XT_OPT_ADAM;
    c.learning_rate = 0.01;
    c.weight_decay = 0.03; /* not 0.1: 0.2 + 0.1 * -2 cancels to a rounding residue */
    float w[3];
    double x[3] = {W0[0], W0[1], W0[2]};
    run_optim(&c, W0, G, 5, w);
    adam_ref(0, 0.01, 0.03, 5, x);
    for (int i = 0; i < 3; i++) CHECK_NEAR(w[i], x[i], 2e-6);
    CHECK(fabs(w[0] - W0[0]) > 0.04); /* it moved: ~5 * lr */
}

TEST(optim_adamw_matches_torch) {
    xt_config c;
    xt_config_defaults(&c);
    c.optimizer = XT_OPT_ADAMW;
    c.learning_rate = 0.01;
    c.weight_decay = 0.5;
    float w[3];
    double x[3] = {W0[0], W0[1], W0[2]};
    run_optim(&c, W0, G, 4, w);
    adam_ref(1, 0.01, 0.5, 4, x);
    for (int i = 0; i < 3; i++) CHECK_NEAR(w[i], x[i], 2e-6);
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
