// The job label of a process: one derivation, used by xtimer-launch (which exports it to the
// job) and by libxtimer.so (which writes it into its ring). Every rank of one job must get the
// same label whatever launcher started it, and a restarted job should keep its label, so no pid
// or time goes into it. docs/launcher.md ("The job label") explains the order.
//
// Sources, first match wins (a variable that is unset, empty, or sanitizes to nothing is skipped):
//   XTIMER_JOB                          as given                 explicit (xtimer-launch --job)
//   TORCHELASTIC_RUN_ID, unless "none"  as given                 torchrun's --rdzv-id
//   SLURM_JOB_ID                        slurm-<id>               one label for all steps of a job
//   PMIX_NAMESPACE                      mpi-<namespace>          Open MPI 4/5, PMIx launchers
//   OMPI_MCA_orte_hnp_uri               mpi-<job family>         Open MPI without PMIx
//   PMI_KVSNAME                         mpi-<kvs name>           PMI-1 launchers that export it
//   PMI_PORT                            mpi-<host_port>          MPICH Hydra (mpiexec -pmi-port)
//   JOB_NAME, in a pod                  k8s-<name>               Kubernetes, via the downward API
//                                                                (only if KUBERNETES_SERVICE_HOST)
//   XTIMER_JOB_DEFAULT                  as given                 xtimer-launch: COMMAND's name
//   (nothing)                           default
//
// Labels are job ids under util/label.h's rule (SanitizeJobId): safe as a Prometheus label value,
// as a directory name and in the ring's 64-byte field.
#ifndef XTIMER_UTIL_JOB_IDENTITY_H_
#define XTIMER_UTIL_JOB_IDENTITY_H_

#include <string>

#include "util/label.h"  // SanitizeJobId, kMaxJobIdLength: the job-id rule

namespace xtimer {

struct JobIdentity {
  std::string id;      // the sanitized label, never empty
  std::string source;  // the variable it came from, or "default"
};

// `get` is getenv or a test double (returns null for unset variables).
using JobEnvGetter = const char* (*)(const char* name);
JobIdentity DeriveJobIdentity(JobEnvGetter get);

}  // namespace xtimer

#endif  // XTIMER_UTIL_JOB_IDENTITY_H_
