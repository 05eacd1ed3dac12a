"""The narrow index contract: a required core of at most ten members, everything else an
opt-in role (:mod:`indexes.roles`) that generic code asks for with ``plays``.

Every registered index is checked (the list comes from ``indexes.names()``): it plays
each role whose members it defines, defines each required member of the roles it plays,
and an index with table services has a Spark adapter that executes them. A minimal
index, the core and nothing else, gets every role's "not played" answer from the
generic helpers."""

from __future__ import annotations

import contextlib

import pytest

import indexes
from indexes import roles
from indexes.base import (
    CORE,
    SPARK_CORE,
    Param,
    RecordIndex,
    SparkAdapter,
    TableService,
    load_object,
)
from indexes.simulation import SimAdapter
from writeclient.sizing import SizingConfig

NAMES = indexes.names()
# what RecordIndex and SparkAdapter provide that no index fills in
MACHINERY = {"spark", "simulator", "table_params", "param_keys", "counter_columns",
             "measured_columns", "placement_columns", "part_columns"}


def _public(cls: type) -> set[str]:
    return {n for k in cls.__mro__ if k is not object for n in vars(k)
            if not n.startswith("_")}


def test_the_core_is_at_most_ten_members():
    assert len(CORE) <= 10 and len(SPARK_CORE) <= 3
    assert _public(RecordIndex) - {"index_type", "name"} <= set(CORE) | MACHINERY, (
        "RecordIndex grew a member outside the core: make it a role (indexes/roles.py)")
    assert _public(SparkAdapter) - {"index"} == set(SPARK_CORE)
    assert _public(SimAdapter) == {"begin", "add", "finish", "after_commit"}


@pytest.mark.parametrize("name", NAMES)
def test_an_index_plays_the_roles_whose_members_it_defines(name):
    cls = indexes.index_class(name)
    adapter = load_object(cls.SPARK_ADAPTER)
    assert roles.role_problems(cls, roles.DEFINITION_ROLES) == []
    assert roles.role_problems(adapter, roles.SPARK_ROLES) == []
    assert roles.role_problems(load_object(cls.SIM_ADAPTER), roles.SIM_ROLES) == []
    if roles.services(cls):
        assert roles.plays(adapter, roles.ServiceExecutor), (
            f"{name} declares table services its Spark adapter does not execute")


class Minimal(RecordIndex):
    """The core and nothing else."""

    name = "minimal"
    index_type = "SIMPLE"
    PARAMS = (Param("x", "minimal.x", int, 1, "a parameter"),)
    SPARK_ADAPTER = "indexes.base:SparkAdapter"
    SIM_ADAPTER = "indexes.simulation:SimAdapter"


def test_a_core_only_index_gets_each_roles_default(tmp_path):
    idx = Minimal()
    for role in (*roles.DEFINITION_ROLES, *roles.SPARK_ROLES):
        assert not roles.plays(idx, role)
    assert roles.sizing_of(idx) == SizingConfig()
    assert roles.table_metrics(idx, None) == {}
    assert roles.size_notes(idx, 10, 100.0) == []
    assert roles.services(idx) == () and roles.hudi_counterpart(idx) is None
    assert roles.footer_writer(idx) is None
    assert roles.query_key_fields(idx, "key") == ["key"]
    assert roles.hash_layout(idx, None) is None
    assert roles.misplaced(idx, None, "p", "f", None, None) is None
    assert roles.verify_base_file(idx, "p", {}, []) == []
    assert isinstance(roles.resources(idx, None), contextlib.nullcontext)
    roles.check_resources(idx, str(tmp_path))
    adapter = SparkAdapter(idx)
    assert roles.writer_combine(adapter, None, []) is None
    assert roles.verify_state(adapter, None, None, None) == []
    assert roles.pending_write_counts(adapter, []) == {}
    sim = SimAdapter(idx, None)
    assert roles.file_index_bytes(sim, "p", "f", 10) == 0
    assert roles.commit_extra(sim) == {} and roles.pending_logs(sim) == []
    assert roles.sim_table_services(sim, 1) == []
    assert roles.finish_sim_table_services(sim) == []
    assert roles.read_view_extra(idx, None) == {}


def test_a_role_member_without_the_role_is_refused_at_load():
    class Stray(Minimal):
        def table_metrics(self, snapshot):  # TableFigures' member, role not played
            return {"x": 1.0}

    assert roles.role_problems(Stray, roles.DEFINITION_ROLES) == [
        "Stray defines table_metrics but does not play TableFigures (generic code calls it "
        "only for an index that does)"]
    indexes.register("stray", f"{__name__}:_Stray")
    try:
        globals()["_Stray"] = Stray
        with pytest.raises(TypeError, match="does not play TableFigures"):
            indexes.index_class("stray")
    finally:
        indexes.unregister("stray")
        globals().pop("_Stray", None)


def test_a_role_played_without_its_required_member_is_refused():
    class Half(roles.FooterData, Minimal):
        pass

    assert roles.role_problems(Half, roles.DEFINITION_ROLES) == [
        "Half plays FooterData but does not define base_file_footer"]


def test_a_subclass_of_an_index_is_checked_like_any_index():
    bloom = indexes.index_class("bloom")

    class MyBloom(bloom):
        def row_buckets(self, data, partition, config, snapshot):  # Bucketed's member
            return None

    assert roles.role_problems(MyBloom, roles.DEFINITION_ROLES) == [
        "MyBloom defines row_buckets but does not play Bucketed (generic code calls it "
        "only for an index that does)"]


class Verifying(SparkAdapter):
    def verify(self, spark, table, snapshot):  # VerifiesIndex's member, role not played
        return []


class Serviced(roles.TableServices, Minimal):
    SERVICES = (TableService("tidy", "a table service", "tidy"),)

    def plan_service(self, service, table, snapshot, options):
        return None


def test_an_adapter_is_checked_on_first_use():
    class Stray(Minimal):
        SPARK_ADAPTER = f"{__name__}:Verifying"

    with pytest.raises(TypeError, match="Verifying defines verify but does not play "
                                        "VerifiesIndex"):
        _ = Stray().spark
    assert roles.adapter_problems(Serviced(), SparkAdapter, "spark") == [
        "SparkAdapter does not play ServiceExecutor, but its index declares table "
        "services (TableServices)"]
    assert roles.adapter_problems(Minimal(), SparkAdapter, "spark") == []
