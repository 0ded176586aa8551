"""Streaming metrics over local variables (TF's ``metrics_impl.py``)."""
