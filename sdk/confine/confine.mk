# sdk/confine: path confinement for every backend's file operations (msb/confine.h).
# Compiled into libmsb-sdk so plugins link it; the static guest agent compiles the same
# sources, which is why they need libc and sdk/lib/{error,buf}.c alone.
msbinclude_HEADERS += sdk/include/msb/confine.h
