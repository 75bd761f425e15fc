"""The public API, pinned (STYLE.md §9, issue 19): each package's ``__all__`` is exactly
these names, each importable. A change to the API shows here first, on purpose."""

from __future__ import annotations

import importlib

import pytest

PUBLIC: dict[str, set[str]] = {
    "crashpoint": {
        "__version__",
        "verify",
    },
    "crashpoint.core": {
        "AgentRuntime",
        "AgentState",
        "CURRENT_VERSION",
        "Checkpoint",
        "Episode",
        "ErrorCode",
        "EventKind",
        "FileStateStorage",
        "Listener",
        "MediaPart",
        "MemoryStateStorage",
        "Message",
        "ModelChunk",
        "ModelClient",
        "ModelError",
        "ModelUsage",
        "Part",
        "PendingApproval",
        "PendingPlanReview",
        "PendingRunCheckpoint",
        "Reply",
        "Retryability",
        "Role",
        "RunConflict",
        "RunEvent",
        "RunOutcome",
        "RunStatus",
        "ScriptedModel",
        "ScriptedTools",
        "StateError",
        "StateStorage",
        "Step",
        "SystemPromptEntry",
        "TextPart",
        "ToolCall",
        "ToolExecutor",
        "ToolInterrupted",
        "ToolsEntry",
        "as_persisted",
        "decode",
        "decode_bytes",
        "encode",
        "encode_bytes",
        "media_placeholder",
        "peek_schema_version",
        "peek_session_id",
        "redact",
        "safe_session_file_name",
        "state_is_paired",
        "tool_calls_paired",
        "truncate_to_paired",
        "unanswered_calls",
    },
    "crashpoint.faultfs": {
        "CrashPoint",
        "CrashState",
        "Description",
        "DescriptorTable",
        "FAMILIES",
        "Family",
        "Fault",
        "FaultKind",
        "FileSystem",
        "Image",
        "Interception",
        "MODELS",
        "MemoryFileSystem",
        "ModelError",
        "Op",
        "OpKind",
        "OsFileSystem",
        "POWER_LOSS",
        "POWER_LOSS_REORDER",
        "PROCESS_CRASH",
        "PersistenceModel",
        "RecordingFileSystem",
        "SimulatedCrash",
        "Trace",
        "crash_points",
        "durable_at",
        "effective",
        "get_family",
        "get_model",
        "intercept",
        "makedirs",
        "os_error",
        "parse_models",
        "register_family",
        "write_bytes",
    },
    "crashpoint.scenarios": {
        "BASE_DIR",
        "Call",
        "CallKind",
        "Counterexample",
        "EngineResult",
        "Expect",
        "ExplorationResult",
        "FAULT_COLUMN",
        "Finding",
        "INVARIANTS",
        "Invariant",
        "InvariantInfo",
        "Kind",
        "KindEntry",
        "MACHINE_INVARIANTS",
        "MUTANTS",
        "Observation",
        "Run",
        "SCENARIOS",
        "SECRETS",
        "Session",
        "Step",
        "TARGETS",
        "Target",
        "VerifyResult",
        "Workload",
        "ZooRow",
        "explore",
        "explore_faults",
        "fault_plan",
        "get_target",
        "judge",
        "kill_matrix",
        "kind_names",
        "mutant",
        "parse_fault",
        "record",
        "register_invariants",
        "register_kind",
        "run_storage_machine",
        "scenario",
        "storage_state_machine",
        "unregister_kind",
        "verify",
    },
    "crashpoint.reports": {
        "MAX_LISTED",
        "build_report",
        "build_verify_report",
        "print_summary",
        "print_zoo",
        "render_markdown",
        "report_extra",
        "violation_dict",
        "write_json",
        "write_markdown",
        "zoo_dict",
    },
}


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_all_is_pinned_and_importable(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) == PUBLIC[package]
    assert len(module.__all__) == len(set(module.__all__)), "a name listed twice"
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_the_main_entry_points_are_public() -> None:
    import crashpoint
    from crashpoint.scenarios import EngineResult, ExplorationResult, VerifyResult, explore

    assert callable(crashpoint.verify) and callable(explore)
    assert ExplorationResult is EngineResult  # explore()'s result is the engine's
    assert crashpoint.verify.__module__ == "crashpoint.scenarios.jobs.verify"
    assert VerifyResult.__module__ == "crashpoint.scenarios.jobs.verdict"
    plugin = importlib.import_module("crashpoint.pytest_plugin")
    assert hasattr(plugin, "pytest_addoption")
