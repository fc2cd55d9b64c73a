"""``python -m pyticdc``."""

from pyticdc.cli import main

raise SystemExit(main())
