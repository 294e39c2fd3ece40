/*
 * plugins/gvisor/gvisor_bundle.c — the OCI bundle of one sandbox: runtime spec, written as
 * JSON by hand (a dozen fields, no JSON library needed, every string escaped).
 *
 * What each piece is for:
 *  - root: the image's root directory, read-only — a command cannot change the image any
 *    other sandbox runs from;
 *  - the work directory: the one writable host directory, bound at the spec's work_dir;
 *  - the channel directory: the agent's socket, reaching the host through runsc's
 *    --host-uds=create (the sandbox may create sockets on its bind mounts, never connect to
 *    the host's); it holds nothing but that socket;
 *  - /tmp: a tmpfs of tmp_size, inside the sandbox's memory;
 *  - namespaces: a new network namespace with --network=none is `egress: closed` — loopback
 *    inside gVisor's own netstack and no device at all;
 *  - resources: memory, pids and CPU enforced by the host's cgroups on the whole sandbox
 *    (the pids limit counts gVisor's own threads, so it is sized above what a command gets).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gvisor_internal.h"

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void bind_mount(FILE *f, const char *dest, const char *source, bool rw)
{
	fputs(",\n    {\"destination\": ", f);
	json_str(f, dest);
	fputs(", \"type\": \"bind\", \"source\": ", f);
	json_str(f, source);
	fprintf(f, ", \"options\": [\"rbind\", \"%s\", \"nosuid\", \"nodev\"]}", rw ? "rw" : "ro");
}

msb_errc gvisor_bundle_write(const gvisor_ctx *ctx, const msb_driver_box *box, const char *root,
			     const char *chan_dir, msb_error *err)
{
	char **argv = NULL;
	msb_errc rc = msb_driver_agent_argv(box, "--listen", GVISOR_CHANNEL_DIR "/agent.sock",
					    box->spec->work_dir, NULL, -1, &argv, err);
	if (rc != MSB_OK)
		return rc;
	char path[4200];
	snprintf(path, sizeof path, "%s/bundle", box->dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		free(argv);
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: mkdir %s", path);
	}
	snprintf(path, sizeof path, "%s/bundle/config.json", box->dir);
	FILE *f = fopen(path, "we");
	if (!f) {
		free(argv);
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: writing %s", path);
	}
	fputs("{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {\n    \"terminal\": false,\n"
	      "    \"user\": {\"uid\": 0, \"gid\": 0},\n    \"args\": [", f);
	json_str(f, GVISOR_AGENT_PATH);
	for (char **a = argv + 1; *a; a++) {
		fputs(", ", f);
		json_str(f, *a);
	}
	fputs("],\n    \"env\": [\"PATH=/usr/local/bin:/usr/bin:/bin\"],\n    \"cwd\": \"/\",\n"
	      "    \"noNewPrivileges\": true\n  },\n  \"root\": {\"path\": ", f);
	json_str(f, root);
	fputs(", \"readonly\": true},\n  \"hostname\": \"msb\",\n  \"mounts\": [\n"
	      "    {\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"}", f);
	fprintf(f, ",\n    {\"destination\": \"/tmp\", \"type\": \"tmpfs\", \"source\": \"tmpfs\", "
		"\"options\": [\"nosuid\", \"nodev\", \"size=%llu\"]}", (unsigned long long)ctx->tmp_size);
	bind_mount(f, box->spec->work_dir, box->work_dir, true);
	bind_mount(f, GVISOR_CHANNEL_DIR, chan_dir, true);
	bind_mount(f, GVISOR_AGENT_PATH, box->config->agent_path, false);
	fputs("\n  ],\n  \"linux\": {\n    \"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\"}, "
	      "{\"type\": \"ipc\"}, {\"type\": \"uts\"}, {\"type\": \"mount\"}],\n", f);
	fprintf(f, "    \"cgroupsPath\": \"/msb/gvisor/%s\",\n", box->name);
	fprintf(f, "    \"resources\": {\"memory\": {\"limit\": %llu}, \"pids\": {\"limit\": %llu}",
		(unsigned long long)ctx->memory, (unsigned long long)ctx->pids);
	if (ctx->cpus > 0)
		fprintf(f, ", \"cpu\": {\"quota\": %lld, \"period\": 100000}",
			(long long)(ctx->cpus * 100000.0));
	fputs("}\n  }\n}\n", f);
	free(argv);
	if (fclose(f) != 0)
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend gvisor: writing %s", path);
	return MSB_OK;
}
