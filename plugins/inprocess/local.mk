# plugins/inprocess: rules for this area.
