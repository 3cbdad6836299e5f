/* env_vars.c — the environment variable table (see env_vars.h). The order is
 * --help's; rows without help text are documented in the man page only
 * (debugging switches, and the variables the shell or a launcher sets). */
#include "util/env_vars.h"

#include <stddef.h>

const xt_env_var xt_env_vars[] = {
    {"XLATRAIN_SAVE_GRAPHS", "config/config.c, engine/engine.c", "directory for graph dumps when save_graphs is not set"},
    {"XLA_USE_BF16", "config/config.c",
     "1: bf16 mixed precision when the config does not set\nprecision (as torch_xla); 0 or unset: fp32"},
    {"XLATRAIN_BF16_PATH", "kernels/bf16.c",
     "ref: the bf16 kernels' portable path even with AVX512-BF16;\nauto or unset: per shape; anything else: usage error"},
    {"XLATRAIN_ISA", "kernels/simd.c, config/config.c",
     "avx512, avx2 or generic: the widest vector instructions the\nkernels use, over the config's isa; auto or unset: the CPU's"},
    {"XLATRAIN_KERNEL_CHOICE", "config/config.c",
     "measured or fixed: how each convolution and matrix product\nchooses its kernel, over the config's kernel_choice"},
    {"XLATRAIN_CACHE_DIR", "engine/choice.c", "where measured kernel choices are cached per CPU model\n(default $XDG_CACHE_HOME/xlatrain)"},
    {"OPENBLAS_NUM_THREADS", "OpenBLAS", "OpenBLAS's thread count; workers use blas_threads"},
    {"ONEDNN_MAX_CPU_ISA", "oneDNN", "oneDNN's ISA cap (AVX2, AVX512_CORE, ...) for its candidate\nkernels; the kernel report names what it picked"},
    {"ONEDNN_VERBOSE", "oneDNN", NULL},
    {"XLATRAIN_DATA_MIRROR", "data/download.c", NULL},
    {"XLATRAIN_NO_MEMORY_PLANNER", "engine/engine.c", NULL},
    {"XLATRAIN_NO_TILING", "engine/engine.c", NULL},
    {"XLATRAIN_NO_REMAT", "engine/engine.c", NULL},
    {"XLATRAIN_NO_LAYOUT", "engine/engine.c", NULL},
    {"PATH", "data/download.c", NULL},
    {"XDG_CACHE_HOME", "engine/choice.c", NULL},
    {"HOME", "engine/choice.c", NULL},
    /* a test hook: skews this worker's kernel timings, to show choices still agree */
    {"XLATRAIN_CHOICE_TEST_SKEW", "run/loop.c", NULL},
    /* set by the launcher: their presence is how an MPI=1 build knows mpirun or srun started it */
    {"OMPI_COMM_WORLD_SIZE", "distributed/cluster_mpi.c", NULL},
    {"PMIX_RANK", "distributed/cluster_mpi.c", NULL},
    {"PMI_RANK", "distributed/cluster_mpi.c", NULL},
    {"PMI_SIZE", "distributed/cluster_mpi.c", NULL},
};
const int xt_nenv_vars = (int)(sizeof xt_env_vars / sizeof *xt_env_vars);
