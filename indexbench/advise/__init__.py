"""``indexbench advise``: which index for a described table, from the simulator.

:mod:`~indexbench.advise.request` checks the description and lays out the table sizes
along the horizon; :mod:`~indexbench.advise.probes` simulates every index's candidate
settings at those sizes (exactly up to a limit, extrapolated above it with the error
measured); :mod:`~indexbench.advise.answer` ranks them, finds the crossovers and the
Hudi configuration of the recommendation; :mod:`reports.advice` renders the answer.
"""
