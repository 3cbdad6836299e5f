/* dump.c — graph dumps for debugging recompilation and fusion: for each
 * newly compiled graph, DIR/graph-<hash>.txt (one node per line: id, op,
 * shape, operands, attributes, location, fused group) and
 * DIR/graph-<hash>.before-fusion.dot and DIR/graph-<hash>.fused.dot
 * (Graphviz: the traced graph, and the same with each fused group boxed).
 * Written through io/atomic.h: whole files, never through a symlink. A dump
 * that cannot be written is skipped (it is a debugging aid, not an output). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/plan.h"
#include "kernels/impl.h"
#include "io/atomic.h"

static const char *dtype_tag(int dtype) {
    return dtype == XT_I32 ? ":i32" : dtype == XT_BF16 ? ":bf16" : dtype == XT_U8 ? ":u8" : "";
}

static const char *loc_name(int k) {
    static const char *names[] = {"-", "arena", "slot", "collective", "const"};
    return k >= 0 && k <= 4 ? names[k] : "?";
}

/* Graphviz: the graph as traced; with `clusters`, each fused group boxed. */
static void write_dot(const xt_plan *p, const char *dir, const char *suffix, int clusters) {
    char path[1024], sh[64];
    snprintf(path, sizeof path, "%s/graph-%016llx.%s.dot", dir, (unsigned long long)p->hash, suffix);
    xt_atomic_file af;
    if (xt_atomic_open(&af, path, NULL)) return;
    FILE *f = af.fp;
    fprintf(f, "digraph xlatrain {\n  rankdir=TB; node [shape=box, fontname=monospace, fontsize=10];\n");
    for (int gi = 0; clusters && gi < p->ngroups; gi++) {
        fprintf(f, "  subgraph cluster_%d { label=\"fused #%d\"; style=filled; color=lightblue;\n", gi, gi);
        for (int i = 0; i < p->nnodes; i++)
            if (p->group_of[i] == gi) fprintf(f, "    n%d;\n", i);
        fprintf(f, "  }\n");
    }
    for (int i = 0; i < p->nnodes; i++) {
        const xt_node *n = &p->nodes[i];
        fprintf(f, "  n%d [label=\"%%%d %s%s\\n%s\"%s];\n", i, i, xt_op_table[n->op].name, dtype_tag(n->dtype), xt_shape_str(n, sh, sizeof sh),
                n->op == XT_OP_LEAF ? ", style=filled, fillcolor=lightyellow" : "");
        for (int k = 0; k < n->nin; k++) fprintf(f, "  n%d -> n%d;\n", p->operands[n->in_off + k], i);
    }
    fprintf(f, "}\n");
    xt_atomic_commit(&af, NULL);
}

/* Per node: the micro-batch run its kernel belongs to, or -1. */
static int32_t *runs_of_nodes(const xt_plan *p) {
    int32_t *r = malloc(((size_t)p->nnodes + 1) * sizeof *r);
    if (!r) return NULL;
    for (int i = 0; i < p->nnodes; i++) r[i] = -1;
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        if (kr->run < 0) continue;
        if (kr->group < 0) r[kr->node] = kr->run;
        else
            for (int i = 0; i < p->nnodes; i++)
                if (p->group_of[i] == kr->group) r[i] = kr->run;
    }
    return r;
}

void xt_dump_plan(const xt_plan *p, const char *dir, const char *stage) {
    char path[1024], sh[64];
    int32_t *run_of = runs_of_nodes(p);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/graph-%016llx.txt", dir, (unsigned long long)p->hash);
    xt_atomic_file af;
    if (xt_atomic_open(&af, path, NULL) == 0) {
        FILE *f = af.fp;
        fprintf(f, "# xlatrain graph %016llx (%s): precision %s, %d nodes, %d kernels (%d fused), arena %zu bytes, intermediates %zu bytes\n",
                (unsigned long long)p->hash, stage, xt_precision_name(p->key.precision), p->nnodes, p->nkernels, p->fused_kernels,
                p->arena_bytes, p->intermediate_bytes);
        for (int r = 0; r < p->nruns; r++)
            fprintf(f, "# tile#%d: kernels %d..%d run %d samples at a time (batch %d)\n", r, p->runs[r].first, p->runs[r].last,
                    p->runs[r].rows, p->runs[r].batch);
        for (int k = 0; k < p->nkernels; k++) /* a pair's hand-off (pass_share.c), on each of its kernels */
            if (p->kernels[k].share_off >= 0 && p->kernels[k].group < 0)
                fprintf(f, "# kernel %d (%%%d %s) shares a hand-off at state+%lld\n", k, p->kernels[k].node,
                        xt_op_table[p->nodes[p->kernels[k].node].op].name, (long long)p->kernels[k].share_off);
        for (int i = 0; i < p->nnodes; i++) {
            const xt_node *n = &p->nodes[i];
            fprintf(f, "%%%d = %s%s %s(", i, xt_op_table[n->op].name, dtype_tag(n->dtype), xt_shape_str(n, sh, sizeof sh));
            for (int k = 0; k < n->nin; k++) fprintf(f, k ? ", %%%d" : "%%%d", p->operands[n->in_off + k]);
            fprintf(f, ")");
            if (n->op == XT_OP_CONST) fprintf(f, " value=%g", n->fattr[0]);
            else if (n->iattr[0] || n->iattr[1]) fprintf(f, " attrs=[%d,%d,%d,%d,%d,%d]", n->iattr[0], n->iattr[1], n->iattr[2], n->iattr[3], n->iattr[4], n->iattr[5]);
            const xt_loc *l = &p->loc[i];
            if (l->kind == XT_LOC_SLOT) fprintf(f, " @slot:%d+%lld", l->slot, (long long)l->offset);
            else if (l->kind) fprintf(f, " @%s+%lld", loc_name(l->kind), (long long)l->offset);
            if (l->tile_local) fprintf(f, " (one tile)");
            if (p->group_of[i] >= 0) fprintf(f, " fused#%d", p->group_of[i]);
            if (run_of && run_of[i] >= 0) fprintf(f, " tile#%d", run_of[i]);
            if (xt_plan_layout(p, i)) fprintf(f, " layout=nChw%dc", xt_plan_layout(p, i)); /* pass_layout.c */
            if (p->choice[i].impl) { /* what runs it, and what it reorders per call (what pass_layout.c left) */
                k_op_desc d;
                char impl[160], ro[64];
                xt_choice_op_desc(p, i, &d);
                k_impl_describe(p->choice[i].impl, &d, impl, sizeof impl);
                fprintf(f, " impl=%s", impl);
                if (k_impl_reorders(p->choice[i].impl, &d, ro, sizeof ro)) fprintf(f, " reorders=%.*s", (int)strcspn(ro, " "), ro);
            }
            fputc('\n', f);
        }
        for (int i = 0; i < p->nassign; i++) fprintf(f, "assign slot %d <- %%%d\n", p->assigns[i].slot, p->assigns[i].t);
        for (int i = 0; i < p->nfetch; i++) fprintf(f, "fetch %%%d\n", p->fetch_nodes[i]);
        xt_atomic_commit(&af, NULL);
    }
    free(run_of);
    write_dot(p, dir, "before-fusion", 0);
    write_dot(p, dir, "fused", 1);
}
