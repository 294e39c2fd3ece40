# core/cli: the msb command — main.c dispatches to one small file per subcommand (the table
# is commands.h), each thin over libmsb.
bin_PROGRAMS += core/cli/msb
core_cli_msb_SOURCES = \
	core/cli/cli.h \
	core/cli/commands.h \
	core/cli/main.c \
	core/cli/cli_output.c \
	core/cli/cli_json.c \
	core/cli/cli_config.c \
	core/cli/cli_session.c \
	core/cli/cli_egress.c \
	core/cli/cli_result.c \
	core/cli/cli_input.c \
	core/cli/cli_stream.c \
	core/cli/cli_terminal.c \
	core/cli/cmd_check.c \
	core/cli/cmd_plugins.c \
	core/cli/cli_declarations.c \
	core/cli/cmd_route.c \
	core/cli/cmd_exec.c \
	core/cli/cli_bg.c \
	core/cli/cmd_ps.c \
	core/cli/cmd_attach.c \
	core/cli/cmd_kill.c \
	core/cli/cmd_wait.c \
	core/cli/cmd_run_code.c \
	core/cli/cmd_put.c \
	core/cli/cmd_get.c \
	core/cli/cmd_ls.c \
	core/cli/cmd_rm.c \
	core/cli/cmd_snapshot.c \
	core/cli/cmd_stat.c \
	core/cli/cmd_reclaim.c \
	core/cli/cmd_collect.c \
	core/cli/cmd_dispose.c \
	core/cli/cmd_pool.c \
	core/cli/cmd_image.c \
	core/cli/cmd_conformance.c \
	core/cli/cmd_mcp.c \
	core/mcp/mcp.h \
	core/mcp/mcp_rpc.c \
	core/mcp/mcp_tools.c
core_cli_msb_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRYPTO_CFLAGS)
core_cli_msb_LDADD = core/conformance/libmsb-conformance.la core/libmsb.la sdk/libmsb-sdk.la $(UNISTRING_LIBS) $(PTHREAD_LIBS) \
	$(JANSSON_LIBS) $(CRYPTO_LIBS)
