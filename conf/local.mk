# conf/: sandbox.yaml examples, the default first.
