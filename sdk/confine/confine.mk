# sdk/confine: rules for this part.
