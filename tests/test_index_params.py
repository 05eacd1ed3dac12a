"""Index parameters: typed, named by their Hudi-like key in every error, choices enforced."""

from __future__ import annotations

import pytest

import indexes
from tableformat.errors import IndexBenchError


@pytest.mark.parametrize(("name", "params", "message"), [
    ("bloom", {"filter_type": "X"}, "hoodie.bloom.index.filter.type must be one of SIMPLE"),
    ("bloom", {"hoodie.index.bloom.num_entries": "many"}, "must be a int"),
    ("multiple-rehash", {"rescale_mode": "x"}, "indexbench.rescale.mode must be one of"),
    ("dynamic-rli", {"hash_function": "md5"}, "hash.function must be one of murmur3, java"),
    ("dynamic-rli", {"capacity_mode": "kb"}, "capacity.mode must be one of records, bytes"),
    ("simple-bucket", {"nope": 1}, "unknown parameter 'nope'"),
])
def test_bad_parameters_are_refused_naming_the_key(name, params, message):
    with pytest.raises(IndexBenchError, match=message):
        indexes.get(name, **params)


def test_parameters_by_name_or_key_round_trip_through_properties():
    idx = indexes.get("bloom", **{"hoodie.bloom.index.filter.type": "SIMPLE",
                                  "prune_by_ranges": "false"})
    assert idx.params["filter_type"] == "SIMPLE" and idx.params["prune_by_ranges"] is False
    again = indexes.get("bloom", **idx.table_params())
    assert again.params == idx.params
