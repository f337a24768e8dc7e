/* SPDX-License-Identifier: BSD-3-Clause */
/* A program of the build with nothing of gpurun's in it, so none of
 * launcher/cli/main.c's sanitizer defaults: under tests/dtls/dtls-trigger.so
 * (tests/cli-sanitizer.sh) only the suite's LSAN_OPTIONS keep its leak check
 * at exit from crashing, as they must for the unit tests and examples. */
int main(void)
{
    return 0;
}
