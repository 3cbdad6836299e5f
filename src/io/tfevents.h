/* tfevents.h — a TensorBoard event file: the TFRecord-framed `Event`
 * protobufs that `tensorboard --logdir DIR` reads.
 *
 *   xt_tfevents w;
 *   if (xt_tfevents_open(&w, "runs/mnist/tb", e)) return e->code;
 *   xt_tfevents_scalar(&w, "train/loss", step, wall, 0.52f);
 *   xt_tfevents_image(&w, "test/confusion", step, wall, png, len, w, h);
 *   xt_tfevents_flush(&w, e);       // a live TensorBoard sees it now
 *   xt_tfevents_close(&w);
 *
 * The file is DIR/events.out.tfevents.<seconds>.<host>.<pid> (TensorFlow's
 * name: TensorBoard finds files by "tfevents" in the name, recursively, and
 * treats each directory as one run). Its first record is the Event
 * {file_version: "brain.Event:2"}. Each record is
 *   u64 length (little-endian), u32 masked CRC-32C of those 8 bytes,
 *   the Event bytes, u32 masked CRC-32C of the Event bytes.
 * The Event fields written (tensorflow/core/util/event.proto and
 * framework/summary.proto): wall_time 1 (double), step 2 (int64),
 * file_version 3, summary 5 { value 1 { tag 1, simple_value 2 (float),
 * image 4 { height 1, width 2, colorspace 3, encoded_image_string 4 } } },
 * session_log 7 { status 1 } (START: see xt_tfevents_session_start).
 * Errors are XT_EIO naming the file. Is not: which values a run logs and
 * when (run/tb.c), or a reader (the tests decode with Debian's protobuf).
 */
#ifndef XT_IO_TFEVENTS_H
#define XT_IO_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/err.h"

typedef struct xt_tfevents {
    FILE *fp;
    char path[1200];
    int write_errno;    /* first failed write's errno: reported by the next flush */
} xt_tfevents;

/* Create dir (and its parents) and a new event file in it (never an
 * existing one: a second file in the same second gets a ".N" suffix),
 * holding the file_version record. 0 or XT_EIO. */
int xt_tfevents_open(xt_tfevents *w, const char *dir, xt_err *e);

/* Records (buffered until the next flush). The return is 0, or -1 after a
 * failed write (also reported by xt_tfevents_flush). */
int xt_tfevents_scalar(xt_tfevents *w, const char *tag, long long step, double wall_time, float value);
/* A PNG of width x height pixels as an image summary (colorspace 3: RGB). */
int xt_tfevents_image(xt_tfevents *w, const char *tag, long long step, double wall_time, const uint8_t *png,
                      size_t len, int width, int height);
/* SessionLog START at `step`: TensorBoard drops what the directory's earlier
 * files logged at this step and later (a resumed run repeats those steps). */
int xt_tfevents_session_start(xt_tfevents *w, long long step, double wall_time);

/* Hand the buffered records to the kernel. 0 or XT_EIO. */
int xt_tfevents_flush(xt_tfevents *w, xt_err *e);
/* Flush (errors ignored) and close. Idempotent. */
void xt_tfevents_close(xt_tfevents *w);

#endif
