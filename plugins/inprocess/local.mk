# plugins/inprocess: the scripted fake backend at rung `none` (tests, conformance, examples).
msbplugin_LTLIBRARIES += plugins/inprocess/inprocess.la
INPROCESS_SOURCES = \
	plugins/inprocess/inprocess.h \
	plugins/inprocess/msb_inprocess.h \
	plugins/inprocess/inprocess.c \
	plugins/inprocess/inprocess_config.c \
	plugins/inprocess/inprocess_run.c \
	plugins/inprocess/inprocess_bg.c \
	plugins/inprocess/inprocess_files.c
plugins_inprocess_inprocess_la_SOURCES = $(INPROCESS_SOURCES)
plugins_inprocess_inprocess_la_LDFLAGS = $(PLUGIN_LINKFLAGS)
plugins_inprocess_inprocess_la_LIBADD = sdk/libmsb-sdk.la $(PTHREAD_LIBS)
