#!/bin/sh
# plugin_qemu.sh — the conformance kit over the qemu plugin (run_all.sh): about twenty
# microVM boots, so it is a test of its own that `make -j check` overlaps with the rest.
exec sh "${MSB_TOP_SRCDIR:?run me from make check}/tests/conformance/run_all.sh" qemu
