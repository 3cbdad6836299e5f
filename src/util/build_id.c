/* build_id.c — the running executable's GNU build ID; see build_id.h. */
#include "util/build_id.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static char id_hex[2 * 64 + 1];

/* The note NT_GNU_BUILD_ID ("GNU") in one of the object's PT_NOTE segments.
 * The first object dl_iterate_phdr reports is the executable itself. */
static int from_executable(struct dl_phdr_info *info, size_t size, void *done) {
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const unsigned char *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
            const unsigned char *next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                size_t n = nh->n_descsz < 64 ? nh->n_descsz : 64;
                for (size_t k = 0; k < n; k++) snprintf(id_hex + 2 * k, 3, "%02x", desc[k]);
                *(int *)done = 1;
                return 1;
            }
            p = next;
        }
    }
    *(int *)done = 1; /* only the executable is asked */
    return 1;
}

/* A linker that wrote no note (-Wl,--build-id=none): the executable's size
 * and modification time, which a rebuild changes too. */
static void from_file(void) {
    struct stat st;
    if (!stat("/proc/self/exe", &st))
        snprintf(id_hex, sizeof id_hex, "exe-%lld-%lld", (long long)st.st_size, (long long)st.st_mtime);
}

const char *xt_build_id(void) {
    static int done;
    if (!done) {
        dl_iterate_phdr(from_executable, &done);
        if (!id_hex[0]) from_file();
        done = 1;
    }
    return id_hex;
}
