# plugins/bwrap: rules for this area.
