/*
 * plugins/qemu/qemu_qmp.h — a bounded, blocking QMP client for a VM's monitor socket
 * (qemu_qmp.c): what saving and restoring a template says to QEMU.
 */
#ifndef MSB_QEMU_QMP_H
#define MSB_QEMU_QMP_H

#include <stddef.h>

#include <jansson.h>

#include <msb/error.h>

typedef struct qemu_qmp qemu_qmp;

/* Connect to `path` (retrying until `timeout` s), read the greeting, leave negotiation. */
msb_errc qemu_qmp_open(const char *path, double timeout, qemu_qmp **out, msb_error *err);
/* Send `command` (a whole JSON object) and wait for its reply: *ret its "return". */
msb_errc qemu_qmp_call(qemu_qmp *q, const char *command, double timeout, json_t **ret,
		       msb_error *err);
/* Hand QEMU `fd` under `name` (getfd), for a "fd:<name>" migration URI. */
msb_errc qemu_qmp_pass_fd(qemu_qmp *q, const char *name, int fd, double timeout, msb_error *err);
/*
 * Ask `query` (query-migrate, query-status) until its "status" is one of `done` (MSB_OK) or
 * `failed` (MSB_E_BACKEND), within `timeout` s; the last status into `status`.
 */
msb_errc qemu_qmp_status_until(qemu_qmp *q, const char *query, const char *const *done,
			       const char *const *failed, double timeout, char *status,
			       size_t size, msb_error *err);
void qemu_qmp_close(qemu_qmp *q);

#endif
