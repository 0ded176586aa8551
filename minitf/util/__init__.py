"""Helpers TF keeps in ``tensorflow/python/util``: ``nest`` (nested structures of tensors)."""
