# plugins/gvisor: rules for this area.
