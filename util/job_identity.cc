#include "util/job_identity.h"

#include <cstring>

namespace xtimer {
namespace {

// How a source's value becomes a label.
enum class Take {
  kAll,              // the whole value
  kAllButNone,       // the whole value, but torchrun's placeholder "none" means unset
  kBeforeDot,        // the part before the first '.' (Open MPI's "JOBFAMILY.VPID;tcp://...")
  kAllIfKubernetes,  // the whole value, only inside a Kubernetes pod
};

struct Source {
  const char* variable;
  const char* prefix;
  Take take;
};

// The one order of docs/launcher.md and job_identity.h.
constexpr Source kSources[] = {
    {"XTIMER_JOB", "", Take::kAll},
    {"TORCHELASTIC_RUN_ID", "", Take::kAllButNone},
    {"SLURM_JOB_ID", "slurm-", Take::kAll},
    {"PMIX_NAMESPACE", "mpi-", Take::kAll},
    {"OMPI_MCA_orte_hnp_uri", "mpi-", Take::kBeforeDot},
    {"PMI_KVSNAME", "mpi-", Take::kAll},
    {"PMI_PORT", "mpi-", Take::kAll},
    {"JOB_NAME", "k8s-", Take::kAllIfKubernetes},
    {"XTIMER_JOB_DEFAULT", "", Take::kAll},
};

bool Set(const char* v) { return v != nullptr && *v != '\0'; }

// The part of `value` that names the job, or "" when this source does not apply.
std::string JobPart(const Source& s, const char* value, JobEnvGetter get) {
  switch (s.take) {
    case Take::kAll:
      return value;
    case Take::kAllButNone:
      return strcmp(value, "none") == 0 ? "" : value;
    case Take::kBeforeDot:
      return std::string(value, strcspn(value, ".;"));
    case Take::kAllIfKubernetes:
      return Set(get("KUBERNETES_SERVICE_HOST")) ? value : "";
  }
  return "";
}

}  // namespace

JobIdentity DeriveJobIdentity(JobEnvGetter get) {
  for (const Source& s : kSources) {
    const char* value = get(s.variable);
    if (!Set(value)) continue;
    const std::string part = JobPart(s, value, get);
    if (part.empty()) continue;
    std::string id = SanitizeJobId(s.prefix + part);
    if (!id.empty()) return {id, s.variable};
  }
  return {"default", "default"};
}

}  // namespace xtimer
