# sdk/cgroup: per-sandbox resource limits through cgroups, v1 and v2 (msb/cgroup.h).
# In libmsb-sdk, for every backend whose sandbox is a tree of host processes.
msbinclude_HEADERS += sdk/include/msb/cgroup.h
sdk_libmsb_sdk_la_SOURCES += \
	sdk/cgroup/cgroup_internal.h \
	sdk/cgroup/cgroup_mounts.c \
	sdk/cgroup/cgroup.c \
	sdk/cgroup/cgroup_destroy.c \
	sdk/cgroup/cgroup_spawn.c \
	sdk/cgroup/cgroup_spare.c
