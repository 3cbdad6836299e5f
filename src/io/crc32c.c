/* crc32c.c — CRC-32C a byte at a time from a 256-entry table (built on first
 * use): event files are a few hundred kilobytes, so speed does not matter
 * and no CPU instruction (SSE4.2 crc32) is needed. */
#include "io/crc32c.h"

#include <pthread.h>

static uint32_t g_table[256];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        g_table[i] = c;
    }
}

uint32_t xt_crc32c(const void *data, size_t n) {
    pthread_once(&g_once, build_table);
    const uint8_t *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = g_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t xt_crc32c_masked(const void *data, size_t n) {
    uint32_t c = xt_crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
