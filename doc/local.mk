# doc/: man pages and guides.
dist_doc_DATA += doc/writing-a-backend.md
dist_doc_DATA += doc/threat-model.md
dist_doc_DATA += doc/hosts.md
dist_man_MANS += doc/msb.1 doc/sandbox.yaml.5 doc/msb_backend.3
# msb(1) names the default sandbox.yaml as configure set it, the path `msb --help` prints:
# the page's @sysconfdir@ is filled in as it is installed (tests/cli/default_config.sh).
install-data-hook: install-msb-man-paths
install-msb-man-paths:
	sed -i 's|@sysconfdir[@]|$(sysconfdir)|g' '$(DESTDIR)$(man1dir)/msb.1'
.PHONY: install-msb-man-paths

# The guide's example plugins, installed so a third party has the sources the guide walks
# through (tests/conformance/walkthrough.sh checks they are the guide's own text).
examplesdir = $(docdir)/examples
dist_examples_DATA = doc/examples/shelf.c doc/examples/crate.c
