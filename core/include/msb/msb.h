/*
 * msb/msb.h — the host's one include: load plugins, build a router from sandbox.yaml or by
 * hand, acquire sandboxes and run work in them.
 *
 * Hosts include this and link libmsb (pkg-config msb-host). Backend authors never do: they
 * build against msb/backend.h alone (pkg-config msb).
 */
#ifndef MSB_MSB_H
#define MSB_MSB_H

#include <msb/backend.h>
#include <msb/config.h>
#include <msb/error.h>
#include <msb/host_tools.h>
#include <msb/loader.h>
#include <msb/observer.h>
#include <msb/outputs.h>
#include <msb/pool.h>
#include <msb/router.h>
#include <msb/sandbox.h>
#include <msb/tool.h>
#include <msb/types.h>
#include <msb/vocab.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This library's version ("0.27.0") and the plugin ABI it speaks (27). */
const char *msb_version(void);
unsigned msb_abi_version(void);

#ifdef __cplusplus
}
#endif
#endif
