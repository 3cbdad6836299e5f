/* loop.h — one replica's training run, as the seed's train_mnist(): epochs of
 * training steps over its shard, an evaluation after each, the logs and (the
 * master) metrics, checkpoints, curves and the end-of-run outputs; or one
 * evaluation under --eval-only. Run in a forked worker per core, or
 * in-process with one core. Not here: setting the run up or spawning the
 * workers (train.c). */
#ifndef XT_RUN_LOOP_H
#define XT_RUN_LOOP_H

/* Replica `rank` of the xt_run at `arg` (an xt_spawn worker function).
 * Returns an exit code; a failure's message goes to the supervisor through
 * r->dist, or into r->err with one process. */
int xt_worker_main(int rank, void *arg);

#endif
