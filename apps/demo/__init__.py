"""The main job: one raystack workflow that uses every part (see `raystack demo`)."""
