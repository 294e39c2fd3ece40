# tests/files: rules for this area.
