# tests/bench: rules for this area.
