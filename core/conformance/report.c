/*
 * report.c — the conformance report: the list of case verdicts a run produced, and the
 * questions a caller asks of it (how many failed, what did this case say).
 */
#include <stdlib.h>
#include <string.h>

#include <msb/conformance.h>

#include "kit.h"

const char *msb_conformance_outcome_name(msb_conformance_outcome outcome)
{
	static const char *const names[MSB_CONFORMANCE__COUNT] = {
		[MSB_CONFORMANCE_PASS] = "pass",
		[MSB_CONFORMANCE_FAIL] = "FAIL",
		[MSB_CONFORMANCE_SKIP] = "skip",
		[MSB_CONFORMANCE_NOT_APPLICABLE] = "not applicable",
	};
	if ((int)outcome < 0 || outcome >= MSB_CONFORMANCE__COUNT)
		return "unknown";
	return names[outcome];
}

msb_errc conf_report_add(msb_conformance_report *report, const char *suite, const char *name,
			 msb_conformance_outcome outcome, const char *reason)
{
	if (report->len == report->cap) {
		size_t cap = report->cap ? report->cap * 2 : 32;
		msb_conformance_case *p = realloc(report->cases, cap * sizeof(*p));
		if (!p)
			return MSB_E_NOMEM;
		report->cases = p;
		report->cap = cap;
	}
	msb_conformance_case *c = &report->cases[report->len];
	memset(c, 0, sizeof(*c));
	c->suite = suite;
	c->name = name;
	c->outcome = outcome;
	if (reason && !(c->reason = strdup(reason)))
		return MSB_E_NOMEM;
	report->len++;
	return MSB_OK;
}

size_t msb_conformance_report_count(const msb_conformance_report *report,
				    msb_conformance_outcome outcome)
{
	size_t n = 0;
	for (size_t i = 0; report && i < report->len; i++)
		n += report->cases[i].outcome == outcome;
	return n;
}

const msb_conformance_case *msb_conformance_report_find(const msb_conformance_report *report,
							  const char *suite, const char *name)
{
	for (size_t i = 0; report && i < report->len; i++) {
		const msb_conformance_case *c = &report->cases[i];
		if (strcmp(c->suite, suite) == 0 && strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

void msb_conformance_report_free(msb_conformance_report *report)
{
	if (!report)
		return;
	for (size_t i = 0; i < report->len; i++) {
		free(report->cases[i].expected);
		free(report->cases[i].seen);
		free(report->cases[i].reason);
	}
	free(report->cases);
	free(report->plugin);
	free(report->backend);
	free(report->isolation);
	free(report);
}
