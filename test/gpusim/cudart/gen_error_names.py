#!/usr/bin/env python3
"""Writes the cudaError_t name table from the CUDA headers: gen_error_names.py driver_types.h OUT.inc"""
import re
import sys


def main():
    text = open(sys.argv[1]).read()
    body = re.search(r"enum\s+__device_builtin__\s+cudaError\s*\{(.*?)\};", text, re.S)
    if not body:
        sys.exit("gen_error_names.py: enum cudaError not found in " + sys.argv[1])
    pairs = re.findall(r"^\s*(cudaError\w*|cudaSuccess)\s*=\s*(\d+)", body.group(1), re.M)
    if len(pairs) < 50:
        sys.exit("gen_error_names.py: only %d enumerators found" % len(pairs))
    with open(sys.argv[2], "w") as f:
        f.write("// Generated from %s by gen_error_names.py. Do not edit.\n" % sys.argv[1])
        for name, value in pairs:
            f.write('{%s, "%s"},\n' % (value, name))


if __name__ == "__main__":
    main()
