# core/conformance: rules for this part.
