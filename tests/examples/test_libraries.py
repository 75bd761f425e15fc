"""Real libraries under ``crashpoint verify --kind document`` (issue 8, item 4): each
finding of docs/field-results.md pinned by invariant, model and crash state (its
bytes, recovered from the run: never a report's wording), and the control passing.

Marker ``examples`` (added by conftest.py): ``tox -e examples``; CI installs
examples/requirements.txt first. Each test runs only the workload and models that
show its finding; ``crashpoint verify ... --model all --faults`` runs everything.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

import crashpoint
import pytest
from library_support import crash_state, need, spec

if TYPE_CHECKING:
    from crashpoint.scenarios.engine.explore import Counterexample

PAGE = 4096


def verify(target: str, **options: Any) -> tuple[str, Any]:
    from crashpoint.scenarios.targets.user import load_factory

    s = spec(target)
    return s, crashpoint.verify(load_factory(s), target=s, **options)


@functools.cache
def tinydb_resize() -> tuple[str, Any]:
    """tinydb's resize workload under process-crash, every failing crash state kept
    (not shrunk: both of its in-place findings are in it)."""
    return verify("tinydb_target.py:factory", workloads=["resize"], shrink=False)


def found(result: Any, invariant: str, model: str, *, fault: bool = False) -> list[Counterexample]:
    """The counterexamples of ``invariant`` under ``model``, with or without a fault."""
    return [
        c
        for c in result.counterexamples
        if invariant in c.broken and c.model == model and bool(c.fault) == fault
    ]


def complete(run: Any) -> set[bytes]:
    """Every file content an acknowledged save of ``run`` left complete."""
    return set(run.data.blobs)


# --- the control ---------------------------------------------------------------------


def test_atomicwrites_overwrite_passes_every_model_with_faults() -> None:
    need("atomicwrites")
    _, result = verify(
        "atomicwrites_target.py:factory",
        model="all",
        faults=True,
        workloads=["first-save", "resize", "save-after-failure"],
    )
    assert result.unsupported == []
    assert result.verdict == "clean"
    assert {r.model for r in result.results} == {
        "process-crash",
        "ext4",
        "xfs",
        "btrfs",
        "posix",
    }
    assert sum(r.distinct_states for r in result.results) > 100
    result.assert_no_violations()


# --- tinydb ------------------------------------------------------------------------


def test_tinydb_a_kill_during_the_in_place_write_leaves_a_torn_database() -> None:
    """A1 under process-crash: db.json holds a page-aligned proper prefix of the
    database being written; TinyDB raises on it."""
    need("tinydb")
    s, result = tinydb_resize()
    torn = []
    for c in found(result, "A1", "process-crash"):
        files, run, _ = crash_state(s, c)
        db = files["db.json"]
        if any(b.startswith(db) and len(b) > len(db) for b in complete(run)):
            torn.append(db)
    assert torn and all(len(db) % PAGE == 0 for db in torn)
    for db in torn:
        with pytest.raises(ValueError):  # what TinyDB's json.load meets
            json.loads(db)


def test_tinydb_a_crash_before_the_truncate_leaves_the_old_tail_after_the_new_database() -> None:
    """A1 and A2 under process-crash: the database shrank; the kill came after its
    write(2) (and fsync) and before truncate(): db.json is the new JSON followed by the
    rest of the old one, which TinyDB cannot load."""
    need("tinydb")
    s, result = tinydb_resize()
    tails = []
    for c in found(result, "A1", "process-crash"):
        if "A2" not in c.broken:
            continue
        files, run, _ = crash_state(s, c)
        db = files["db.json"]
        for new in complete(run):
            rest = db[len(new) :]
            if db.startswith(new) and rest and any(o.endswith(rest) for o in complete(run)):
                tails.append(db)
    assert tails
    for db in tails:
        with pytest.raises(ValueError):
            json.loads(db)


def test_tinydb_an_enospc_in_the_middle_of_a_save_leaves_an_unreadable_database() -> None:
    """A4 (and A1) under process-crash with a fault: a write(2) that fails part-way
    (ENOSPC) leaves db.json torn, and the database no longer loads."""
    need("tinydb")
    s, result = verify("tinydb_target.py:factory", workloads=["first-save"], faults=True)
    hits = [c for c in found(result, "A4", "process-crash", fault=True) if "A1" in c.broken]
    assert hits
    files, run, _ = crash_state(s, hits[0])
    assert files["db.json"] not in complete(run) and files["db.json"] != b""


def test_tinydb_never_fsyncs_the_directory_so_a_power_cut_can_drop_db_json() -> None:
    """A2 under posix (power-loss-reorder): after the save was acknowledged, db.json's directory
    entry is lost (it was never made durable) and the database is empty again."""
    need("tinydb")
    s, result = verify("tinydb_target.py:factory", workloads=["first-save"], model="all")
    hits = found(result, "A2", "posix")  # "all": the families by name (issue 20)
    assert hits
    assert not found(result, "A2", "process-crash")
    files, _, _ = crash_state(s, next(c for c in hits if not c.crash_state))
    assert "db.json" not in files


def test_tinydb_a_power_cut_before_the_first_fsync_leaves_a_zero_filled_database() -> None:
    """A1 under power-loss: db.json at its new size without its data; TinyDB raises."""
    need("tinydb")
    s, result = verify("tinydb_target.py:factory", workloads=["first-save"], model="power-loss")
    zeros = []
    for c in found(result, "A1", "power-loss"):
        db = crash_state(s, c)[0].get("db.json", b"")
        if db and db.strip(b"\0") == b"":
            zeros.append(db)
    assert zeros


# --- safer -------------------------------------------------------------------------


def _safer_power_loss(target: str) -> None:
    need("safer")
    s, result = verify(target, workloads=["first-save"], model="all")
    assert not [c for c in result.counterexamples if c.model == "process-crash"]
    for invariant in ("A1", "A2"):
        assert found(result, invariant, "ext4")  # "all": the families by name (issue 20)
    # The run completed (save acknowledged), and after the power cut the renamed
    # document holds none of the bytes it was written with: no fsync before the rename.
    torn = [c for c in found(result, "A1", "ext4") if "A2" in c.broken]
    assert torn
    states = [crash_state(s, c) for c in torn]
    assert any(
        files.get("doc.json") is not None and files["doc.json"].strip(b"\0") == b""
        for files, _, _ in states
    )
    assert all(c.crash_point == len(crash_state(s, c)[1].ops) for c in torn)


def test_safer_default_renames_an_unsynced_file_over_the_document() -> None:
    _safer_power_loss("safer_target.py:factory")


def test_safer_temp_file_renames_an_unsynced_file_over_the_document() -> None:
    _safer_power_loss("safer_target.py:temp_file_factory")


# --- configobj -----------------------------------------------------------------------


def test_configobj_a_kill_during_write_leaves_a_prefix_that_parses_as_another_config() -> None:
    """A1 under process-crash: settings.ini holds the first page of a >4 KiB config;
    ConfigObj reads it as a config nobody saved (the last value cut short)."""
    configobj = need("configobj")
    s, result = verify("configobj_target.py:factory", workloads=["resize"])
    hits = found(result, "A1", "process-crash")
    assert hits
    files, run, _ = crash_state(s, hits[0])
    ini = files["settings.ini"]
    assert len(ini) % PAGE == 0 and any(b.startswith(ini) and b != ini for b in complete(run))
    parsed = dict(configobj.ConfigObj(ini.decode("utf-8").splitlines()))
    saved = [st.payload[1] for st in run.steps if st.payload and st.payload[0] == "save"]
    assert parsed and parsed not in saved


def test_configobj_a_kill_after_the_truncating_open_resets_the_config() -> None:
    """A2 under process-crash: open(path, "wb") truncated settings.ini and the kill
    came before the write: the previous, acknowledged config is gone ({})."""
    need("configobj")
    s, result = verify("configobj_target.py:factory", workloads=["save-after-failure"])
    hits = [c for c in found(result, "A2", "process-crash") if c.crash_state]
    assert hits
    files, run, _ = crash_state(s, hits[0])
    assert files == {"settings.ini": b""}
    assert run.steps[0].error is None  # a save was acknowledged before


def test_configobj_an_enospc_on_write_leaves_the_config_empty() -> None:
    """A4 (and A2) under process-crash with ENOSPC at the write (the fault the
    save-after-failure workload arms): the failed save has already truncated
    settings.ini; the last acknowledged config is gone."""
    need("configobj")
    s, result = verify("configobj_target.py:factory", workloads=["save-after-failure"])
    hits = [c for c in found(result, "A4", "process-crash", fault=True) if "A2" in c.broken]
    assert hits and all(c.fault.endswith(":ENOSPC") for c in hits)
    files, _, _ = crash_state(s, hits[0])
    assert files == {"settings.ini": b""}


def test_configobj_a_write_that_fails_part_way_leaves_a_torn_config() -> None:
    """A4 (and A1) under process-crash with --faults: a write(2) that fails part-way
    (a short write, then ENOSPC) leaves settings.ini torn."""
    need("configobj")
    s, result = verify("configobj_target.py:factory", workloads=["save-after-failure"], faults=True)
    hits = [c for c in found(result, "A4", "process-crash", fault=True) if "A1" in c.broken]
    assert hits
    files, run, _ = crash_state(s, hits[0])
    assert files["settings.ini"] and files["settings.ini"] not in complete(run)


# --- python-dotenv -------------------------------------------------------------------


def test_dotenv_set_key_renames_an_unsynced_file_over_the_env_file() -> None:
    """A2 under ext4 (power-loss): set_key returned, then a power cut leaves .env without its
    bytes (the temporary copy was never fsynced before os.replace) or leaves the old
    directory entry (the rename was never made durable): DOCUMENT is gone. Atomic under
    a process crash."""
    need("dotenv")
    s, result = verify("dotenv_target.py:factory", workloads=["first-save"], model="all")
    assert not [c for c in result.counterexamples if c.model == "process-crash"]
    hits = found(result, "A2", "ext4")  # "all": the families by name (issue 20)
    assert hits and all(c.crash_point == len(crash_state(s, c)[1].ops) for c in hits)
    states = [crash_state(s, c)[0] for c in hits]
    # .env present but holding none of the bytes written (a zero-filled or empty file)
    assert any(".env" in f and f[".env"].strip(b"\0") == b"" for f in states)
    # .env absent: the rename did not survive; only the temporary copy (a leftover)
    assert any(".env" not in f for f in states)


def test_configobj_a_power_cut_after_write_leaves_a_zero_filled_config() -> None:
    """A1 and A2 under power-loss: write() returned (nothing fsynced); settings.ini
    keeps its new size without its data, and ConfigObj raises on it."""
    configobj = need("configobj")
    s, result = verify("configobj_target.py:factory", workloads=["first-save"], model="power-loss")
    zeros = []
    for c in found(result, "A1", "power-loss"):
        if "A2" not in c.broken:
            continue
        ini = crash_state(s, c)[0].get("settings.ini", b"")
        if ini and ini.strip(b"\0") == b"":
            zeros.append(ini)
    assert zeros
    with pytest.raises(configobj.ConfigObjError):
        configobj.ConfigObj(zeros[0].decode("utf-8").splitlines())


# --- issue 22: pickledb 0.9.2 and OmegaConf ---------------------------------------------


def test_pickledb_092_dump_truncates_in_place_and_a_kill_leaves_an_unloadable_database() -> None:
    """A2 under process-crash. pickledb 0.9.2's ``dump`` is ``json.dump(self.db,
    open(self.loco, 'wt'))`` (pickledb.py:92, then the same in a ``Thread``): the open
    truncates ``pickle.db`` in place before the JSON is written. Killed in between, the
    file is empty, and ``pickledb.load`` (``json.load(open(...))`` whenever the file
    exists, pickledb.py:102) raises, so the previous acknowledged value is gone."""
    need("pickledb")
    s, result = verify("pickledb_target.py:factory", workloads=["resize"], shrink=False)
    hits = [c for c in found(result, "A2", "process-crash") if c.crash_state]
    assert hits
    states = [crash_state(s, c) for c in hits[:6]]
    empty = [(files, run) for files, run, _ in states if files.get("pickle.db") == b""]
    assert empty, [f for f, _, _ in states]
    assert empty[0][1].steps[0].error is None  # a save was acknowledged before


def test_omegaconf_save_truncates_in_place_and_a_kill_resets_the_config() -> None:
    """A2 under process-crash. ``OmegaConf.save`` is ``with io.open(path, "w") as file:
    file.write(data)`` (omegaconf/omegaconf.py:223): the open truncates config.yaml and
    the YAML follows. Killed in between, the file is empty, which ``OmegaConf.load``
    reads as an empty config without an error (``yaml.load`` gives None, and
    ``OmegaConf.create()`` an empty ``DictConfig``): the acknowledged config is silently
    gone."""
    need("omegaconf")
    s, result = verify("omegaconf_target.py:factory", workloads=["save-after-failure"])
    hits = [c for c in found(result, "A2", "process-crash") if c.crash_state]
    assert hits
    states = [crash_state(s, c) for c in hits[:6]]
    empty = [(files, run) for files, run, _ in states if files == {"config.yaml": b""}]
    assert empty, [f for f, _, _ in states]
    assert empty[0][1].steps[0].error is None  # a save was acknowledged before
