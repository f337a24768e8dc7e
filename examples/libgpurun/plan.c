/* SPDX-License-Identifier: BSD-3-Clause */
/* Plan with the installed libgpurun, as a program outside gpurun's tree:
 *
 *   cc -o plan plan.c $(pkg-config --cflags --libs gpurun)
 *   ./plan [--topology FILE.xml] [--ranks-per-node R] [--gpus-per-rank G]
 *          [--threads-per-rank T] [--smt] [--oversubscribe] [--rank L]
 *
 * prints the plan `gpurun plan --json` prints for the same request, or with
 * --rank L the binding and environment of local rank L of node 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpurun.h>

static int usage(void)
{
    fprintf(stderr, "usage: plan [--topology FILE.xml] [--ranks-per-node R] [--gpus-per-rank G] "
                    "[--threads-per-rank T] [--smt] [--oversubscribe] [--rank L]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *xml = NULL;
    int local_rank = -1;
    gpurun_error_t err;
    gpurun_plan_request_t *req;
    if (gpurun_api_version() < GPURUN_API_VERSION) {
        fprintf(stderr, "plan: libgpurun offers API %d, this program needs %d\n", gpurun_api_version(),
                GPURUN_API_VERSION);
        return 2;
    }
    if (gpurun_plan_request_create(&req, &err) != 0) {
        fprintf(stderr, "plan: %s\n", err.text);
        return err.code;
    }
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        static const struct {
            const char *flag;
            enum gpurun_request_key key;
        } keys[] = {
            {"--ranks-per-node", GPURUN_REQ_RANKS_PER_NODE},
            {"--gpus-per-rank", GPURUN_REQ_GPUS_PER_RANK},
            {"--threads-per-rank", GPURUN_REQ_THREADS_PER_RANK},
        };
        int found = 0;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (!strcmp(argv[i], keys[k].flag) && i + 1 < argc) {
                rc = gpurun_plan_request_set(req, keys[k].key, atoi(argv[++i]), &err);
                found = 1;
            }
        if (found)
            continue;
        if (!strcmp(argv[i], "--topology") && i + 1 < argc)
            xml = argv[++i];
        else if (!strcmp(argv[i], "--rank") && i + 1 < argc)
            local_rank = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--smt"))
            rc = gpurun_plan_request_set(req, GPURUN_REQ_SMT, 1, &err);
        else if (!strcmp(argv[i], "--oversubscribe"))
            rc = gpurun_plan_request_set(req, GPURUN_REQ_OVERSUBSCRIBE, 1, &err);
        else {
            gpurun_plan_request_destroy(req);
            return usage();
        }
    }
    gpurun_topology_t *topo = NULL;
    gpurun_placement_t *placement = NULL;
    if (rc == 0)
        rc = gpurun_topology_load(xml, 0, &topo, &err);
    if (rc == 0)
        rc = gpurun_placement_create(topo, req, &placement, &err);
    if (rc == 0 && local_rank < 0) {
        char *doc;
        if ((rc = gpurun_placement_json(placement, GPURUN_JSON_INDENT, &doc, &err)) == 0) {
            printf("%s\n", doc);
            free(doc);
        }
    } else if (rc == 0) {
        gpurun_binding_t *b;
        if ((rc = gpurun_binding_get(placement, 0, local_rank, &b, &err)) == 0) {
            printf("rank %d cpus %s mems %s threads %d\n", gpurun_binding_rank(b), gpurun_binding_cpus(b),
                   gpurun_binding_mems(b), gpurun_binding_threads(b));
            const char *name, *value;
            for (size_t i = 0; (name = gpurun_binding_env(b, i, &value)); i++)
                printf("%s=%s\n", name, value);
            gpurun_binding_destroy(b);
        }
    }
    if (rc != 0)
        fprintf(stderr, "plan: %s\n", err.text);
    gpurun_placement_destroy(placement);
    gpurun_topology_destroy(topo);
    gpurun_plan_request_destroy(req);
    return rc;
}
