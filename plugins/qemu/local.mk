# plugins/qemu: rules for this area.
