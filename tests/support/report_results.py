"""Synthetic results folders in the owners' formats, for report tests."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from support.workflow import REPO_ROOT

TEMPLATE = REPO_ROOT / "paper/report_template.md"
# a 1x1 PNG
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def _provenance(protocol: str, device: str = "cpu") -> dict:
    return {"config": {"protocol": protocol}, "git": {"commit": "0123456789abcdef", "dirty": False},
            "packages": {"torch": "2.13.0", "python": "3.11.2"}, "device": {"device": device, "cpu_count": 2},
            "started": "2026-01-01T00:00:00+00:00", "finished": "2026-01-01T00:01:00+00:00"}


def make_results(root: Path, contradict: bool = False) -> Path:
    """A results folder in the owners' formats: P&W Table 6, the initial-loss summary, one figure,
    one benchmark, provenance."""
    res = root / "results"
    (res / "tables").mkdir(parents=True)
    wt_valid = 125.25 if contradict else 117.75
    rows = []
    for cell, row, tr, va, te, ptr, pva, pte in [
            ("small", "Small", 40.5, 121.125, 115.0, 38.0, 120.7, 114.5),
            ("small_wt", "Small + WT", 39.0, wt_valid, 113.0, 36.4, 117.5, 112.4),
            ("small_pr", "Small + PR", 52.0, 116.5, 111.0, 50.8, 116.0, 111.7),
            ("small_wt_pr", "Small + WT + PR", 55.0, 105.0, 101.0, 53.5, 104.9, 100.9)]:
        params = (2.65 if "_wt" in cell else 4.65) + (0.04 if "_pr" in cell else 0)
        r = {"cell": cell, "row": row, "protocol": "reduced", "n_seeds": 1, "epochs": 13, "params_m_ours": params,
             "params_m_paper": params}
        for k, ours, paper in (("train", tr, ptr), ("valid", va, pva), ("test", te, pte)):
            r |= {f"{k}_ours": ours, f"{k}_paper": paper, f"{k}_diff": ours - paper,
                  f"{k}_rel_diff": (ours - paper) / paper}
        pr = "_pr" in cell
        rows.append(r | {"train_clean_ours": tr - 1, "schedule": "r0.8", "gate_bias": "tf",
                         "pr_form": "authors_code" if pr else None, "pr_lambda": 0.15 if pr else None,
                         "code_version": "e6e203a98323afa0", "source": "Press & Wolf 2017 Table 6"})
    pd.DataFrame(rows).to_csv(res / "tables/press_wolf_table6.csv", index=False)
    for cell in ("small", "small_wt"):
        run = res / "press_wolf" / cell / "seed1"
        run.mkdir(parents=True)
        settings = {"size": "small", "seed": 1, "epochs": 13} | ({"tying": "tied"} if cell == "small_wt" else {})
        (run / "metrics.json").write_text(json.dumps({"run": f"{cell}/seed1", "settings": settings,
                                                      "provenance": _provenance("reduced")}))
    (res / "benchmarks/press_wolf/small").mkdir(parents=True)
    (res / "benchmarks/press_wolf/small/seed1.tsv").write_text(
        "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
        "3600.5\t1:00:00\t812.25\t900\t800\t805\t1\t2\t195.5\t7000.25\n")
    (res / "figures").mkdir()
    (res / "figures/initial_loss_vs_width.png").write_bytes(PNG)
    (res / "figures/mystery_plot.png").write_bytes(PNG)
    return res


WIDTHS = [64, 128, 256, 512, 1024, 2048, 4096]
IL_VARIANTS = [  # branches, init, head, tied, rescale, reference kind (the default configuration's heads)
    ("zero", "normal", "tied", True, False, "theory"),
    ("zero", "normal", "tied+rescale", True, True, "theory_rescaled"),
    ("zero", "normal", "untied", False, False, "log_n"),
    ("zero", "normal", "untied+rescale", False, True, "log_n"),
    ("zero", "normal", "tied+orthogonal", True, False, "log_n"),
    ("zero", "normal", "tied+shuffle", True, False, "log_n"),
    ("normal", "trunc_normal", "tied", True, False, "log_n"),
    ("normal", "trunc_normal", "untied", False, False, "log_n")]


def add_wide_results(res: Path) -> Path:
    """Results as wide as the default configuration's: a Press & Wolf ablation cell, the initial-loss
    sweep over 7 widths, the essay's theory table, model families with URL sources, Inan Table 1 in its
    owner's format (``valid_ppl``, ``paper_valid_ppl``, ...)."""
    t = res / "tables"
    pw = pd.read_csv(t / "press_wolf_table6.csv")
    ablation = pw[pw["cell"] == "small_wt_pr"].assign(cell="small_wt_pr@pr_form=squared", row=None, pr_form="squared",
                                                      source="no published number", valid_ours=103.5)
    for col in [c for c in pw.columns if "paper" in c or "diff" in c]:
        ablation[col] = None
    pd.concat([pw, ablation]).to_csv(t / "press_wolf_table6.csv", index=False)
    run = res / "press_wolf/small_wt_pr@pr_form=squared/seed1"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps({"run": "small_wt_pr@pr_form=squared/seed1", "epochs_completed": 13,
                                                  "train_ppl": 55.0, "valid_ppl": 103.5, "test_ppl": 101.0,
                                                  "settings": {"seed": 1, "pr_form": "squared"},
                                                  "provenance": _provenance("reduced")}))
    n, rows = 32000, []
    for branches, init, head, tied, rescale, kind in IL_VARIANTS:
        for d in WIDTHS:
            s = 0.02 * (d ** 0.5 if rescale else d)
            ref = float(np.logaddexp(s, math.log(n - 1))) if kind != "log_n" else math.log(n)
            loss = ref + 0.01 * math.log2(d) + 0.001 * len(head)
            rows.append({"token_dist": "uniform", "branches": branches, "init": init, "std": "0.02", "head": head,
                         "tied": tied, "rescale": rescale, "mixer": "none", "d": d, "n": n, "n_layers": 12,
                         "sigma": 0.02, "loss_mean": loss, "loss_sd": 0.001, "n_seeds": 2, "reference_kind": kind,
                         "reference_loss": ref, "diff": loss - ref, "rel_diff": (loss - ref) / ref,
                         "protocol": "reduced"})
    pd.DataFrame(rows).to_csv(t / "initial_loss_summary.csv", index=False)
    pd.DataFrame([{"std": "0.02", "d": d, "sigma": 0.02, "n": n, "d_sigma": 0.02 * d, "exp_d_sigma": math.exp(0.02 * d),
                   "log10_exp_d_sigma": 0.02 * d / math.log(10),
                   "theory_loss": float(np.logaddexp(0.02 * d, math.log(n)))}
                  for d in (512, 4096)]).to_csv(t / "initial_loss_theory.csv", index=False)
    pd.DataFrame([{"family": "Llama 2", "model": f"Llama-2-{size}", "vocab_size": 32000, "d_model": d,
                   "n_layers": layers, "tied": False, "total_params": total, "embedding_params": 2 * 32000 * d,
                   "embedding_share": 2 * 32000 * d / total, "pp_tied_grad_mib_bf16": 32000 * d * 2 / 2**20,
                   "source": f"https://huggingface.co/meta-llama/Llama-2-{size}-hf/blob/main/config.json"}
                  for size, d, layers, total in (("7b", 4096, 32, 6738415616), ("70b", 8192, 80, 68976648192))]
                 ).to_csv(t / "model_families.csv", index=False)
    rows = []
    for model, valid, paper in (("VD-LSTM", 95.5, 92.6), ("+AL", 90.25, 86.3), ("+RE", 91.0, 89.9),
                                ("+REAL", 88.5, 86.3)):
        rows.append({"dataset": "ptb", "size": "small", "model": model, "valid_ppl": valid, "paper_valid_ppl": paper,
                     "valid_diff": valid - paper, "valid_rel_diff": (valid - paper) / paper, "test_ppl": valid - 3,
                     "paper_test_ppl": paper - 4, "test_diff": valid - paper + 1,
                     "test_rel_diff": (valid - paper + 1) / (paper - 4),
                     "train_ppl": valid - 20, "params": 6_000_000, "tau": None if model in ("VD-LSTM", "+RE") else 10.0,
                     "alpha": None if model in ("VD-LSTM", "+RE") else 1.0, "dropout_rate": 0.5, "epochs": 15,
                     "protocol": "reduced (15 epochs)", "paper_source": "Inan et al. 2017 Table 1", "variant": model})
    pd.DataFrame(rows).to_csv(t / "inan_table1.csv", index=False)
    pd.DataFrame([{"reading": name, "embedding_norm": norm, "optimizer": opt, "output_init": init, "lr": lr,
                   "epochs": 12, "n_seeds": 2, **{f"beta{b:g}": 0.98 - slope * b for b in (0, 0.25, 0.5, 0.75, 1)},
                   **{f"tau{tau}_beta1": 0.98 - slope - 0.01 * tau for tau in (2, 5, 10)}, "fall_0_to_1": slope,
                   "first_step_share": 0.25, "rapid_in_beta": False, "distance_beta1": 0.98 - slope,
                   "tau_effect": -0.08, "lower_at_larger_tau": True, "paper_distance_beta1_approx": 0.06,
                   "protocol": "reduced"}
                  for name, norm, opt, init, lr, slope in (
                      ("word_vectors_adam", "word_vectors", "adam", "uniform", 0.003, 0.2),
                      ("dimensions_sgd_zero_w", "dimensions", "sgd", "zero", 1.0, 0.9))]
                 ).to_csv(t / "inan_subspace_readings.csv", index=False)
    return res
