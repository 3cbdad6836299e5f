/* softmax.c — row-wise log-softmax and its backward.
 *
 * Is: y = x - max(x) - log(sum exp(x - max(x))) per contiguous row (the max
 * shift keeps exp from overflowing and the largest term exactly exp(0) = 1, so
 * the log never sees 0), and dx = dy - exp(y) * sum(dy).
 * Is not: the NLL loss or plain softmax (engine-level compositions).
 */
#include "kernels/kernels.h"

#include <math.h>

void k_log_softmax_fwd(int rows, int cols, float *y, const float *x) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float m = xr[0];
        for (int c = 1; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (int c = 0; c < cols; c++) s += expf(xr[c] - m);
        /* (x - m) - log s, not x - (m + log s): for |m| ~ 1000 the float sum
         * m + log s would round away ~3e-5 of every output */
        float ls = (float)log(s);
        for (int c = 0; c < cols; c++) yr[c] = (xr[c] - m) - ls;
    }
}

void k_log_softmax_bwd(int rows, int cols, float *dx, const float *dy, const float *y) {
    for (int r = 0; r < rows; r++) {
        const float *g = dy + (size_t)r * cols, *yr = y + (size_t)r * cols;
        float *d = dx + (size_t)r * cols;
        double s = 0.0;
        for (int c = 0; c < cols; c++) s += g[c];
        float sf = (float)s;
        for (int c = 0; c < cols; c++) d[c] = g[c] - expf(yr[c]) * sf;
    }
}
