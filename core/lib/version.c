/* version.c — what this libmsb is, for `msb --version` and a host's own logs. */
#include <msb/msb.h>

const char *msb_version(void)
{
	return PACKAGE_VERSION;
}

unsigned msb_abi_version(void)
{
	return MSB_ABI_VERSION;
}
