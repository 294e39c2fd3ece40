# doc/: man pages and guides.
dist_doc_DATA += doc/writing-a-backend.md
