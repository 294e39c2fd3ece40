# tests/cli: rules for this area.
