# tests/backends: rules for this area.
