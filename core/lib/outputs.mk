# core/lib: rules for this part.
