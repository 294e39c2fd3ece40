# core/python: the Python binding of libmsb's host API (ctypes; no compiled extension).
if HAVE_PYTHON
msbpythondir = $(pythondir)/msb
msbpython_PYTHON = core/python/msb/__init__.py core/python/msb/_lib.py
endif
EXTRA_DIST += core/python/README.md core/python/msb/__init__.py core/python/msb/_lib.py
