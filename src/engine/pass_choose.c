/* pass_choose.c — which implementation each convolution pass and matrix
 * product runs (kernels/impl.h), decided once when the plan compiles and
 * recorded in the plan (xt_plan.choice), so the kernels take it as an
 * argument instead of deciding per call.
 *
 * Each node is described as its kernel is called: a micro-batch tile's
 * samples (pass_tile.c runs before), what is fused into it, the precision of
 * its operands. Its candidates are the implementations valid for that
 * description, today's rule first (k_impl_candidates).
 *
 * `kernel_choice: fixed` takes the rule (k_impl_rule: the k_conv2d_* entry
 * points' own choice, so the bits are those of the rules). `measured` (the
 * default) times every candidate of a node with more than one on the node's
 * real shapes, on scratch operands (the kernel function the step calls,
 * through the plan, so nothing is timed that the step would not run), and
 * takes the fastest. Identical descriptions are timed once per engine, and
 * not at all when the engine's table already holds them (a checkpoint's
 * choices on --resume) or the choice cache on disk does (choice.c).
 *
 * Several workers must run the same implementations, or their sums differ
 * in order and 1x2 = 2x1 and resume stop being bit-identical. So only worker
 * 0 of host 0 (the leader) times; in a graph with an all-reduce (every worker
 * compiles it at the same step) its choices reach the others through
 * `agree` (the mesh-reduce over shared memory and, across hosts, the parent's
 * MPI uplink: a sum of the leader's values and the others' zeros). A graph
 * without one in a run of several workers (evaluation, whose last batch may
 * differ per worker) decides nothing new: it takes the choices already
 * agreed, else the rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/choice.h"
#include "engine/plan.h"
#include "kernels/impl.h"

/* The samples per call of the node's kernel: its tile's, or the whole batch. */
static int32_t rows_of(const xt_plan *p, int k, int32_t whole) {
    int r = p->kernels[k].run;
    return r >= 0 ? p->runs[r].rows : whole;
}

/* ---- timing one node's candidates ------------------------------------------------ */

enum { REPS_MIN = 3, REPS_MAX = 20 };
#define CAND_NS_MAX 40e6 /* time spent on one candidate of one node at most */

static void *zalloc64(size_t bytes) {
    void *m = aligned_alloc(64, (bytes + 127) & ~(size_t)63);
    if (m) memset(m, 0, (bytes + 127) & ~(size_t)63);
    return m;
}

/* Operand data a kernel can run on: small values, and argmax cells 0..3. */
static void fill(void *buf, const xt_node *n, int64_t count) {
    uint32_t r = 0x12345u;
    for (int64_t i = 0; i < count; i++) {
        r = r * 1664525u + 1013904223u;
        float v = (float)((r >> 8) & 0xffff) / 32768.0f - 1.0f;
        if (n->dtype == XT_F32) ((float *)buf)[i] = v;
        else if (n->dtype == XT_BF16) ((uint16_t *)buf)[i] = k_bf16_from_f32(v);
        else ((uint8_t *)buf)[i * xt_dtype_size(n->dtype)] = (uint8_t)(i & 3);
    }
}

/* Best-of time per call, in microseconds, of each candidate of kernel k's node. */
static int time_node(xt_plan *p, int k, xt_choice_rec *c) {
    int node = p->kernels[k].node;
    const xt_node *n = &p->nodes[node];
    void *ptrs[16] = {0}, *out = NULL, *scratch = NULL, *state = NULL;
    int rc = -1, nin = n->nin < 16 ? n->nin : 16;
    size_t sb = 0, st = 0;
    k_op_desc d;
    xt_node_op_desc(p, n, &d);
    for (int j = 0; j < c->ncand; j++) {
        size_t a = k_impls[c->cand[j]].scratch(c->cand[j], &d), b = k_impls[c->cand[j]].state(c->cand[j], &d);
        sb = a > sb ? a : sb;
        st = b > st ? b : st;
    }
    for (int i = 0; i < nin; i++) {
        const xt_node *o = &p->nodes[p->operands[n->in_off + i]];
        int64_t cnt = o->op == XT_OP_CONST ? 1 : xt_numel(o);
        if (!(ptrs[i] = zalloc64((size_t)cnt * xt_dtype_size(o->dtype) + 64))) goto out;
        fill(ptrs[i], o, cnt);
    }
    if (!(out = zalloc64((size_t)xt_numel(n) * xt_dtype_size(n->dtype) + 64)) || !(scratch = zalloc64(sb + 64)) ||
        !(state = zalloc64(st + 64)))
        goto out;
    int tiled = p->kernels[k].run >= 0;
    xt_kcall call = {.p = p, .n = n, .in = ptrs, .out = out, .scratch = scratch, .scratch_bytes = sb + 64, .row0 = 0,
                     .rows = tiled ? c->rows : 0, .batch = tiled ? c->rows : 0, .state = tiled ? state : NULL};
    int keep = p->choice[node].impl;
    for (int j = 0; j < c->ncand; j++) {
        p->choice[node].impl = c->cand[j];
        xt_kernel_table[n->op](&call); /* warm-up: caches, page faults */
        double best = 1e30, spent = 0;
        for (int r = 0; r < REPS_MAX && (r < REPS_MIN || spent < CAND_NS_MAX / 4) && spent < CAND_NS_MAX; r++) {
            uint64_t t0 = xt_now_ns();
            xt_kernel_table[n->op](&call);
            double ns = (double)(xt_now_ns() - t0);
            spent += ns;
            if (ns < best) best = ns;
        }
        c->us[j] = (float)(best / 1e3);
    }
    p->choice[node].impl = keep;
    rc = 0;
out:
    for (int i = 0; i < nin; i++) free(ptrs[i]);
    free(out);
    free(scratch);
    free(state);
    return rc;
}

static int index_of(const xt_choice_rec *c, int impl) {
    for (int j = 0; j < c->ncand; j++)
        if (c->cand[j] == impl) return j;
    return -1;
}

/* ---- the pass ---------------------------------------------------------------------- */

static int has_collective(const xt_plan *p) {
    for (int k = 0; k < p->nkernels; k++)
        if (p->kernels[k].group < 0 && p->nodes[p->kernels[k].node].op == XT_OP_ALLREDUCE) return 1;
    return 0;
}

static const char *how_name(int how) {
    static const char *const names[] = {"-", "rule", "only", "timed", "cached", "agreed"};
    return how >= 0 && how <= XT_CHOSE_AGREED ? names[how] : "?";
}

void xt_choice_op_desc(const xt_plan *p, int node, k_op_desc *d) {
    xt_node_op_desc(p, &p->nodes[node], d);
    if (d->kind != K_OP_MATMUL) d->s.N = p->choice[node].rows;
}

void xt_choice_line(const xt_plan *p, int node, char *buf, size_t cap) {
    const xt_choice_rec *c = &p->choice[node];
    k_op_desc d;
    xt_choice_op_desc(p, node, &d);
    char what[128];
    xt_choice_describe(&d, what, sizeof what);
    size_t o = (size_t)snprintf(buf, cap, "%s:", what);
    for (int j = 0; j < c->ncand && o < cap; j++) {
        if (c->us[j] >= 0) o += (size_t)snprintf(buf + o, cap - o, " %s %.1fus", k_impls[c->cand[j]].name, c->us[j]);
        else o += (size_t)snprintf(buf + o, cap - o, " %s", k_impls[c->cand[j]].name);
        if (j + 1 < c->ncand && o < cap) o += (size_t)snprintf(buf + o, cap - o, ",");
    }
    char won[160];
    k_impl_describe(c->impl, &d, won, sizeof won);
    if (o < cap) snprintf(buf + o, cap - o, " -> %s (%s)", won, how_name(c->how));
}

int xt_pass_choose(xt_plan *p, const uint8_t *live, const xt_choose_opts *o, xt_err *e) {
    (void)live;
    int nmulti = 0;
    for (int k = 0; k < p->nkernels; k++) {
        if (p->kernels[k].group >= 0) continue;
        int i = p->kernels[k].node;
        k_op_desc d;
        if (!xt_node_op_desc(p, &p->nodes[i], &d)) continue;
        if (d.kind != K_OP_MATMUL) d.s.N = rows_of(p, k, d.s.N);
        xt_choice_rec *c = &p->choice[i];
        c->rows = d.kind == K_OP_MATMUL ? d.M : d.s.N;
        c->impl = (uint8_t)k_impl_rule(&d);
        int cand[XT_CHOICE_MAX_CANDS];
        c->ncand = (uint8_t)k_impl_candidates(&d, cand, XT_CHOICE_MAX_CANDS);
        c->how = c->ncand > 1 ? XT_CHOSE_RULE : XT_CHOSE_ONLY;
        for (int j = 0; j < c->ncand; j++) {
            c->cand[j] = (uint8_t)cand[j];
            c->us[j] = -1.0f;
        }
        nmulti += c->ncand > 1;
    }
    /* A probing compile (compile.c's bf16-or-fp32 decision) times single
     * candidates too: a node whose one bf16 kernel is the reference one (no
     * AVX512-BF16, as on every AVX2 CPU) must be compared with its fp32
     * kernel, or asking for bf16 would run it several times slower. */
    if (!o || !o->measured || (!nmulti && !o->probe)) return 0;

    xt_choices *t = o->table;
    int collective = has_collective(p);
    int exchange = o->agree && collective && !o->probe;
    int decide = !o->agree || o->probe || (o->leader && collective); /* time and take new choices here */
    int solo = !o->agree;                                               /* one process: its choices are everyone's */
    double *v = exchange ? calloc((size_t)nmulti, sizeof *v) : NULL;
    if (exchange && !v) return xt_fail(e, XT_ERUNTIME, "out of memory choosing kernels");
    int m = 0, timed_nodes = 0, timed_cands = 0;
    for (int k = 0; k < p->nkernels; k++) {
        if (p->kernels[k].group >= 0) continue;
        int i = p->kernels[k].node;
        xt_choice_rec *c = &p->choice[i];
        if (c->ncand < 1 || (c->ncand == 1 && !o->probe)) continue;
        k_op_desc d;
        xt_choice_op_desc(p, i, &d);
        uint64_t key = xt_choice_key(&d);
        xt_choice_entry *en = xt_choices_find(t, key);
        int impl = 0, how = XT_CHOSE_RULE;
        float us = -1.0f;
        if (en && (en->agreed || decide) && index_of(c, en->impl) >= 0) {
            impl = en->impl;
            how = en->agreed && !solo ? XT_CHOSE_AGREED : en->from;
            if (solo && !o->probe) en->agreed = 1; /* one process: what it runs is the run's choice */
            if (en->us >= 0 && index_of(c, impl) >= 0) c->us[index_of(c, impl)] = en->us;
        } else if (decide && xt_choices_cache_get(t, key, &impl, &us) && index_of(c, impl) >= 0) {
            how = XT_CHOSE_CACHED;
            t->cache_hits++;
            c->us[index_of(c, impl)] = us;
            if (!xt_choices_put(t, key, impl, us, solo, XT_CHOSE_CACHED)) impl = 0;
        } else if (decide) {
            impl = 0;
            if (o->skew) {
                for (int j = 0; j < c->ncand; j++)
                    c->us[j] = (float)(o->leader || o->skew == 2 ? 1 + c->ncand - 1 - j : 1 + j);
            } else if (time_node(p, k, c)) {
                free(v);
                return xt_fail(e, XT_ERUNTIME, "out of memory timing the kernels of a graph of %d nodes", p->nnodes);
            }
            int best = 0;
            for (int j = 1; j < c->ncand; j++)
                if (c->us[j] < c->us[best]) best = j;
            impl = c->cand[best];
            us = c->us[best];
            how = XT_CHOSE_TIMED;
            timed_nodes++;
            timed_cands += c->ncand;
            if (!o->skew && !o->probe && !xt_choices_put(t, key, impl, us, solo, XT_CHOSE_TIMED)) impl = 0;
            if (o->probe && !o->skew && !xt_choices_put(t, key, impl, us, 0, XT_CHOSE_TIMED)) impl = 0;
            if (o->skew && !xt_choices_put(t, key, impl, us, solo, XT_CHOSE_AGREED)) impl = 0;
        } else {
            impl = 0; /* not decided here: the rule, unless an exchange brings the leader's */
        }
        if (impl) {
            c->impl = (uint8_t)impl;
            c->how = (uint8_t)how;
        }
        if (c->ncand == 1) continue; /* timed for the probe only: nothing to exchange */
        if (exchange) v[m] = o->leader ? (double)c->impl : 0.0;
        m++;
    }
    t->timed_nodes += timed_nodes;
    t->timed_candidates += timed_cands;
    if (!o->probe) p->choice_timed = timed_cands;
    if (exchange) {
        int rc = o->agree(o->agree_ctx, v, nmulti, e);
        if (rc) {
            free(v);
            return rc;
        }
        m = 0;
        for (int k = 0; k < p->nkernels; k++) {
            if (p->kernels[k].group >= 0) continue;
            int i = p->kernels[k].node;
            xt_choice_rec *c = &p->choice[i];
            if (c->ncand <= 1) continue;
            int impl = (int)v[m++];
            if (index_of(c, impl) < 0) {
                char line[512];
                xt_choice_line(p, i, line, sizeof line);
                free(v);
                return xt_fail(e, XT_ERUNTIME, "worker 0 chose kernel %d, which this worker cannot run, for %s; run with "
                               "kernel_choice: fixed or XLATRAIN_KERNEL_CHOICE=fixed", impl, line);
            }
            k_op_desc d;
            xt_choice_op_desc(p, i, &d);
            if (!o->leader) {
                c->impl = (uint8_t)impl;
                c->how = XT_CHOSE_AGREED;
            }
            if (!xt_choices_put(t, xt_choice_key(&d), impl, c->us[index_of(c, impl)], 1,
                                o->leader ? c->how : XT_CHOSE_AGREED)) {
                free(v);
                return xt_fail(e, XT_ERUNTIME, "out of memory choosing kernels");
            }
        }
    }
    free(v);
    if (decide && !o->probe && !o->skew) xt_choices_cache_save(t); /* writes only when something was timed */
    return 0;
}
