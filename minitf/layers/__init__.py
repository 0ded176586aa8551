"""``tf.layers``: TF1's object-oriented layers and their functional forms.

- ``base.py``: `Layer`, the variable-scope rules every layer (and RNN cell)
  names its variables by.
"""
