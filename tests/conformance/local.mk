# tests/conformance: rules for this area.
