# tests/config: rules for this area.
