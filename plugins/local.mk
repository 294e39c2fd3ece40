# One folder per backend; each sees sdk/ and nothing of core/.
include plugins/inprocess/local.mk
include plugins/process/local.mk
include plugins/bwrap/local.mk
include plugins/gvisor/local.mk
include plugins/qemu/local.mk
include plugins/docker/local.mk
