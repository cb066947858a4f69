#!/usr/bin/env bash
# /opt/xtimer-demo/demo.sh [TRAIN_STEP_FLAGS...]: the image's default command (docs/deploy.md).
# The demo training job (demo/train_step, tp 2) on the GPU simulator, XTIMER_DEMO_RANKS ranks
# (default 4) for XTIMER_DEMO_STEPS steps (default 200), under xtimer-launch, which starts the
# container's xtimerd: /metrics on XTIMER_METRICS_PORT (default 18889), the control port on
# XTIMER_CONTROL_PORT (18888); with `--network host` both are the host's. Job label XTIMER_JOB
# (default xtimer-demo). The ranks linger 30 s after their last step so that they can be scraped.
# Flags are appended to train_step's (later ones win).
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
export XTIMER_JOB="${XTIMER_JOB:-xtimer-demo}"
# The simulated GPU's bf16 rate: low enough that it, not the CPU that plays every rank's host,
# is the bottleneck, as in a real training job.
export XTIMER_SIM_TFLOPS_BF16="${XTIMER_SIM_TFLOPS_BF16:-0.2}"
exec /opt/xtimer/bin/xtimer-launch -- python3 "$here/launch.py" --nnodes 1 \
  --nproc-per-node "${XTIMER_DEMO_RANKS:-4}" -- "$here/gpusim/gpusim-run" "$here/train_step" \
  --tp 2 --layers 2 --hidden 256 --seq 256 --steps "${XTIMER_DEMO_STEPS:-200}" --linger 30 "$@"
