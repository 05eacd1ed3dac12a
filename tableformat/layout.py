"""Where a table keeps its own files under its root: the ``.hoodie`` folder (the
timeline and the table's metadata) and ``hoodie.properties`` in it.

Below :mod:`tableformat.table` and :mod:`tableformat.abort`, which both need the names.
"""

from __future__ import annotations

HOODIE = ".hoodie"
PROPERTIES = "hoodie.properties"
