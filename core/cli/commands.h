/*
 * commands.h — the msb command's subcommands, in one table. A subcommand is one file,
 * core/cli/cmd_<name>.c, defining `int msb_cmd_<name>(int argc, char **argv)` (argv[0] is
 * the subcommand's name; the global options are already consumed, see cli.h), and one line
 * here. The dispatcher (main.c) and `msb --help` read this table and nothing else.
 */
#ifndef MSB_CLI_COMMANDS_H
#define MSB_CLI_COMMANDS_H

/* X(identifier, "name on the command line", "one-line summary for msb --help") */
#define MSB_CLI_COMMANDS(X)                                                                        \
	X(check, "check", "load every plugin, build the router, check every spec")                 \
	X(plugins, "plugins", "show plugins: configured, or the files named")                      \
	X(route, "route", "which backend serves a kind, and why earlier ones refused")             \
	X(exec, "exec", "run a command in a sandbox; its exit status becomes msb's")               \
	X(ps, "ps", "list a sandbox's background commands (exec --background)")                   \
	X(attach, "attach", "follow a background command's output until it ends")               \
	X(kill, "kill", "send a signal to a background command")                                 \
	X(wait, "wait", "wait, bounded, for a background command to end")                        \
	X(run_code, "run-code", "run a program (-e CODE or stdin) in a sandbox")                  \
	X(put, "put", "copy a local file into a sandbox")                                          \
	X(get, "get", "copy a file out of a sandbox")                                              \
	X(ls, "ls", "list a directory in a sandbox")                                               \
	X(rm, "rm", "remove a path in a sandbox")                                                  \
	X(stat, "stat", "describe a path in a sandbox (kind, size; links not followed)")          \
	X(reclaim, "reclaim", "remove a directory tree in a sandbox (missing is success)")        \
	X(collect, "collect", "land a kind's declared outputs in a local directory")              \
	X(dispose, "dispose", "delete a conversation's (or one key's) sandboxes")                 \
	X(pool, "pool", "warm pools: fill, ls, drain the sandboxes started ahead")               \
	X(image, "image", "the image store: import, ls, inspect, rm, gc")                         \
	X(snapshot, "snapshot", "sandbox snapshots: save, ls, rm (fork one with exec --from)")   \
	X(conformance, "conformance", "run the conformance kit against a plugin")               \
	X(mcp, "mcp", "serve kinds as Model Context Protocol tools on stdio")

#define MSB_CLI_DECLARE(id, name, summary) int msb_cmd_##id(int argc, char **argv);
MSB_CLI_COMMANDS(MSB_CLI_DECLARE)
#undef MSB_CLI_DECLARE

#endif
