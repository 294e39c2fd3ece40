# sdk/agent: rules for this part.
