"""``python -m indexbench`` is the ``indexbench`` command."""

from indexbench.entry import main

raise SystemExit(main())
