"""Loss functions that add their result to the ``LOSSES`` collection (TF's ``ops/losses``)."""
