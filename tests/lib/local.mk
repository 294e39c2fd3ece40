# tests/lib: rules for this area.
