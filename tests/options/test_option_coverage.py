"""Every option of `nbeval.evaluate()` and of the `nbeval` command names the tests of its effect.

`COVERAGE` maps each option to the tests that check what it does (not merely that a call with it
does not crash). The options are read at test time from `inspect.signature(nbeval.evaluate)` and
from the command objects `nbeval.cli.build_parser()` is built from (`nbeval.commands`), so:

* adding a parameter, a subcommand or a flag without an entry here fails (write its test first);
* an entry for an option that no longer exists fails;
* every named test must exist in its file (found by parsing the file, not by importing it), and
  at least one of an option's tests must mention the option (`name=` for a parameter, the flag's
  spelling for a flag, the subcommand's name for a command or a positional argument).

A test can also say what it covers where it is written, with `@pytest.mark.covers("nbeval hello",
"nbeval hello --name")`: those entries join `COVERAGE`, so a new subcommand is its module and its
test, with no line here.

Keys: `evaluate(<parameter>)`; `nbeval <command...>` for a subcommand (`nbeval evaluator show`);
`nbeval <command...> --flag` (its first long spelling) for a flag (`nbeval run --evaluators` for
`-e/--evaluators`); `nbeval <command...> <dest>` for a positional argument (`nbeval run data`).
Test names: `tests/<path>.py::<function>` or `tests/<path>.py::<Class>::<method>`; a parametrised
test is named without its `[...]`.
"""

from __future__ import annotations

import ast
import inspect
from functools import cache
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import program_arguments
from nbeval.commands import all_commands

ROOT = Path(__file__).resolve().parents[2]

COVERAGE: dict[str, list[str]] = {
    # -- nbeval.evaluate() ------------------------------------------------------------------------
    "evaluate(data)": [
        "tests/test_engine.py::test_accepts_path_dataframe_lab_and_records",
        "tests/test_engine.py::test_suite_without_answers_is_a_clear_error",
    ],
    "evaluate(evaluators)": [
        "tests/options/test_evaluators_argument.py::test_every_form_runs_the_same_evaluators",
        "tests/options/test_evaluators_argument.py::test_params_given_with_the_evaluator_take_effect",
        "tests/test_engine.py::test_unknown_evaluator_and_parameter_errors",
        "tests/evaluators/test_trust_empty_evaluators.py::test_evaluate_with_no_evaluators_raises",
    ],
    "evaluate(options)": [
        "tests/options/test_run_options_entry_points.py::test_an_option_given_either_way_makes_the_same_plan",
        "tests/options/test_run_options_entry_points.py::test_a_keyword_wins_over_options",
    ],
    "evaluate(progress)": [
        "tests/options/test_progress_option.py::test_evaluate_progress_draws_a_bar_on_stderr_only_when_asked",
    ],
    "evaluate(embedder)": [
        "tests/options/test_embedder_option.py::test_a_local_path_is_the_model_used",
        "tests/options/test_embedder_option.py::test_a_model_name_is_looked_up_not_taken_for_an_embedder",
        "tests/options/test_embedder_option.py::test_an_object_without_encode_is_refused_on_its_rows",
    ],
    "evaluate(judge)": [
        "tests/judges/test_judge_runs.py::test_python_callable_judge",
        "tests/judges/test_judge_runs.py::test_per_evaluator_judge_overrides_the_run_judge",
        "tests/options/test_hf_judge_device.py::test_cpu_device_is_used",
    ],
    "evaluate(device)": [
        "tests/options/test_device_option.py::test_device_cpu_loads_the_embedder_on_the_cpu",
        "tests/options/test_device_option.py::test_device_cuda_reaches_the_embedder",
        "tests/options/test_hf_judge_device.py::test_cuda_device_reaches_the_judge",
        "tests/options/test_hf_judge_device.py::test_settings_that_name_a_device_win",
    ],
    "evaluate(cache)": [
        "tests/options/test_judge_call_options.py::test_cache_false_asks_again_on_every_run",
        "tests/options/test_judge_call_options.py::test_cache_true_keeps_replies_under_nbeval_cache_dir",
        "tests/options/test_judge_call_options.py::test_cache_path_is_where_replies_are_kept",
        "tests/judges/test_judge_runs.py::test_second_run_asks_nothing",
    ],
    "evaluate(concurrency)": [
        "tests/options/test_judge_call_options.py::test_concurrency_is_the_most_judge_calls_in_flight",
        "tests/options/test_judge_call_options.py::test_concurrency_bounds_a_python_judge_too",
    ],
    "evaluate(timeout)": [
        "tests/options/test_judge_call_options.py::test_timeout_abandons_a_slow_python_judge_on_its_row",
        "tests/chat/test_trust_deadlines.py::test_a_run_with_a_dripping_judge_finishes_with_the_rows_error",
    ],
    "evaluate(max_attempts)": [
        "tests/options/test_judge_call_options.py::test_max_attempts_is_how_often_a_failing_call_is_tried",
        "tests/options/test_judge_call_options.py::test_max_attempts_lets_a_call_recover_from_earlier_failures",
    ],
    "evaluate(prices)": [
        "tests/options/test_judge_call_options.py::test_prices_turn_the_tokens_into_cost",
        "tests/judges/test_judge_runs.py::test_second_run_asks_nothing",
    ],
    "evaluate(dry_run)": [
        "tests/options/test_dry_run_counts.py::test_dry_run_counts_the_calls_the_run_makes",
        "tests/test_engine.py::test_dry_run_counts_without_scoring",
        "tests/judges/test_judge_runs.py::test_dry_run_estimates_without_calling",
    ],
    "evaluate(cancel)": [
        "tests/options/test_cancel_keeps_answers.py::test_a_finished_batch_is_kept_when_cancel_comes_during_it",
        "tests/test_engine.py::test_cancel_returns_partial_result_with_the_rest_marked",
        "tests/test_progress_cancel.py::test_cancel_stops_new_judge_calls_and_keeps_the_calls_in_flight",
        "tests/test_progress_cancel.py::test_a_run_whose_rows_all_finished_is_not_marked_cancelled",
    ],
    "evaluate(on_progress)": [
        "tests/test_engine.py::test_progress_callback_sees_growing_partial_results",
        "tests/test_engine_live.py::test_on_progress_gets_one_live_result_that_grows",
        "tests/test_progress_cancel.py::test_on_progress_moves_as_answers_arrive",
    ],
    "evaluate(scheduler)": [
        "tests/scale/test_dask_runs.py::test_a_cluster_run_equals_a_local_run_row_for_row",
        "tests/scale/test_dask_runs.py::test_judge_calls_share_one_limit_and_the_client_caches_the_replies",
        "tests/scale/test_dask_runs.py::test_cancel_stops_the_cluster_run_and_marks_the_rest",
    ],
    "evaluate(chunk_rows)": [
        "tests/test_engine.py::test_progress_callback_sees_growing_partial_results",
        "tests/options/test_cancel_keeps_answers.py::test_a_finished_batch_is_kept_when_cancel_comes_during_it",
    ],
    "evaluate(batch)": [
        "tests/chat/test_batch.py::test_batched_requests_and_values_equal_the_synchronous_ones",
        "tests/chat/test_batch.py::test_ragas_faithfulness_takes_one_batch_per_round",
        "tests/chat/test_batch_resume.py::test_a_run_killed_while_it_polls_resumes_the_same_batch",
        "tests/chat/test_batch_resume.py::test_cancel_cancels_the_batch_at_the_provider",
        "tests/chat/test_batch_progress.py::test_on_progress_hears_the_batch_while_no_row_finishes",
    ],
    "evaluate(batch_poll_s)": [
        "tests/chat/test_batch.py::test_batch_poll_s_is_how_long_the_run_waits_between_polls",
    ],
    "evaluate(batch_discount)": [
        "tests/chat/test_batch.py::test_batch_discount_is_the_share_of_the_price_a_batched_call_saves",
        "tests/chat/test_batch.py::test_the_dry_run_prices_the_calls_both_ways",
    ],
    "nbeval --version": ["tests/cli/test_cli_polish.py::test_version"],
    # -- nbeval evaluators ------------------------------------------------------------------------
    "nbeval evaluators text": ["tests/cli/test_cli_polish.py::test_evaluators_filter_like_the_magic"],
    "nbeval evaluators": [
        "tests/cli/test_cli.py::test_evaluators_lists_the_catalogue",
        "tests/cli/test_cli.py::test_evaluators_marks_judges_exactly_when_judge_configured_says_none",
    ],
    "nbeval evaluators --family": [
        "tests/options/test_cli_catalogue_and_demo.py::test_family_lists_exactly_that_family",
        "tests/cli/test_cli_polish.py::test_unknown_family_is_refused",
    ],
    "nbeval evaluators --json": [
        "tests/options/test_cli_json.py::test_evaluators_json_is_standard",
        "tests/cli/test_cli.py::test_evaluators_lists_the_catalogue",
    ],
    # -- nbeval evaluator show ----------------------------------------------------------------------
    "nbeval evaluator show": ["tests/cli/test_cli.py::test_evaluator_show"],
    "nbeval evaluator show id": ["tests/cli/test_cli.py::test_evaluator_show"],
    # -- nbeval run ---------------------------------------------------------------------------------
    "nbeval run": ["tests/cli/test_cli.py::test_run_writes_result_and_report"],
    "nbeval run data": [
        "tests/cli/test_cli.py::test_run_writes_result_and_report",
        "tests/cli/test_cli.py::test_bad_input_exits_2_naming_file_row_field",
        "tests/cli/test_cli_polish.py::test_run_demo_means_the_demo_lab",
    ],
    "nbeval run --evaluators": [
        "tests/cli/test_cli.py::test_run_writes_result_and_report",
        "tests/cli/test_cli.py::test_unknown_evaluator_exits_2",
        "tests/evaluators/test_trust_empty_evaluators.py::test_cli_run_with_an_empty_evaluator_list_exits_2",
    ],
    "nbeval run --out": [
        "tests/cli/test_cli.py::test_run_writes_result_and_report",
        "tests/cli/test_trust_files_out_cli.py::test_run_refuses_an_out_folder_that_would_overwrite_the_input",
    ],
    "nbeval run --judge": [
        "tests/cli/test_cli.py::test_run_with_a_judge_endpoint",
        "tests/options/test_cli_run_options.py::test_judge_repeated_is_a_jury_as_in_python",
        "tests/options/test_cli_run_options.py::test_judge_with_a_comma_or_urls_that_do_not_pair_is_refused",
    ],
    "nbeval run --judge-base-url": [
        "tests/cli/test_cli.py::test_run_with_a_judge_endpoint",
        "tests/options/test_cli_run_options.py::test_judge_with_a_comma_or_urls_that_do_not_pair_is_refused",
        "tests/options/test_cli_endpoints.py::test_judge_base_url_with_the_model_from_the_environment",
        "tests/options/test_cli_endpoints.py::test_judge_base_url_without_any_model_says_what_to_give",
    ],
    "nbeval run --embedder": ["tests/options/test_embedder_option.py::test_cli_embedder_flag"],
    "nbeval run --device": ["tests/options/test_device_option.py::test_cli_device_flag"],
    "nbeval run --no-cache": ["tests/options/test_cli_run_options.py::test_no_cache_makes_a_second_run_ask_again"],
    "nbeval run --scheduler": ["tests/scale/test_dask_runs.py::test_cli_run_scores_on_the_scheduler_it_names"],
    "nbeval run --run-dir": ["tests/scale/test_dask_runs.py::test_cli_run_scores_on_the_scheduler_it_names"],
    "nbeval run --dry-run": ["tests/options/test_cli_run_options.py::test_dry_run_counts_the_calls_and_asks_nothing"],
    "nbeval run --fail-on-problems": [
        "tests/cli/test_cli.py::test_run_fail_on_problems_exits_1",
        "tests/judges/test_trust_parse_failures.py::test_gate_fails_on_unrated_rows_and_says_so",
        "tests/judges/test_trust_parse_failures.py::test_gate_reports_each_kind_that_tripped_it",
    ],
    "nbeval run --fail-on": [
        "tests/judges/test_trust_parse_failures.py::test_gate_reports_each_kind_that_tripped_it",
        "tests/judges/test_trust_parse_failures.py::test_gate_fails_on_unrated_rows_and_says_so",
        "tests/judges/test_trust_parse_failures.py::test_fail_on_rejects_unknown_kinds",
    ],
    "nbeval run --batch": [
        "tests/chat/test_batch_resume.py::test_cli_run_and_complete_with_batch",
        "tests/chat/test_batch_resume.py::test_ctrl_c_on_the_command_line_names_the_batch_left_running",
    ],
    "nbeval run --prices": [
        "tests/options/test_cli_prices.py::test_run_prices_the_dry_run_both_ways_and_the_run",
        "tests/options/test_cli_prices.py::test_a_bad_prices_option_is_a_usage_error",
    ],
    "nbeval run --no-progress": ["tests/options/test_progress_option.py::test_run_no_progress_leaves_stderr_empty"],
    # -- nbeval complete ----------------------------------------------------------------------------
    "nbeval complete": ["tests/cli/test_cli.py::test_complete_asks_every_model_and_writes_a_lab"],
    "nbeval complete suite": ["tests/cli/test_cli.py::test_complete_asks_every_model_and_writes_a_lab"],
    "nbeval complete --model": [
        "tests/cli/test_cli.py::test_complete_asks_every_model_and_writes_a_lab",
        "tests/options/test_cli_endpoints.py::test_complete_loads_an_hf_model_locally_beside_a_base_url",
    ],
    "nbeval complete --base-url": [
        "tests/cli/test_cli.py::test_complete_asks_every_model_and_writes_a_lab",
        "tests/options/test_cli_endpoints.py::test_complete_loads_an_hf_model_locally_beside_a_base_url",
    ],
    "nbeval complete --system-prompt": [
        "tests/options/test_cli_complete_options.py::test_system_prompt_is_sent_before_every_prompt",
    ],
    "nbeval complete --concurrency": [
        "tests/options/test_cli_complete_options.py::test_concurrency_is_the_most_requests_in_flight",
    ],
    "nbeval complete --out": [
        "tests/cli/test_cli.py::test_complete_asks_every_model_and_writes_a_lab",
        "tests/cli/test_trust_files_out_cli.py::test_complete_refuses_to_write_the_lab_over_the_suite",
    ],
    "nbeval complete --no-cache": [
        "tests/options/test_cli_complete_options.py::test_no_cache_makes_a_second_run_ask_again",
    ],
    "nbeval complete --dry-run": [
        "tests/options/test_cli_complete_options.py::test_dry_run_counts_the_requests_and_asks_nothing",
    ],
    "nbeval complete --batch": ["tests/chat/test_batch_resume.py::test_cli_run_and_complete_with_batch"],
    "nbeval complete --prices": ["tests/options/test_cli_prices.py::test_complete_prices_its_dry_run_both_ways"],
    "nbeval complete --no-progress": [
        "tests/options/test_progress_option.py::test_complete_no_progress_leaves_stderr_empty",
    ],
    # -- nbeval perturb / nbeval perturbators ---------------------------------------------------------
    "nbeval perturb": ["tests/perturbation/test_perturb_api.py::test_cli_perturb_writes_a_suite_that_loads"],
    "nbeval perturb suite": [
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_writes_a_suite_that_loads",
        "tests/perturbation/test_perturb_api.py::test_a_registered_perturbator_works_in_python_and_on_the_command_line",
    ],
    "nbeval perturb --perturbators": [
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_writes_a_suite_that_loads",
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_errors_are_one_line",
    ],
    "nbeval perturb --intensity": [
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_writes_a_suite_that_loads",
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_seed_and_intensity_change_the_cases",
    ],
    "nbeval perturb --seed": [
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_writes_a_suite_that_loads",
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_seed_and_intensity_change_the_cases",
    ],
    "nbeval perturb --no-originals": ["tests/perturbation/test_perturb_api.py::test_cli_perturb_no_originals"],
    "nbeval perturb --judge": [
        "tests/perturbation/test_perturb_cli_llm.py::test_judge_and_judge_base_url_choose_the_attacker",
        "tests/perturbation/test_perturb_cli_llm.py::test_an_llm_perturbator_without_a_judge_says_how_to_give_one",
        "tests/extension/test_perturb_magic_llm.py::test_the_magic_takes_the_cli_s_judge_options",
    ],
    "nbeval perturb --judge-base-url": [
        "tests/perturbation/test_perturb_cli_llm.py::test_judge_and_judge_base_url_choose_the_attacker",
        "tests/perturbation/test_perturb_cli_llm.py::test_an_llm_perturbator_without_a_judge_says_how_to_give_one",
    ],
    "nbeval perturb --dry-run": [
        "tests/perturbation/test_perturb_cli_llm.py::test_dry_run_counts_the_attacker_calls_asks_nothing_and_writes_nothing",
        "tests/extension/test_perturb_magic_llm.py::test_the_magic_s_dry_run_without_a_judge_speaks_in_the_magics_terms",
    ],
    "nbeval perturb --out": [
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_writes_a_suite_that_loads",
        "tests/perturbation/test_perturb_api.py::test_cli_perturb_errors_are_one_line",
        "tests/perturbation/test_perturb_failures.py::test_the_command_exits_2_and_leaves_the_output_alone",
    ],
    "nbeval perturb --prices": ["tests/options/test_cli_prices.py::test_perturb_prices_its_dry_run"],
    # -- nbeval generate ------------------------------------------------------------------------------
    "nbeval generate": ["tests/generation/test_generate_cli.py::test_generate_writes_the_suite_the_python_api_makes"],
    "nbeval generate documents": [
        "tests/generation/test_generate_cli.py::test_generate_writes_the_suite_the_python_api_makes",
        "tests/generation/test_generate_cli.py::test_generate_bad_input_is_one_line_and_exit_2",
    ],
    "nbeval generate --cases": [
        "tests/generation/test_generate_cli.py::test_generate_writes_the_suite_the_python_api_makes",
        "tests/generation/test_generate_cli.py::test_generate_options_reach_the_generator",
    ],
    "nbeval generate --kinds": [
        "tests/generation/test_generate_cli.py::test_generate_options_reach_the_generator",
        "tests/generation/test_generate_cli.py::test_generate_bad_input_is_one_line_and_exit_2",
    ],
    "nbeval generate --persona": ["tests/generation/test_generate_cli.py::test_generate_options_reach_the_generator"],
    "nbeval generate --seed": ["tests/generation/test_generate_cli.py::test_generate_options_reach_the_generator"],
    "nbeval generate --chunk-size": [
        "tests/generation/test_generate_cli.py::test_generate_options_reach_the_generator"
    ],
    "nbeval generate --max-chars": [
        "tests/generation/test_hostile_documents.py::test_the_command_line_takes_the_caps",
    ],
    "nbeval generate --max-pages": [
        "tests/generation/test_hostile_documents.py::test_the_command_line_takes_the_caps",
    ],
    "nbeval generate --judge": [
        "tests/generation/test_generate_cli.py::test_generate_writes_the_suite_the_python_api_makes",
        "tests/generation/test_generate_cli.py::test_generate_without_a_judge_says_how_to_give_one",
    ],
    "nbeval generate --judge-base-url": [
        "tests/generation/test_generate_cli.py::test_generate_writes_the_suite_the_python_api_makes"
    ],
    "nbeval generate --out": [
        "tests/generation/test_generate_cli.py::test_generate_writes_the_suite_the_python_api_makes",
        "tests/generation/test_generate_cli.py::test_generate_out_must_not_overwrite_a_document",
        "tests/generation/test_generate_failures.py::test_the_command_exits_2_naming_a_refused_key_and_leaves_the_output_alone",
    ],
    "nbeval generate --no-cache": ["tests/generation/test_generate_cli.py::test_generate_options_reach_the_generator"],
    "nbeval generate --no-progress": [
        "tests/generation/test_generate_report_and_review.py::test_cli_generate_draws_the_bar_unless_no_progress"
    ],
    "nbeval generate --dry-run": [
        "tests/generation/test_generate_cli.py::test_generate_dry_run_counts_and_writes_nothing",
        "tests/generation/test_generate_cli.py::test_generate_without_a_judge_says_how_to_give_one",
    ],
    "nbeval generate --batch": [
        "tests/generation/test_generate_batch.py::test_cli_generate_batch_sends_one_batch_and_writes_the_same_suite",
    ],
    "nbeval generate --prices": [
        "tests/options/test_cli_prices.py::test_generate_prices_its_dry_run_both_ways_and_the_report",
    ],
    # -- nbeval diff / nbeval runs ----------------------------------------------------------------------
    "nbeval diff": ["tests/cli/test_diff_runs_cli.py::test_diff_prints_the_regression_and_fails_only_when_asked"],
    "nbeval diff before": [
        "tests/cli/test_diff_runs_cli.py::test_diff_prints_the_regression_and_fails_only_when_asked",
        "tests/cli/test_diff_runs_cli.py::test_diff_of_a_folder_that_is_not_a_result_is_a_clear_error",
    ],
    "nbeval diff after": ["tests/cli/test_diff_runs_cli.py::test_diff_prints_the_regression_and_fails_only_when_asked"],
    "nbeval diff --min-effect": [
        "tests/cli/test_diff_runs_cli.py::test_a_min_effect_larger_than_the_change_is_not_a_regression"
    ],
    "nbeval diff --alpha": ["tests/cli/test_diff_runs_cli.py::test_diff_as_json"],
    "nbeval diff --fail-on-regression": [
        "tests/cli/test_diff_runs_cli.py::test_diff_prints_the_regression_and_fails_only_when_asked",
        "tests/cli/test_diff_runs_cli.py::test_a_min_effect_larger_than_the_change_is_not_a_regression",
    ],
    "nbeval diff --json": ["tests/cli/test_diff_runs_cli.py::test_diff_as_json"],
    "nbeval diff --min-shared": [
        "tests/results/test_diff_gate.py::test_few_shared_rows_fail_below_min_shared",
        "tests/results/test_diff_gate.py::test_a_suite_that_grew_is_measured_against_the_larger_run",
    ],
    "nbeval runs": ["tests/cli/test_diff_runs_cli.py::test_runs_lists_the_saved_runs"],
    "nbeval runs folder": ["tests/cli/test_diff_runs_cli.py::test_runs_lists_the_saved_runs"],
    "nbeval runs --json": ["tests/cli/test_diff_runs_cli.py::test_runs_lists_the_saved_runs"],
    "nbeval perturbators": [
        "tests/perturbation/test_perturb_api.py::test_cli_perturbators_lists_ids_names_and_meaning",
        "tests/perturbation/test_perturb_cli_llm.py::test_the_perturbators_listing_keeps_its_columns_aligned",
    ],
    "nbeval perturbators --json": [
        "tests/perturbation/test_perturb_api.py::test_cli_perturbators_lists_ids_names_and_meaning"
    ],
    # -- nbeval demo --------------------------------------------------------------------------------
    "nbeval demo": ["tests/cli/test_cli.py::test_demo_runs_offline"],
    "nbeval demo --out": ["tests/cli/test_cli.py::test_demo_runs_offline"],
    "nbeval demo --no-embedding": [
        "tests/options/test_cli_catalogue_and_demo.py::test_demo_no_embedding_leaves_the_embedding_evaluators_out",
    ],
    "nbeval demo --no-progress": ["tests/options/test_progress_option.py::test_demo_no_progress_leaves_stderr_empty"],
    "nbeval demo --verbose": [
        "tests/test_summary_readable.py::test_demo_verbose_prints_the_full_summary",
        "tests/test_summary_readable.py::test_demo_opens_on_one_screen",
    ],
    # -- nbeval serve -------------------------------------------------------------------------------
    "nbeval serve": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
        "tests/serve/test_cli_serve.py::test_the_command_refuses_a_reachable_host_without_a_token",
    ],
    "nbeval serve --host": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
        "tests/serve/test_cli_serve.py::test_the_command_refuses_a_reachable_host_without_a_token",
        "tests/serve/test_cli_serve.py::test_no_auth_on_loopback_with_a_python_app_and_workers",
    ],
    "nbeval serve --port": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
        "tests/serve/test_cli_serve.py::test_no_auth_on_loopback_with_a_python_app_and_workers",
    ],
    "nbeval serve --token": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
        "tests/serve/test_cli_serve.py::test_serve_refuses_bad_settings",
    ],
    "nbeval serve --no-auth": [
        "tests/serve/test_cli_serve.py::test_no_auth_on_loopback_with_a_python_app_and_workers",
        "tests/serve/test_cli_serve.py::test_serve_refuses_bad_settings",
        "tests/serve/test_cli_serve.py::test_the_command_refuses_a_reachable_host_without_a_token",
    ],
    "nbeval serve --retriever": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
        "tests/serve/test_cli_serve.py::test_serve_refuses_bad_settings",
    ],
    "nbeval serve --documents": [
        "tests/serve/test_cli_serve.py::test_documents_gives_the_expected_documents_chunks",
    ],
    "nbeval serve --app": [
        "tests/serve/test_cli_serve.py::test_no_auth_on_loopback_with_a_python_app_and_workers",
        "tests/serve/test_cli_serve.py::test_serve_refuses_bad_settings",
    ],
    "nbeval serve --app-base-url": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
    ],
    "nbeval serve --app-model": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
        "tests/serve/test_cli_serve.py::test_serve_refuses_bad_settings",
    ],
    "nbeval serve --judge": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
    ],
    "nbeval serve --judge-base-url": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
    ],
    "nbeval serve --max-body-bytes": [
        "tests/serve/test_cli_serve.py::test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge",
        "tests/serve/test_limits.py::test_a_body_one_byte_over_is_refused",
    ],
    "nbeval serve --workers": [
        "tests/serve/test_cli_serve.py::test_no_auth_on_loopback_with_a_python_app_and_workers",
        "tests/serve/test_evaluations.py::test_workers_bounds_the_runs_at_once",
    ],
    "nbeval serve --data-dir": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_connection_bounds_to_uvicorn",
        "tests/serve/test_redteam.py::test_a_finished_job_is_served_after_a_restart",
    ],
    "nbeval serve --keep-jobs": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_request_and_job_limits",
    ],
    "nbeval serve --keep-bytes": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_request_and_job_limits",
        "tests/serve/test_redteam.py::test_jobs_are_forgotten_by_size_as_well_as_count",
    ],
    "nbeval serve --max-scores": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_request_and_job_limits",
        "tests/serve/test_redteam.py::test_a_request_over_the_score_limit_is_refused",
    ],
    "nbeval serve --max-judge-calls": [
        "tests/serve/test_judge_call_budget.py::test_the_command_passes_max_judge_calls",
        "tests/serve/test_judge_call_budget.py::test_a_request_over_the_judge_call_limit_is_refused_before_any_call",
    ],
    "nbeval serve --max-judge-tokens": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_request_and_job_limits",
        "tests/serve/test_redteam.py::test_max_tokens_is_capped_by_the_servers_setting",
    ],
    "nbeval serve --allow-models": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_request_and_job_limits",
        "tests/serve/test_redteam.py::test_evaluators_that_load_a_model_are_refused_unless_allowed",
    ],
    "nbeval serve --limit-concurrency": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_connection_bounds_to_uvicorn",
        "tests/serve/test_redteam.py::test_past_the_connection_limit_waiting_connections_make_room_and_busy_ones_get_503",
        "tests/serve/test_slow_clients.py::test_the_connection_limit_is_lowered_to_the_files_the_process_may_open",
    ],
    "nbeval serve --body-timeout": [
        "tests/serve/test_slow_clients.py::test_the_command_passes_the_body_deadline_and_the_queue_bound",
        "tests/serve/test_slow_clients.py::test_a_body_that_never_arrives_is_answered_408_within_the_deadline",
        "tests/serve/test_slow_clients.py::test_a_body_that_arrives_in_time_is_not_cut_off",
    ],
    "nbeval serve --max-queued": [
        "tests/serve/test_slow_clients.py::test_the_command_passes_the_body_deadline_and_the_queue_bound",
        "tests/serve/test_queue.py::test_past_max_queued_a_request_gets_503_with_retry_after",
        "tests/serve/test_queue.py::test_max_queued_zero_takes_only_what_the_workers_can_start",
    ],
    "nbeval serve --timeout-keep-alive": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_connection_bounds_to_uvicorn",
    ],
    "nbeval serve --header-timeout": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_connection_bounds_to_uvicorn",
        "tests/serve/test_redteam.py::test_a_client_that_never_finishes_its_head_is_cut_off",
    ],
    "nbeval serve --max-header-bytes": [
        "tests/serve/test_redteam.py::test_the_command_passes_the_connection_bounds_to_uvicorn",
    ],
}


# -- what exists ------------------------------------------------------------------------------------


def evaluate_options() -> dict[str, str]:
    """Key -> what a test must mention, for every parameter of `nbeval.evaluate`."""
    out = {}
    for name, param in inspect.signature(nbeval.evaluate).parameters.items():
        if param.kind is param.VAR_KEYWORD:  # **keywords: Unpack[RunKeywords], one per run option
            out.update({f"evaluate({option})": f"{option}=" for option in nbeval.RunOptions.names()})
            continue
        positional = param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)
        out[f"evaluate({name})"] = "evaluate(" if positional else f"{name}="
    return out


def cli_options() -> dict[str, tuple[str, ...]]:
    """Key -> the spellings a test may use (any one of them), for every subcommand, flag and
    positional argument of `nbeval` (help aside), read from the command objects that build its parser."""
    out: dict[str, tuple[str, ...]] = {}
    for a in program_arguments():
        out[f"nbeval {a.spelling}"] = a.option_strings
    for command in all_commands():
        if not command.cli:
            continue
        key, last = f"nbeval {command.name}", command.name.split()[-1]
        out[key] = (last,)
        for a in command.arguments:
            out[f"{key} {a.spelling if a.option_strings else a.dest}"] = a.option_strings or (last,)
    return out


def all_options() -> dict[str, tuple[str, ...]]:
    """Every option's key and the strings a test of it may mention (quoted for CLI spellings)."""
    options: dict[str, tuple[str, ...]] = {k: (v,) for k, v in evaluate_options().items()}
    options.update({k: tuple(f'"{s}"' for s in v) for k, v in cli_options().items()})
    return options


@cache
def _defined_tests(path: Path) -> dict[str, str]:
    """Test name (`func` or `Class::method`) -> its source, decorators included, from parsing `path`."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))

    def source(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        parts = [ast.get_source_segment(text, d) or "" for d in node.decorator_list]
        return "\n".join([*parts, ast.get_source_segment(text, node) or ""])

    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = source(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[f"{node.name}::{item.name}"] = source(item)
    return found


def _resolve(ref: str) -> str | None:
    """The source of the test ``ref`` names, or ``None`` when its file or function does not exist."""
    path, sep, name = ref.partition("::")
    if not sep or not path.startswith("tests/") or not path.endswith(".py") or "[" in name:
        return None
    file = ROOT / path
    if not file.is_file():
        return None
    return _defined_tests(file).get(name)


def _covers_keys(decorator: ast.expr) -> list[str]:
    """The keys of a ``@pytest.mark.covers("key", ...)`` decorator (none for any other decorator)."""
    if not isinstance(decorator, ast.Call):
        return []
    f = decorator.func
    if not (isinstance(f, ast.Attribute) and f.attr == "covers" and isinstance(f.value, ast.Attribute)):
        return []
    if f.value.attr != "mark":
        return []
    return [a.value for a in decorator.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]


@cache
def declared_coverage(root: Path = ROOT) -> dict[str, list[str]]:
    """Key -> tests, from the ``@pytest.mark.covers(...)`` marks on the tests under ``root``/tests."""
    found: dict[str, list[str]] = {}
    for path in sorted((root / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if "mark.covers(" not in text:
            continue
        rel = path.relative_to(root).as_posix()
        for node in ast.parse(text, filename=str(path)).body:
            items = [(node.name, node)] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            if isinstance(node, ast.ClassDef):
                items = [
                    (f"{node.name}::{m.name}", m)
                    for m in node.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                ]
            for name, fn in items:
                for key in (k for d in fn.decorator_list for k in _covers_keys(d)):
                    found.setdefault(key, []).append(f"{rel}::{name}")
    return found


def coverage() -> dict[str, list[str]]:
    """`COVERAGE` with the entries the tests declare themselves (:func:`declared_coverage`)."""
    merged = {key: list(refs) for key, refs in COVERAGE.items()}
    for key, refs in declared_coverage().items():
        merged.setdefault(key, []).extend(refs)
    return merged


# -- the checks -------------------------------------------------------------------------------------


def test_the_options_are_read_from_the_code() -> None:
    options = all_options()
    # a sanity check on the readers themselves, so that an empty reading cannot pass
    assert {
        "evaluate(judge)",
        "evaluate(concurrency)",
        "nbeval run --no-cache",
        "nbeval run data",
        "nbeval evaluator show id",
        "nbeval demo",
    } <= set(options)
    assert not any(k.endswith(("--help", " help")) for k in options)


def test_every_option_has_a_test_and_every_entry_an_option() -> None:
    options = set(all_options())
    covered = coverage()
    missing = sorted(options - set(covered))
    stale = sorted(set(covered) - options)
    assert not missing, (
        "options without a test of their effect; write one and mark it @pytest.mark.covers(<key>) or list it "
        f"in COVERAGE (tests/options/test_option_coverage.py): {missing}"
    )
    assert not stale, f"COVERAGE or a covers mark names options that no longer exist: {stale}"


@pytest.mark.parametrize("key", sorted(coverage()))
def test_every_named_test_exists(key: str) -> None:
    refs = coverage()[key]
    assert refs, f"{key}: no tests listed"
    absent = [ref for ref in refs if _resolve(ref) is None]
    assert not absent, f"{key}: these tests do not exist (tests/<path>.py::<name>, no [params]): {absent}"


@pytest.mark.parametrize("key", sorted(coverage()))
def test_some_named_test_mentions_its_option(key: str) -> None:
    spellings = all_options().get(key)
    if spellings is None:
        pytest.skip("not an option any more (reported by test_every_option_has_a_test_and_every_entry_an_option)")
    sources = [s for s in map(_resolve, coverage()[key]) if s is not None]
    assert any(sp in src for src in sources for sp in spellings), (
        f"{key}: none of {coverage()[key]} mentions {' or '.join(spellings)}"
    )


def test_the_check_catches_a_missing_test() -> None:
    assert _resolve("tests/options/test_option_coverage.py::test_every_named_test_exists") is not None
    assert _resolve("tests/options/test_option_coverage.py::test_no_such_test") is None
    assert _resolve("tests/options/no_such_file.py::test_every_named_test_exists") is None
    assert _resolve("tests/options/test_option_coverage.py::test_every_named_test_exists[x]") is None


def test_a_covers_mark_is_read_from_the_test_that_carries_it(tmp_path: Path) -> None:
    (tmp_path / "tests" / "cli").mkdir(parents=True)
    (tmp_path / "tests" / "cli" / "test_hello.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.covers('nbeval hello', 'nbeval hello --name')\n"
        "def test_greets():\n    pass\n\n"
        "class TestMore:\n    @pytest.mark.covers('nbeval hello --name')\n    def test_again(self):\n        pass\n\n"
        "@pytest.mark.slow\ndef test_unmarked():\n    pass\n",
        encoding="utf-8",
    )
    assert declared_coverage(tmp_path) == {
        "nbeval hello": ["tests/cli/test_hello.py::test_greets"],
        "nbeval hello --name": [
            "tests/cli/test_hello.py::test_greets",
            "tests/cli/test_hello.py::TestMore::test_again",
        ],
    }
