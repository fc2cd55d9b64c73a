"""The optional C helpers of the codecs' fast paths; everything else is in pyproject.toml.

``optional=True``: without a C compiler the install goes on, and the codecs use the pure-Python
form of each fast path (``pyticdc.codec._fastpath.native`` tells which is in use).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("pyticdc.codec._native", ["src/pyticdc/codec/_native.c"], optional=True)])
