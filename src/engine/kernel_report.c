/* kernel_report.c — the per-kernel profile: where a compiled step's time
 * goes, kernel by kernel, for `train_bench --kernels` and anyone tuning the
 * engine or a kernel.
 *
 * Is: one table per cached executable that ran with the engine's `profile`
 * option on, kernels in execution order: the op (or the fused group and its
 * ops), the output's shape, the micro-batch run it belongs to, microseconds
 * per step, its share of the step's kernel time, and for convolutions and
 * GEMMs the arithmetic rate (2 FLOPs per multiply-add executed,
 * xt_kernel_macs_executed: a weight gradient that skips a max pool's zeros
 * is rated on the quarter it multiplies, so no rate passes the FMA limit).
 * Why a table per kernel: the metrics report's class totals (Kernel.conv,
 * ...) say that convolutions take 70% of a step, not which of the five, in
 * which pass, at what share of the FMA limit; every tuning round started by
 * re-adding this timing by hand.
 * Is not: the timing (exec.c adds each kernel's wall time to
 * xt_plan.kernel_ns while `profile` is on), the engine-wide entry points
 * (engine.c: every cached plan's table, and the reset) or the class totals
 * (metrics.c).
 * Each row names the implementation the node runs (pass_choose.c) and, for
 * a library's, the operands it reorders into its own layout on every call
 * with the share of its time that takes (what pass_layout.c has not yet
 * removed); the table ends with each choice's candidates and their times
 * per call. */
#include <stdio.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/plan.h"
#include "kernels/impl.h"

/* "fused: MUL ADD RELU_BWD" (the group's ops in graph order, shortened to fit) */
static void group_label(const xt_plan *p, int group, char *buf, size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "fused:");
    for (int i = 0; i < p->nnodes && len < cap; i++) {
        if (p->group_of[i] != group) continue;
        const char *op = xt_op_table[p->nodes[i].op].name;
        if (len + strlen(op) + 5 >= cap) {
            snprintf(buf + len, cap - len, " ...");
            return;
        }
        len += (size_t)snprintf(buf + len, cap - len, " %s", op);
    }
}

void xt_plan_kernel_report(const xt_plan *p, FILE *f) {
    if (p->profiled_steps <= 0) return;
    double total = 0.0;
    for (int k = 0; k < p->nkernels; k++) total += p->kernel_ns[k];
    double steps = (double)p->profiled_steps;
    fprintf(f, "kernel profile: graph %016llx, %s, %d kernels, %lld steps: %.1f us of kernels per step\n",
            (unsigned long long)p->hash, xt_precision_name(p->key.precision), p->nkernels,
            (long long)p->profiled_steps, total / steps / 1e3);
    fprintf(f, "%4s  %-36s %-20s %-7s %10s %7s %8s  %s\n", "#", "kernel", "output", "run", "us/step", "share", "GFLOP/s",
            "implementation");
    int nreorder = 0;
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        const xt_node *n = &p->nodes[kr->node];
        char what[37], shape[64], run[16], rate[16] = "-";
        if (kr->group >= 0) group_label(p, kr->group, what, sizeof what);
        else snprintf(what, sizeof what, "%s%s", xt_op_table[n->op].name, n->dtype == XT_BF16 ? ":bf16" : "");
        xt_shape_str(n, shape, sizeof shape);
        if (kr->run >= 0) snprintf(run, sizeof run, "tile#%d", kr->run);
        else snprintf(run, sizeof run, "-");
        double us = p->kernel_ns[k] / steps / 1e3, macs = kr->group >= 0 ? 0.0 : xt_kernel_macs_executed(p, n);
        if (macs > 0.0 && us > 0.0) snprintf(rate, sizeof rate, "%.1f", 2.0 * macs / (us * 1e3));
        const xt_choice_rec *c = kr->group >= 0 ? NULL : &p->choice[kr->node];
        char impl[160] = "";
        if (c && c->impl) { /* with the library's own name for it: AMX shows as brgconv:avx512_core_amx_bf16 */
            k_op_desc d;
            xt_choice_op_desc(p, kr->node, &d);
            k_impl_describe(c->impl, &d, impl, sizeof impl);
            char ro[64];
            if (k_impl_reorders(c->impl, &d, ro, sizeof ro)) {
                size_t len = strlen(impl);
                snprintf(impl + len, sizeof impl - len, " reorders %s", ro);
                nreorder++;
            }
        }
        fprintf(f, "%4d  %-36s %-20s %-7s %10.1f %6.1f%% %8s  %s\n", k, what, shape, run, us,
                total > 0.0 ? 100.0 * p->kernel_ns[k] / total : 0.0, rate, impl);
    }
    if (nreorder)
        fprintf(f, "      %d kernels reorder operands on every call (\"reorders src,dst N%%\": the operands, and the share "
                   "of the library call's time); values are NCHW between kernels\n", nreorder);
    /* the choices behind the implementations: every candidate's time per call */
    for (int k = 0; k < p->nkernels; k++) {
        const xt_kernel *kr = &p->kernels[k];
        if (kr->group >= 0 || p->choice[kr->node].ncand <= 1) continue;
        char line[600];
        xt_choice_line(p, kr->node, line, sizeof line);
        fprintf(f, "      choice for #%d: %s\n", k, line);
    }
}
