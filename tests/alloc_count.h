/* alloc_count.h — how many heap allocations xlatrain's own code has made.
 *
 * The test binary is linked with -Wl,--wrap for malloc, calloc, realloc,
 * aligned_alloc, posix_memalign and strdup, so every such call made by the
 * objects of src/ and tests/ passes through alloc_count.c first. Calls made
 * inside shared libraries (libc's own, OpenBLAS, libyaml) are not counted:
 * the count answers "does our code allocate here", nothing more.
 */
#ifndef XT_ALLOC_COUNT_H
#define XT_ALLOC_COUNT_H

long long test_alloc_count(void);

#endif
