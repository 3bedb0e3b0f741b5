"""The fast tier: which tests `make check` (``pytest -m "not slow"``) leaves to `make test`.

:func:`conftest.pytest_collection_modifyitems` marks these ``slow``, so the list lives in one
place. The rule, and where each part of it is checked:

- A test that starts a peer (either Pi, an OpenClaw, Claude Code) or PostgreSQL is slow: by its fixtures
  (:data:`SLOW_FIXTURES`) or its marker (:data:`SLOW_MARKERS`). Checked in every run, fast or
  full: the peers' launchers fail a fast-tier test that gets to them
  (:func:`no_peer_in_the_fast_tier`), so `make check` needs neither node nor PostgreSQL.
- A test is slow when one of its cases takes more than about a second on this machine
  under the load of other work, or all its cases more than three seconds (each is a
  fraction of that on an idle machine): mostly real gateway processes, CLIs in
  subprocesses and large generated files. Checked by hand, as other speed bars are (a
  timing is no verdict inside the suite): ``benchmarks/fast_tier.py`` times `make check`
  and names every fast-tier test over the budget. A module all of whose tests are slow is
  named whole in :data:`SLOW_MODULES`; otherwise its slow tests are named one by one, so its
  cheap ones (in-process gateways on loopback, CLI tests that need no subprocess) stay fast.
- ``tests/test_tiers.py`` checks that every name here still exists (a renamed test would
  slip into the fast tier) and that the peers' guard and the markers work.
"""

from __future__ import annotations

SLOW_FIXTURES = frozenset(
    {"pi", "pi073", "any_pi", "openclaw", "claude", "claude_base", "claude_compacted", "pg_server", "pg_url"}
)
"""Fixtures that start a peer or a database."""

SLOW_MARKERS = frozenset({"browser", "claude", "dist", "openclaw", "pi", "postgres"})
"""Markers of tests that are slow whatever they are: a real Chromium, a wheel built and installed,
node running Pi or OpenClaw, the real Claude Code (the marker is enough: such a test may start its
peer without the fixtures, as the OpenClaw continuity suite does), PostgreSQL."""

SLOW_FOLDERS = ("crash/", "crashstates/", "peers/", "conformance/")
"""Folders of tests/ whose every test is slow (the crash campaigns, OpenClaw and Claude Code, Pi conformance)."""

SLOW_MODULES = frozenset(
    {
        "cli/test_exit_codes.py",
        "pi/test_long_lines.py",
        "cli/test_tables.py",
        "continuity/test_openclaw_manifest.py",
        "continuity/test_rounds.py",
        "ui/test_access.py",
        "ui/test_tree.py",
        "continuity/test_suite.py",
        "continuity/test_suite_attached.py",
        "gateway/test_front_door.py",
        "gateway/test_gateway_process.py",
        "hostile/test_damage_sweep.py",
        "hostile/test_damaged_home.py",
        "hostile/test_fuzz_home_files.py",
        "lifecycle/test_activation_crash.py",
        "lifecycle/test_activation_gateway.py",
        "lifecycle/test_rescue.py",
        "mcp_server/test_mcp_transports.py",
    }
)
"""Modules of tests/ whose every test is slow."""

SLOW_TESTS = frozenset(
    {
        "test_test_halves.py::test_a_run_exits_with_the_halves_code_and_keeps_what_they_left",
        "agent/test_compaction_jobs.py::test_jobs_succeed_and_fail_with_their_reasons",
        "agent/test_providers.py::test_a_full_turn_with_a_tool_call_through_a_real_provider",
        "agent/test_providers.py::test_anthropic_streams_text_and_tool_calls",
        "agent/test_providers.py::test_http_errors_and_timeouts_become_provider_errors",
        "agent/test_providers.py::test_openai_streams_text_and_reports_usage",
        "cli/test_agent_cli.py::test_send_then_actions_ls_and_show",
        "runtimes/test_none_refused.py::test_what_the_quick_proof_passes_the_full_check_passes",
        "lifecycle/test_rescue_disk.py::test_on_a_real_full_disk_apply_fails_cleanly_or_verifies_and_never_half_writes",
        "runtimes/test_claude_bad_input.py::test_a_config_dir_without_read_permission_is_a_clear_error",
        "cli/test_conventions.py::test_KURAHI_HOME_beside_KOLO_HOME",
        "cli/test_conventions.py::test_a_dash_for_the_activation_candidate_and_the_provenance_transcript",
        "cli/test_conventions.py::test_a_dash_reads_the_file_from_stdin",
        "cli/test_conventions.py::test_completion_scripts_and_an_unknown_shell",
        "cli/test_conventions.py::test_empty_results_say_none",
        "cli/test_conventions.py::test_no_color_and_NO_COLOR_drop_colour",
        "cli/test_conventions.py::test_sessions_ls_finds_pi_and_openclaw_where_they_keep_state",
        "cli/test_fast.py::test_help_and_usage_errors_come_from_the_full_cli",
        "cli/test_fast.py::test_session_context_errors_are_the_full_clis",
        "cli/test_fast.py::test_session_context_json_is_the_same_both_ways_and_the_fast_way_never_loads_typer",
        "cli/test_fast.py::test_stitch_and_check_give_the_same_results_both_ways_and_the_fast_way_never_loads_typer",
        "cli/test_fast.py::test_the_fast_path_exits_at_once_with_its_output_flushed_and_its_exit_code_kept",
        "cli/test_main.py::test_a_run_loads_only_the_room_it_names",
        "cli/test_main.py::test_help_and_unknown_names_see_every_room",
        "cli/test_output.py::test_stitch_and_check_print_for_people_without_importing_rich_off_a_terminal",
        "cli/test_session_cli.py::test_tree_collapses_side_branches_and_marks_the_leaf",
        "cli/test_session_doctor.py::test_a_line_nested_100000_deep_is_read_without_a_traceback",
        "cli/test_session_doctor.py::test_a_torn_tail_is_mended_by_an_append_that_starts_on_its_own_line",
        "cli/test_session_elide.py::test_a_second_writer_is_refused",
        "context/test_live_path.py::test_a_large_live_path_is_projected_from_the_table",
        "context/test_llm_tokens.py::test_find_cut_point_matches_pi",
        "runtimes/test_claude_bad_input.py::test_a_100_mb_line_is_read_and_judged",
        "context/test_llm_tokens.py::test_messages_match_pi",
        "context/test_session_check.py::test_a_body_over_anthropics_limit_is_reported_with_no_runtime_repairing_it",
        "context/test_session_check.py::test_two_thousand_random_valid_trees_give_no_finding",
        "continuity/test_manifest.py::test_concurrent_first_use_yields_one_key",
        "continuity/test_manifest_api.py::test_kurahi_gateway_run_serves_the_manifest",
        "continuity/test_manifest_api.py::test_manifest_verifies_and_its_signer_is_stable_across_calls_and_a_restart",
        "doctor/test_doctor.py::test_a_gateway_that_answers_and_one_that_does_not",
        "doctor/test_doctor.py::test_a_new_user_with_nothing_yet",
        "doctor/test_doctor.py::test_a_read_only_home_is_reported",
        "doctor/test_doctor.py::test_finds_and_counts_kurahi_pi_and_openclaw_state",
        "doctor/test_doctor.py::test_locations_follow_the_variables_the_programs_honour",
        "doctor/test_doctor.py::test_secrets_open_to_others_fail_with_the_chmod",
        "fuzz/test_fuzz_corpus.py::test_corpus_replays_under_the_rule",
        "gateway/test_api.py::test_bad_requests_get_clear_json_errors",
        "gateway/test_api.py::test_config_apply_refuses_what_json_cannot_hold",
        "gateway/test_api.py::test_health_needs_no_token_and_everything_else_does",
        "gateway/test_ops.py::test_gateway_run_refuses_a_config_with_an_unset_key_variable",
        "gateway/test_ops.py::test_gateway_run_refuses_to_listen_beyond_loopback_and_warns_once_when_allowed",
        "gateway/test_ops.py::test_metrics_show_the_turns_made_and_a_scrape_without_the_scope_is_refused",
        "gateway/test_ops.py::test_the_access_log_has_method_path_status_and_duration_and_no_credential",
        "gateway/test_provider_retries.py::test_a_provider_that_answers_429_forever_fails_the_turn_after_the_retries",
        "gateway/test_provider_retries.py::test_a_retry_after_longer_than_the_profile_waits_fails_at_once",
        "gateway/test_provider_retries.py::test_a_server_error_that_passes_is_one_good_turn_and_other_errors_are_not_retried",
        "gateway/test_provider_retries.py::test_retry_after_is_honoured",
        "gateway/test_schema.py::test_every_operation_against_the_schema",
        "hostile/test_concurrency.py::test_a_cli_writer_is_refused_while_the_gateway_holds_the_session",
        "hostile/test_concurrency.py::test_sixteen_clients_on_one_session_are_served_one_turn_at_a_time",
        "hostile/test_faults.py::test_every_call_site",
        "hostile/test_fuzz.py::test_manifest_verifier_on_any_value",
        "hostile/test_fuzz.py::test_report_verifier_on_malformed_runs",
        "hostile/test_fuzz.py::test_transcript_reader_and_projection_on_any_lines",
        "hostile/test_hostile_output.py::test_context_json_on_hostile_input_is_what_pi_projects",
        "hostile/test_hostile_output.py::test_no_traceback_on_hostile_input",
        "hostile/test_hostile_output.py::test_tables_show_a_replacement_character",
        "hostile/test_security_http.py::test_every_token_check_is_constant_time",
        "hostile/test_security_paths.py::test_cli_agent_ids_are_refused_everywhere",
        "hostile/test_security_paths.py::test_cli_keys_ids_and_names_are_refused",
        "hostile/test_security_paths.py::test_cli_outputs_never_replace_or_follow",
        "hostile/test_security_paths.py::test_lineage_export_refuses_a_sqlite_session_id_that_climbs_out",
        "hostile/test_security_secrets.py::test_a_corrupt_catalog_is_one_line_from_send_and_from_the_gateway",
        "hostile/test_security_secrets.py::test_a_home_made_under_umask_0_is_private",
        "hostile/test_security_secrets.py::test_a_transcript_line_over_the_limit_refuses_the_file_never_loaded_whole",
        "hostile/test_security_secrets.py::test_loose_access_files_are_refused_and_left_as_they_are",
        "lifecycle/test_activation.py::test_validator_failure_through_the_cli_exits_1_with_the_comparison",
        "lifecycle/test_rollover_runtime.py::test_daily_rollover_through_the_gateway_carries_the_old_context",
        "lineage/test_draw.py::test_twenty_thousand_entries_stay_bounded",
        "lineage/test_find.py::test_locked_sqlite_store",
        "lineage/test_reference.py::test_a_line_nested_deeper_than_python_decodes_is_read",
        "store/test_audit.py::test_a_long_chain_verifies_and_names_a_late_bad_record",
        "store/test_audit.py::test_concurrent_appends_from_several_processes",
        "store/test_audit.py::test_edit_anywhere_is_found_on_both_paths",
        "store/test_audit.py::test_is_ancestor",
        "store/test_audit.py::test_tampering_is_named_at_the_first_bad_record",
        "store/test_backend_conformance.py::TestEachBackend.test_catalog_changes_are_atomic",
        "store/test_backend_conformance.py::test_gateway_run_refuses_a_password_on_the_command_line",
        "pi/test_bad_input.py::test_a_line_nested_deeper_than_python_decodes_is_read_as_json_parse_reads_it",
        "pi/test_bad_input.py::test_fifty_megabyte_line_is_read_without_hanging",
        "pi/test_bad_input.py::test_torn_fifty_megabyte_tail_is_skipped",
        "store/test_catalog.py::test_eight_processes_times_500_upserts_all_present",
        "store/test_catalog.py::test_fast_layout_equals_standard_layout",
        "store/test_catalog.py::test_lock_held_by_live_process_times_out",
        "pi/test_copy_stored.py::test_copied_bytes_are_what_json_stringify_writes",
        "pi/test_copy_stored.py::test_large_live_contexts_are_copied",
        "pi/test_copy_stored.py::test_the_entries_the_c_table_makes_are_the_entries_python_makes",
        "store/test_crash.py::test_sigkill_while_appending_loses_nothing",
        "pi/test_native_scan.py::test_awkward_files_read_the_same",
        "pi/test_native_scan.py::test_damaged_files_read_the_same",
        "pi/test_native_scan.py::test_generated_trees_read_the_same",
        "pi/test_native_scan.py::test_ordinary_entry_lines_are_plain",
        "pi/test_native_scan.py::test_plain_lines_decode_the_same_in_python",
        "pi/test_native_sha256.py::test_any_lines_hash_as_hashlib_does_on_both_paths",
        "pi/test_quick.py::test_copy_stored_gives_the_checked_scans_references",
        "pi/test_quick.py::test_damaged_files_agree_with_the_reference",
        "pi/test_quick.py::test_skim_reads_every_valid_line_as_the_full_check_does",
        "pi/test_quick.py::test_the_quick_decoder_reads_what_decode_line_reads",
        "pi/test_readers_agree.py::test_backward_forward_and_reference_agree",
        "store/test_session.py::test_lock_left_by_a_dead_process_is_reclaimed",
        "store/test_store_boundary.py::test_no_store_file_is_opened_above_store",
        "store/test_store_boundary.py::test_the_list_has_no_stale_entries",
        "js/test_canonical.py::test_canonical_json_equals_rfc8785_on_any_value",
        "js/test_canonical.py::test_fast_path_equals_rfc8785",
        "js/test_canonical.py::test_floats_printed_by_rfc8785_inside_msgspec_output",
        "js/test_deepjson.py::test_it_reads_and_writes_a_hundred_thousand_levels",
        "test_public_surface.py::test_every_command_and_option_has_help",
        "testing/test_testing_sessions.py::test_no_branch_and_no_compaction_give_one_plain_path",
        "testing/test_testing_sessions.py::test_script",
        "testing/test_testing_sessions.py::test_size_count_and_kinds",
        "testing/test_testing_sessions.py::test_the_same_shape_gives_the_same_bytes_and_another_seed_others",
    }
)
"""Single tests, as ``path::function`` (every case of a parametrised one; ``Class.method`` in a class)."""


_fast_test: str | None = None
"""The node id of the running test when it is in the fast tier (set by conftest), else ``None``."""


def running(nodeid: str | None) -> None:
    """Conftest says which fast-tier test runs now (``None``: none, or a slow one)."""
    global _fast_test
    _fast_test = nodeid


def no_peer_in_the_fast_tier(what: str) -> None:
    """Fail the running test when it is in the fast tier: it starts ``what`` (node, for a peer).

    The peers' launchers call this, so a test that starts Pi or OpenClaw without their marker
    or fixtures fails under `make check` and `make test` alike instead of slowing the fast
    tier (a continuity run against OpenClaw took minutes there) or failing on a machine
    without node, where `make check` must pass.
    """
    if _fast_test is not None:
        import pytest

        pytest.fail(
            f"{_fast_test} starts {what} but is in the fast tier: mark it pi, openclaw or claude, "
            "use the peer's fixture, or name it in tests/support/tiers.py",
            pytrace=False,
        )
