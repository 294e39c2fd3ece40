# core/cli: rules for this part.
