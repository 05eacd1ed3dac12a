"""``python -m indexbench`` is the ``indexbench`` command."""

from indexbench.cli import main

raise SystemExit(main())
