/* heatmap.h — confusion.png: a confusion matrix as a labelled heatmap.
 *
 *   xt_heatmap_write("runs/x/confusion.png", counts, 10, names, "title", e);
 *
 * Rows are the true classes, columns the predicted ones, each axis labelled
 * with the class names; every cell prints its count, and its colour is the
 * count's share of its row (white = none, dark blue = all), so a class with
 * few test images reads as clearly as a common one. Text turns white on dark
 * cells. Not here: computing or reducing the counts (run/confusion.c).
 */
#ifndef XT_IO_HEATMAP_H
#define XT_IO_HEATMAP_H

#include "io/png.h"
#include "util/err.h"

/* counts: k x k, row-major [true][predicted]; names: k strings. k from 1 to
 * 256. Writes atomically; 0 or XT_EIO. */
int xt_heatmap_write(const char *path, const long long *counts, int k, const char *const *names, const char *title, xt_err *e);

/* The same figure into img (xt_image_free it after a 0 return), for an
 * image that goes elsewhere than a file (a TensorBoard event). 0 or XT_EIO. */
int xt_heatmap_render(xt_image *img, const long long *counts, int k, const char *const *names, const char *title, xt_err *e);

#endif
