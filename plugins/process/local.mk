# plugins/process: rules for this area.
