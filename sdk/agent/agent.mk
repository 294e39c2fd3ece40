# sdk/agent: the guest agent (msb-agent, a static libc-only binary), its wire protocol and
# host-side client (in libmsb-sdk), and the driver every agent-backed backend builds on.
msbinclude_HEADERS += sdk/include/msb/agent.h sdk/include/msb/driver.h
