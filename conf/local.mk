# conf/: sandbox.yaml examples, the default first. The default is installed as the example
# under $(pkgdatadir); /etc/msb/sandbox.yaml is the operator's to write.
dist_pkgdata_DATA += conf/sandbox.yaml
confexamplesdir = $(pkgdatadir)/examples
dist_confexamples_DATA = conf/examples/per-spec.yaml conf/examples/developer-machine.yaml \
	conf/examples/narrowing.yaml conf/examples/egress-allowlist.yaml
