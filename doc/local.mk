# doc/: man pages and guides.
