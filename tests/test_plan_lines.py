"""The console plan in short lines (replicate/console.py): file lists as counts, stopped jobs in one line."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from support.workflow import REPO_ROOT, run_snakemake
from replicate import console

COMMAND = ("python -m replicate train press_wolf small/seed1 --configfile config/config.yaml --threads 1 "
           "> results/logs/press_wolf/small/seed1.log 2>&1")


def test_short_quoted_words_and_single_paths_stay():
    cmd = "python -m replicate press-wolf table --name 'table6' --paper paper/reference/x.csv --out results/t.csv"
    assert console.shorten_command(cmd) == cmd


def test_file_runs_and_lists_are_counted():
    files = [f"results/runs/seed{i}/summary.json" for i in range(10)]
    assert console.shorten_files(files) == [*files[:3], "... 7 more (10 files)"]
    assert console.shorten_files(files[:4]) == files[:4]
    cmd = console.shorten_command("python -m replicate scale table " + " ".join(files) + " > results/log")
    assert "... 7 more (10 files) > results/log" in cmd
    reason = console.shorten_reason("Missing output files: results/a.csv; Input files updated by another job: "
                                       + ", ".join(files))
    assert reason == ("Missing output files: results/a.csv; Input files updated by another job: "
                      + ", ".join(files[:3]) + ", ... 7 more (10 files)")


def test_a_command_with_many_options_continues_over_lines():
    cmd = "python -m replicate x " + " ".join(f"--opt{i} results/long/path/number/{i}.csv" for i in range(20))
    lines = console.shorten_command(cmd).split("\n")
    assert len(lines) == 21 and all(line.endswith(" \\") for line in lines[:-1])
    assert max(map(len, lines)) <= console.MAX_LINE


def test_filter_rewrites_job_records_and_is_installed_once(monkeypatch):
    monkeypatch.delenv(console.ENV_FULL_PLAN, raising=False)
    logger = logging.getLogger("test_plan_lines")
    assert console.install(logger) and console.install(logger)
    assert sum(isinstance(f, console.ShortPlanFilter) for f in logger.filters) == 1
    assert sum(isinstance(f, console.PlanCostFilter) for f in logger.filters) == 1
    record = logging.LogRecord("x", logging.INFO, "", 0, "job", None, None)
    record.event, record.input, record.reason = "job_info", [f"results/f{i}" for i in range(9)], "Forced execution"
    short = next(f for f in logger.filters if isinstance(f, console.ShortPlanFilter))
    assert short.filter(record) and record.input[-1] == "... 6 more (9 files)"
    monkeypatch.setenv(console.ENV_FULL_PLAN, "1")
    full = logging.getLogger("test_plan_lines_full")
    assert not console.install(full)
    assert [type(f) for f in full.filters] == [console.PlanCostFilter], "the cost line does not depend on it"


def test_cost_filter_puts_the_plan_cost_above_the_dry_run_line():
    cost = console.PlanCostFilter(cores=2)
    for rule, minutes in (("press_wolf_train", 120), ("inan_train", 240), ("report", None)):
        record = logging.LogRecord("x", logging.INFO, "", 0, "job", None, None)
        record.event, record.rule_name, record.resources = "job_info", rule, {"one_thread_min": minutes}
        cost.filter(record)
    last = logging.LogRecord("x", logging.INFO, "", 0, f"{console.DRY_RUN} (flag -n).", None, None)
    assert cost.filter(last)
    head, tail = last.msg.rsplit("\n", 1)
    assert head.startswith("Estimated cost: 6.0 one-thread CPU hours in 3 jobs") and tail.startswith(console.DRY_RUN)


def test_default_plan_has_no_line_over_400_characters(workflow_dir):
    """`snakemake -n all` of the default preset prints no line over 400 characters."""
    proc = run_snakemake(["-n", "all"], cwd=workflow_dir, env={console.ENV_FULL_PLAN: ""})
    lines = (proc.stdout + proc.stderr).splitlines()
    assert any("python -m replicate inan table1 --configfile " in line for line in lines), "the plan prints commands"
    longest = max(lines, key=len)
    assert len(longest) <= 400, f"{len(longest)} characters: {longest[:300]}"


def _record(event, **fields):
    record = logging.LogRecord("snakemake", logging.INFO, "", 0, fields.pop("msg", "x"), None, None)
    record.event = event
    record.__dict__.update(fields)
    return record


def _error(exception: str, msg: str):
    return _record("error", msg=msg, exception=exception)


def _job_error(**fields):
    return _record("job_error", rule_name="press_wolf_train", jobid=3, rule_msg=None, shellcmd=COMMAND,
                   log=["results/logs/press_wolf/small/seed1.log"],
                   output=["results/press_wolf/small/seed1/metrics.json"], **fields)


def test_after_ctrl_c_a_stopped_job_is_one_line_that_says_how_to_resume():
    filt = console.ShortPlanFilter()
    failed = _job_error()
    assert filt.filter(failed) and failed.event == "job_error", "a failure before any interrupt keeps its block"
    assert filt.filter(_record(None, msg="Terminating processes on user request, this might take some time."))
    rule_exception = _error("RuleException", "RuleException:\nCalledProcessError in file Snakefile, line 7:\n"
                                             f"Command 'set -euo pipefail; {COMMAND}' returned non-zero exit "
                                             "status 130.")
    assert not filt.filter(rule_exception), "the exception block of a stopped job is not printed"
    failed = _job_error()
    assert filt.filter(failed) and failed.event is None and failed.args is None
    assert failed.msg == ("interrupted (Ctrl-C): rule press_wolf_train (results/press_wolf/small/seed1/metrics.json), "
                          "its log: results/logs/press_wolf/small/seed1.log; to resume, run the same snakemake command "
                          "again")
    closing = _error("WorkflowError", "WorkflowError:\nAt least one job did not complete successfully.")
    assert filt.filter(closing) and closing.msg.startswith("stopped: 1 job(s) interrupted; to resume, run the same")


def test_a_job_that_sigterm_stopped_is_one_line_and_other_failures_keep_their_blocks():
    filt = console.ShortPlanFilter()
    other = _error("RuleException", "RuleException:\nCommand 'x' returned non-zero exit status 2.")
    assert filt.filter(other)
    failed = _job_error()
    assert filt.filter(failed) and failed.event == "job_error", "a real failure keeps its block"
    closing = _error("WorkflowError", "WorkflowError:\nAt least one job did not complete successfully.")
    assert filt.filter(closing) and "did not complete" in closing.msg
    assert not filt.filter(_error("RuleException", "RuleException:\nCommand 'x' died with <Signals.SIGTERM: 15>."))
    failed = _job_error()
    assert filt.filter(failed) and failed.msg.startswith("interrupted (SIGTERM): rule press_wolf_train")


@pytest.mark.slow
def test_ctrl_c_prints_one_line_per_running_job(tmp_path):
    """A real Snakemake run of two sleeping jobs (no training), Ctrl-C to its process group once both run."""
    (tmp_path / "Snakefile").write_text(textwrap.dedent('''\
        from snakemake.logging import logger
        from replicate import console
        console.install(logger, 2)

        rule all:
            input: "out1", "out2"

        rule sleeper:
            output: "out{i}"
            log: "logs/s{i}.log"
            shell: "python -c 'import sys, time; print(1, flush=True)\\ntry: time.sleep(60)\\nexcept KeyboardInterrupt: sys.exit(130)' > {log} 2>&1; touch {output}"
        '''))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 120
        while not all((tmp_path / f"logs/s{i}.log").is_file() and (tmp_path / f"logs/s{i}.log").read_text()
                      for i in (1, 2)):
            assert time.time() < deadline, "the jobs did not start"
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    stopped = [line for line in out.splitlines() if line.startswith("interrupted (Ctrl-C): rule sleeper")]
    assert sorted(stopped) == [f"interrupted (Ctrl-C): rule sleeper (out{i}), its log: logs/s{i}.log; to resume, run "
                               "the same snakemake command again" for i in (1, 2)], out
    for block in ("RuleException", "CalledProcessError", "WorkflowError", "Error in rule"):
        assert block not in out, out


def test_a_job_whose_run_folder_holds_a_checkpoint_says_where_it_resumes(tmp_path):
    """The reason of a training job names the checkpoint it resumes from and its position, as the trainer will log
    it ("resumed from ...: epoch 2, batch 106"); a finished one only evaluates; an unreadable one is named."""
    import torch

    from replicate.lstm.train import CHECKPOINT

    assert console.CHECKPOINT == CHECKPOINT
    run = tmp_path / "press_wolf" / "small" / "seed1"
    run.mkdir(parents=True)
    outputs = [str(run / "metrics.json"), str(run / "history.csv")]
    assert console.resume_note(outputs) == ""
    torch.save({"epoch": 1, "batch": 106, "fingerprint": {"train": {"epochs": 13}}}, run / CHECKPOINT)
    record = logging.LogRecord("x", logging.INFO, "", 0, "job", None, None)
    record.event, record.output, record.reason = "job_info", outputs, "Missing output files: " + outputs[0]
    assert console.ShortPlanFilter().filter(record)
    assert record.reason.endswith(f"; resumes from {run / CHECKPOINT} at epoch 2, batch 106")
    torch.save({"epoch": 13, "batch": 0, "fingerprint": {"train": {"epochs": 13}}}, run / CHECKPOINT)
    assert console.resume_note(outputs) == f"; {run / CHECKPOINT} holds all 13 epochs: the job only evaluates"
    (run / CHECKPOINT).write_bytes(b"garbled")
    assert "is unreadable" in console.resume_note(outputs)
