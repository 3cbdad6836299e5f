/* confusion.h — the evaluation report of a run's last evaluation: the
 * confusion matrix summed over every worker's shard, written as
 * confusion.json and confusion.png (eval-confusion.* for --eval-only, which
 * leaves the run's own alone), and the per-class accuracy, precision and
 * recall that results.json / eval.json carry. Also the class names.
 * Not here: counting a shard's predictions (eval.c) or drawing (io/heatmap.c). */
#ifndef XT_RUN_CONFUSION_H
#define XT_RUN_CONFUSION_H

#include "io/jsonw.h"
#include "io/png.h"
#include "run/run.h"
#include "util/err.h"

/* Sum every replica's k x k counts `local` ([true][predicted]) into
 * r->confusion; every replica calls it at the same point. */
int xt_confusion_reduce(xt_run *r, int rank, const long long *local, xt_err *e);
/* confusion.json and confusion.png from r->confusion (nothing without one). */
int xt_confusion_write(const xt_run *r, xt_err *e);
/* results.json's "per_class": per class its support, accuracy (the share of
 * its images classified right, as torchmetrics' per-class accuracy; equal to
 * its recall), precision and recall; null without a matrix. */
void xt_confusion_per_class(const xt_run *r, xt_jsonw *w);
/* The heatmap of r->confusion under `title` into img (img->px NULL without a
 * matrix; else xt_image_free it): confusion.png's figure, for TensorBoard too. */
int xt_confusion_render(const xt_run *r, const char *title, xt_image *img, xt_err *e);
/* Class c's name: the dataset's, or the digit itself into buf. */
const char *xt_confusion_class_name(const xt_run *r, int c, char *buf, size_t cap);

#endif
