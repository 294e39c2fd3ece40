# tests/router: rules for this area.
