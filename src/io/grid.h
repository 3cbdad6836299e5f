/* grid.h — the predictions grid PNG: the seed's matplotlib 5x5 figure.
 *
 *   int rc = xt_grid_write("runs/mnist/predictions.png", images, 1, 28, 28,
 *                          labels, preds, 25, NULL, e);
 *
 * Up to 25 images (grayscale, or RGB for 3 channels), 5 per row, each drawn 4x (nearest neighbour)
 * under its title "Actual 7 / Predicted 7" — blue when the prediction is
 * right, red when wrong, as in the seed — on white, with a heading that
 * counts the correct ones. With class names (FashionMNIST, CIFAR-10) titles that would
 * be much wider than the image wrap to two lines, "Actual Sandal" over
 * "Predicted Sneaker", and cells widen to the longest line, so titles never
 * overlap. Not here: choosing which samples to show (the caller's job).
 */
#ifndef XT_IO_GRID_H
#define XT_IO_GRID_H

#include <stdint.h>

#include "io/png.h"
#include "util/err.h"

#define XT_GRID_MAX 25   /* images drawn; more are ignored */
#define XT_GRID_COLS 5
#define XT_GRID_SCALE 4  /* each source pixel becomes 4x4 */

/* images: n * channels * h * w bytes, each image channel-planar (1 channel:
 * gray, 0 = black .. 255 = white as in the IDX files; 3: R, G, B planes as
 * in CIFAR-10's files). actual/predicted: n labels each. class_names: names indexed by
 * label, or NULL to print the label numbers; a NULL entry or a negative label
 * prints the number. Writes atomically; 0 or XT_EIO. */
int xt_grid_write(const char *path, const uint8_t *images, int channels, int h, int w, const int *actual, const int *predicted,
                  int n, const char *const *class_names, xt_err *e);

/* The same figure into img (xt_image_free it after a 0 return), for an
 * image that goes elsewhere than a file (a TensorBoard event). 0 or XT_EIO. */
int xt_grid_render(xt_image *img, const uint8_t *images, int channels, int h, int w, const int *actual,
                   const int *predicted, int n, const char *const *class_names, xt_err *e);

#endif
