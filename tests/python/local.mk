# tests/python: the Python binding (core/python/msb) with Debian's python3.
TESTS += tests/python/python_binding.sh
EXTRA_DIST += tests/python/python_binding.sh tests/python/test_msb.py
