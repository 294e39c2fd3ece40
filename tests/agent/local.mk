# tests/agent: rules for this area.
