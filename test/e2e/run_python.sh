#!/usr/bin/env bash
# Runs an end-to-end test script with Debian's Python 3 (standard library only).
exec /usr/bin/python3 "$@"
