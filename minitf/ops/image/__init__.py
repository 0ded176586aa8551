"""Image ops (``tf.image``): resizing, flips, colour adjustments, crops and PNG/JPEG codecs.

``image_resize`` holds the resize ops and their numpy kernels, ``image_ops`` the
constructors built from ordinary ops, ``image_codecs`` the ``DecodePng`` /
``EncodePng`` / ``DecodeJpeg`` ops.
"""
