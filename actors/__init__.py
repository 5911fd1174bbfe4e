"""Ray actors and the driver-side groups and controllers that own them."""
