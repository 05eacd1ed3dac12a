"""The simulator's cost model, by job: the storage/compute profiles
(:mod:`indexbench.sim.profiles`), the time model that turns counted work into
``model_*`` seconds (:mod:`indexbench.sim.time_model`, where the model is written out)
and the fit of a profile to a real run (:mod:`indexbench.sim.calibrate`). This module
keeps their public names in one place: ``from indexbench.sim.cost import ...``.
"""

from indexbench.sim.calibrate import calibrate, fit_kv
from indexbench.sim.profiles import FORMAT, PROFILES, CostProfile, profile
from indexbench.sim.time_model import (
    BYTE_COLUMNS,
    COUNT_COLUMNS,
    MODEL_COLUMNS,
    model_frame,
    model_rows,
    model_seconds,
)

__all__ = ["BYTE_COLUMNS", "COUNT_COLUMNS", "FORMAT", "MODEL_COLUMNS", "PROFILES",
           "CostProfile", "calibrate", "fit_kv", "model_frame", "model_rows", "model_seconds",
           "profile"]
