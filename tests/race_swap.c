/* SPDX-License-Identifier: BSD-3-Clause */
/* The other user's side of tests/cli-pluginrace.sh: exchanges two names
 * (files, symlinks or folders) with renameat2(RENAME_EXCHANGE) as fast as it
 * can, so that a path looked up twice may find each in turn, until the file
 * STOP exists (checked every 4096 exchanges) or 120 s have passed.  Prints
 * how many exchanges it made and how many the kernel refused.
 *   race_swap A B STOP */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: race_swap A B STOP\n");
        return 2;
    }
    unsigned long made = 0, refused = 0;
    time_t end = time(NULL) + 120;
    for (unsigned long i = 0;; i++) {
        if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0)
            made++;
        else
            refused++;
        if (i % 4096 == 0 && (access(argv[3], F_OK) == 0 || time(NULL) > end))
            break;
    }
    printf("%lu exchanges made, %lu refused\n", made, refused);
    return 0;
}
