# doc/: man pages and guides.
dist_doc_DATA += doc/writing-a-backend.md
dist_doc_DATA += doc/threat-model.md
dist_doc_DATA += doc/hosts.md
dist_man_MANS += doc/msb.1 doc/sandbox.yaml.5 doc/msb_backend.3
