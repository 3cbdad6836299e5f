/* alloc_count.c — the allocation counter behind alloc_count.h: wrappers
 * that count, then call the real allocator (which is ASan's under make asan). */
#include "alloc_count.h"

#include <stddef.h>

static long long g_allocs;

long long test_alloc_count(void) { return __atomic_load_n(&g_allocs, __ATOMIC_RELAXED); }

static void count(void) { __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED); }

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
char *__real_strdup(const char *s);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
char *__wrap_strdup(const char *s);

void *__wrap_malloc(size_t n) { count(); return __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { count(); return __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { count(); return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { count(); return __real_aligned_alloc(a, n); }
int __wrap_posix_memalign(void **p, size_t a, size_t n) { count(); return __real_posix_memalign(p, a, n); }
char *__wrap_strdup(const char *s) { count(); return __real_strdup(s); }
