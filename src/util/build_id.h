/* build_id.h — which build of the program is running: the GNU build ID the
 * linker writes into the executable (a hash of its code and data), as hex.
 *
 * Is: an identity that changes with every change to the code, so a cache of
 * measurements made with one build's kernels (the kernel-choice cache,
 * engine/choice.c) is never read by another build's. Is not: a version for
 * people (util/version.h), nor stable across rebuilds of the same source
 * with another compiler or flags (that is the point).
 */
#ifndef XT_BUILD_ID_H
#define XT_BUILD_ID_H

/* The executable's build ID as hex; without one, "exe-SIZE-MTIME" of
 * /proc/self/exe ("" when neither is known). */
const char *xt_build_id(void);

#endif
