#!/usr/bin/env python3
"""No metric and recorded series can be mistaken for one another (issue 37).

Reads the series the rules record (`- record: NAME` in the rules file) and the daemon's metric
names (every `xtimer_...` name docs/metrics.md documents) and fails when two of these names are
fewer than 3 edits apart (insertions, deletions, substitutions; `xtimer:x` and `xtimer_x` are 1
apart): one mistyped character must not turn a query on one into a query on the other. Names that
are equal count once (alerts and several rules record one series). Pairs of metrics are the
exposition's business, not checked here (xtimer_op_latency_min_seconds and ..._max_seconds are 2
apart by design).

Usage: metric_names_test.py RULES.yml METRICS.md
"""

import re
import sys

MIN_DISTANCE = 3


def distance(a, b, limit):
    """Levenshtein distance of a and b, or `limit` when it is at least that."""
    if abs(len(a) - len(b)) >= limit:
        return limit
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) >= limit:
            return limit
        prev = cur
    return min(prev[-1], limit)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    with open(argv[1]) as f:
        rules = sorted(set(re.findall(r"^\s*- record:\s*(\S+)\s*$", f.read(), re.M)))
    with open(argv[2]) as f:
        metrics = sorted(set(re.findall(r"`(xtimer_[a-z0-9_]*[a-z0-9])[`{]", f.read())))
    if len(rules) < 10 or len(metrics) < 30:
        sys.exit("FAIL: read %d recorded series from %s and %d metrics from %s: too few, the "
                 "patterns no longer match" % (len(rules), argv[1], len(metrics), argv[2]))
    bad = []
    for i, r in enumerate(rules):
        for other in metrics + rules[i + 1:]:
            d = distance(r, other, MIN_DISTANCE)
            if d < MIN_DISTANCE:
                bad.append("%s and %s are %d edit(s) apart" % (r, other, d))
    if bad:
        sys.exit("FAIL: names that one mistyped character confuses:\n  " + "\n  ".join(bad))
    print("PASS: %d recorded series, %d metrics, every pair at least %d edits apart" %
          (len(rules), len(metrics), MIN_DISTANCE))


if __name__ == "__main__":
    main(sys.argv)
