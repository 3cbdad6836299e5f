/* image_resize.h — resample an 8-bit interleaved image to (h, w), for
 * `resize: [h, w]` of the folder dataset.
 *
 * Each axis on its own (the filters are separable): an axis that shrinks is
 * area-averaged (every source pixel weighted by how much of it falls in the
 * destination pixel, OpenCV's INTER_AREA), so shrinking never skips pixels
 * and never aliases; an axis that grows is bilinear with pixel centres
 * aligned (align_corners=False, as OpenCV's INTER_LINEAR and PyTorch's
 * interpolate), so growing never makes blocks; an axis of equal size is
 * copied. Results are rounded to the nearest integer.
 * Not here: decoding (image_decode.h), channel conversion.
 */
#ifndef XT_DATA_IMAGE_RESIZE_H
#define XT_DATA_IMAGE_RESIZE_H

#include <stddef.h>
#include <stdint.h>

/* src (sh, sw, channels) into dst (dh, dw, channels). 0, or -1 when out of
 * memory (the only failure: it needs two rows of floats per call). */
int xt_image_resize(const uint8_t *src, int sh, int sw, uint8_t *dst, int dh, int dw, int channels);

/* The same filters without allocating, for callers that resample many
 * windows (random_resized_crop): src is a window of (sh, sw, channels)
 * whose rows lie src_stride bytes apart, sh <= max_sh and sw <= max_sw;
 * scratch holds xt_image_resize_scratch(max_sh, max_sw, dh, dw, channels)
 * bytes, suitably aligned for float (malloc's is). */
size_t xt_image_resize_scratch(int max_sh, int max_sw, int dh, int dw, int channels);
void xt_image_resize_window(const uint8_t *src, size_t src_stride, int sh, int sw, int max_sh, int max_sw,
                            uint8_t *dst, int dh, int dw, int channels, void *scratch);

#endif
