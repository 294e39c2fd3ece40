#!/bin/sh
# plugins_fast.sh — the conformance kit over every shipped plugin but qemu (run_all.sh).
exec sh "${MSB_TOP_SRCDIR:?run me from make check}/tests/conformance/run_all.sh" inprocess process bwrap gvisor
