/* SPDX-License-Identifier: BSD-3-Clause */
/* Puts a dynamic TLS block where LeakSanitizer's __tls_get_addr interceptor
 * (GCC < 14, LLVM < 17) misreads it, for tests/cli-sanitizer.sh.  Built twice
 * by `make check`, as plain shared objects:
 *   -DDTLS_MODULE  tests/dtls/dtls-module.so: one thread-local int, so its
 *                  TLS block is malloc()ed by ld.so on first use;
 *   otherwise      tests/dtls/dtls-trigger.so, for LD_PRELOAD: before main()
 *                  it dlopen()s $DTLS_MODULE, frees a malloc(sizeof(int))
 *                  block at page offset 16 so that ld.so gets it back (needs
 *                  ASAN_OPTIONS=quarantine_size_mb=0:thread_local_quarantine_size_kb=0),
 *                  touches the module's int and says where its block lies.
 * The interceptor then takes the 16 bytes before the block (ASan's chunk
 * header) for a glibc 2.19 TLS header, and the tracer of the leak check at
 * exit scans the range they make up.  Outside AddressSanitizer it says so and
 * does nothing. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DTLS_MODULE
__thread int dtls_value;

int *dtls_address(void);
int *dtls_address(void)
{
    return &dtls_value;
}
#else
enum { PAGE = 4096, HEADER = 16, TRIES = 4096 };
static void *kept[TRIES]; /* the blocks before the one handed back: static, so not leaks */

__attribute__((constructor)) static void trigger(void)
{
    if (!dlsym(RTLD_DEFAULT, "__asan_init")) {
        fprintf(stderr, "dtls-trigger: not under AddressSanitizer\n");
        return;
    }
    /* gpurun's children must not load it again. */
    unsetenv("LD_PRELOAD");
    const char *path = getenv("DTLS_MODULE");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    void *sym = h ? dlsym(h, "dtls_address") : NULL;
    if (!sym) {
        fprintf(stderr, "dtls-trigger: cannot load dtls_address from %s\n", path ? path : "$DTLS_MODULE");
        return;
    }
    int *(*address)(void);
    memcpy(&address, &sym, sizeof sym);
    /* Everything ld.so needs but the block itself is allocated by now. */
    void *p = NULL;
    for (size_t i = 0; i < TRIES && !p; i++) {
        kept[i] = malloc(sizeof(int));
        if ((uintptr_t)kept[i] % PAGE == HEADER) {
            p = kept[i];
            kept[i] = NULL;
        }
    }
    free(p);
    fprintf(stderr, "dtls-trigger: TLS block at page offset %u\n", (unsigned)((uintptr_t)address() % PAGE));
    for (size_t i = 0; i < TRIES; i++) {
        free(kept[i]);
        kept[i] = NULL;
    }
}
#endif
