"""The ``indexbench`` console script: the command line, with a Ctrl-C during its own
start-up (importing pandas, rich and the CLI takes about a second) answered by the same
one line as any other interrupt, not by a KeyboardInterrupt traceback."""

from __future__ import annotations

import sys


def main() -> int:
    """Import the command line and run it; exit 130 with one line if interrupted first."""
    try:
        from indexbench.cli import main as cli_main
    except KeyboardInterrupt:
        from indexbench.interrupt import MESSAGE

        sys.stderr.write(MESSAGE + "\n")
        return 130
    return cli_main()
