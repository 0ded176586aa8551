"""What TF1 keeps in ``tensorflow/python/platform``: ``tf.app``, ``tf.flags``, ``tf.logging``."""
