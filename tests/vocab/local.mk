# tests/vocab: rules for this area.
