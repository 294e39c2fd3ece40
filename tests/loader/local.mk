# tests/loader: rules for this area.
