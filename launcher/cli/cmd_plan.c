/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun plan: the per-rank binding for a job file or flags, as a table or
 * as the version-1 JSON document of SPEC §5. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "gpurun.h"
#include "gpurun_private.h"
#include "job.h"
#include "plan.h"

static const char plan_usage[] =
    "Usage: gpurun plan [JOB.conf] [--topology FILE.xml] [--nodes N] [--ranks-per-node R]\n"
    "                   [--gpus-per-rank G] [--ranks-per-gpu N] [--threads-per-rank T] [--smt]\n"
    "                   [--oversubscribe] [--cpu-locality package|gpu] [--json]\n"
    "\n"
    "Show which GPUs, NICs, cores and NUMA memory every rank gets. Flags override the job file.\n"
    "\n"
    "  --topology FILE.xml     plan for an hwloc XML export instead of this node\n"
    "  --nodes N               nodes (the plan of this topology is repeated on each)\n"
    "  --ranks-per-node R      default: one per GPU group, or one per NUMA domain without GPUs\n"
    "  --gpus-per-rank G       default: 1 where the node has GPUs, else 0\n"
    "  --ranks-per-gpu N       N ranks share each GPU, each with its own cores near it (default 1)\n"
    "  --threads-per-rank T    default: the rank's share of the cores near its GPU\n"
    "  --smt                   use every hardware thread of a core, not one\n"
    "  --oversubscribe         share GPUs/cores (with a warning) instead of refusing\n"
    "  --cpu-locality L        package: GPU ranks also share out their package's NUMA nodes\n"
    "                          without GPUs (default); gpu: cores near their GPUs only\n"
    "  --json                  print the plan document (version 1; see gpurun(1), plan)\n"
    "  -h, --help              this help\n"
    "\n"
    "Exit status: 0 planned, 2 bad job file or option, 3 this node cannot meet the request.\n";

static void print_plan(const gpurun_plan_t *p)
{
    const gpurun_topo_t *t = p->topo;
    const gpurun_request_t *r = &p->req;
    printf("Plan for %s (%s): %d node%s x %d rank%s, %d GPU%s per rank, binding %s\n", t->hostname, t->source,
           r->nodes, r->nodes == 1 ? "" : "s", r->ranks_per_node, r->ranks_per_node == 1 ? "" : "s",
           r->gpus_per_rank, r->gpus_per_rank == 1 ? "" : "s", r->bind == GPURUN_BIND_NONE ? "none" : "closest");
    if (r->ranks_per_gpu > 1)
        printf("%d ranks share each GPU\n", r->ranks_per_gpu);
    printf("\n%-5s %-4s %-5s %-6s %-28s %-20s %-4s %-6s %-20s %s\n", "rank", "node", "local", "GPU", "GPU PCI",
           "NIC", "aff", "NUMA", "cpus", "threads");
    for (int i = 0; i < p->nranks; i++) {
        const gpurun_rank_plan_t *rk = &p->ranks[i];
        char gpus[256] = "-", pci[512] = "-", nics[256] = "-";
        size_t gl = 0, pl = 0, nl = 0;
        for (int g = 0; g < rk->ngpus; g++) {
            gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "%s%d", g ? "," : "", t->gpus[rk->gpus[g]].index);
            pl += (size_t)snprintf(pci + pl, sizeof pci - pl, "%s%s", g ? "," : "", t->gpus[rk->gpus[g]].pci);
            if (gl >= sizeof gpus || pl >= sizeof pci)
                break;
        }
        for (int n = 0; n < rk->nnics; n++) {
            nl += (size_t)snprintf(nics + nl, sizeof nics - nl, "%s%s", n ? "," : "", t->nics[rk->nics[n]].name);
            if (nl >= sizeof nics)
                break;
        }
        char *cpus = hwloc_bitmap_iszero(rk->cpuset) ? NULL : gpurun_cpuset_list(rk->cpuset);
        char *numa = hwloc_bitmap_iszero(rk->nodeset) ? NULL : gpurun_cpuset_list(rk->nodeset);
        printf("%-5d %-4d %-5d %-6s %-28s %-20s %-4s %-6s %-20s %d\n", rk->rank, rk->node, rk->local_rank, gpus, pci,
               nics, rk->nnics ? gpurun_affinity_name(rk->nic_affinity) : "-", numa ? numa : "-",
               cpus ? cpus : "(unbound)", rk->threads);
        free(cpus);
        free(numa);
    }
    for (size_t i = 0; i < p->nwarnings; i++)
        printf("warning: %s\n", p->warnings[i]);
}

static int plan_with_api(const char *xml, const gpurun_request_t *req, int json, gpurun_error_t *err)
{
    gpurun_topology_t *t = NULL;
    gpurun_plan_request_t *preq = NULL;
    gpurun_placement_t *p = NULL;
    char *text = NULL, *doc = NULL;
    json_t *rj = gpurun_request_json(req);
    text = json_dumps(rj, JSON_COMPACT);
    json_decref(rj);
    int rc = gpurun_plan_request_create(&preq, err);
    if (rc == 0)
        rc = gpurun_plan_request_set_json(preq, text, err);
    if (rc == 0)
        rc = gpurun_topology_load(xml, GPURUN_TOPOLOGY_FROM_ENV, &t, err);
    if (rc == 0)
        rc = gpurun_placement_create(t, preq, &p, err);
    if (rc == 0 && json && (rc = gpurun_placement_json(p, GPURUN_JSON_INDENT, &doc, err)) == 0)
        printf("%s\n", doc);
    else if (rc == 0)
        print_plan(gpurun_placement_internal(p));
    free(doc);
    free(text);
    gpurun_placement_destroy(p);
    gpurun_topology_destroy(t);
    gpurun_plan_request_destroy(preq);
    return rc;
}

int cmd_plan(int argc, char **argv, gpurun_error_t *err)
{
    enum { O_TOPO = 1000, O_NODES, O_RPN, O_GPR, O_TPR, O_RPG, O_SMT, O_OVER, O_CPULOC, O_JSON };
    static const struct option opts[] = {
        {"topology", required_argument, NULL, O_TOPO},
        {"nodes", required_argument, NULL, O_NODES},
        {"ranks-per-node", required_argument, NULL, O_RPN},
        {"gpus-per-rank", required_argument, NULL, O_GPR},
        {"threads-per-rank", required_argument, NULL, O_TPR},
        {"ranks-per-gpu", required_argument, NULL, O_RPG},
        {"smt", no_argument, NULL, O_SMT},
        {"oversubscribe", no_argument, NULL, O_OVER},
        {"cpu-locality", required_argument, NULL, O_CPULOC},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *xml = NULL;
    int json = 0, c, cpuloc = GPURUN_UNSET;
    int nodes = GPURUN_UNSET, rpn = GPURUN_UNSET, gpr = GPURUN_UNSET, tpr = GPURUN_UNSET, rpg = GPURUN_UNSET;
    bool smt = false, over = false;
    optind = 1;
    opterr = 0;
    /* Options may come before or after the job file, as users type them. */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case O_TOPO: xml = optarg; break;
        case O_NODES: rc = cmd_parse_int("plan", "--nodes", optarg, 1, 100000, &nodes, err); break;
        case O_RPN: rc = cmd_parse_int("plan", "--ranks-per-node", optarg, 1, 4096, &rpn, err); break;
        case O_GPR: rc = cmd_parse_int("plan", "--gpus-per-rank", optarg, 0, 64, &gpr, err); break;
        case O_TPR: rc = cmd_parse_int("plan", "--threads-per-rank", optarg, 1, 4096, &tpr, err); break;
        case O_RPG: rc = cmd_parse_int("plan", "--ranks-per-gpu", optarg, 1, 64, &rpg, err); break;
        case O_SMT: smt = true; break;
        case O_OVER: over = true; break;
        case O_CPULOC:
            if (!strcmp(optarg, "package") || !strcmp(optarg, "gpu"))
                cpuloc = !strcmp(optarg, "gpu") ? GPURUN_CPULOC_GPU : GPURUN_CPULOC_PACKAGE;
            else
                rc = gpurun_err(err, GPURUN_EXIT_CONFIG, "plan: --cpu-locality: expected package or gpu, got '%s'",
                                optarg);
            break;
        case O_JSON: json = 1; break;
        case 'h': fputs(plan_usage, stdout); return 0;
        default: return cmd_bad_option("plan", argv[optind - 1], opts, err);
        }
        if (rc < 0)
            return GPURUN_EXIT_CONFIG;
    }
    if (argc - optind > 1) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "plan: one job file at most, got '%s' and '%s'", argv[optind],
                   argv[optind + 1]);
        return GPURUN_EXIT_CONFIG;
    }

    gpurun_request_t req;
    gpurun_request_init(&req);
    gpurun_job_t *job = NULL;
    if (optind < argc) {
        if (gpurun_job_load(argv[optind], &job, err) < 0)
            return err->code;
        gpurun_request_from_job(&req, job);
    }
    if (nodes != GPURUN_UNSET)
        req.nodes = nodes;
    if (rpn != GPURUN_UNSET)
        req.ranks_per_node = rpn;
    if (gpr != GPURUN_UNSET)
        req.gpus_per_rank = gpr;
    if (tpr != GPURUN_UNSET)
        req.threads_per_rank = tpr;
    if (rpg != GPURUN_UNSET)
        req.ranks_per_gpu = rpg;
    req.smt |= smt;
    req.oversubscribe |= over;
    if (cpuloc != GPURUN_UNSET)
        req.cpu_locality = (enum gpurun_cpu_locality)cpuloc;
    gpurun_job_destroy(job);

    /* From here through the public API (libgpurun), as other programs plan. */
    return plan_with_api(xml, &req, json, err);
}
