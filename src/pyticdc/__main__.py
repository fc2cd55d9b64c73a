"""``python -m pyticdc``."""

from pyticdc.cli import entry

entry()
