"""The report builder: sections, figures, numbers equal to the CSVs, missing results marked, and the
report on the smoke run (plus Snakemake's own report)."""

from __future__ import annotations

import base64
import json
import math
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO_ROOT, run_snakemake
from replicate.report.build import build
from replicate.report.document import NOT_RUN, fmt_number, fmt_percent

TEMPLATE = REPO_ROOT / "paper/report_template.md"
SECTION_HEADINGS = ["Summary", "Press & Wolf 2017", "Inan et al. 2017", "The initial loss of tied transformers",
                    "Beyond the tables", "Compute", "Provenance"]
# a 1x1 PNG
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


class _Tables(HTMLParser):
    """Collect tables (data-source, rows of (text, data-value)), headings and figures of the HTML report."""

    def __init__(self):
        super().__init__()
        self.tables, self.headings, self.figures, self.imgs = [], [], [], []
        self._cell = None
        self._head = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"source": a.get("data-source"), "header": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = {"tag": tag, "text": "", "raw": a.get("data-value"), "cls": a.get("class", "")}
        elif tag in ("h1", "h2", "h3"):
            self._head = ""
        elif tag == "figure":
            self.figures.append(a.get("data-figure"))
        elif tag == "img":
            self.imgs.append(a.get("src", ""))

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data
        if self._head is not None:
            self._head += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            if self._cell["tag"] == "th":
                self.tables[-1]["header"].append(self._cell["text"])
            else:
                self.tables[-1]["rows"][-1].append(self._cell)
            self._cell = None
        elif tag in ("h1", "h2", "h3") and self._head is not None:
            self.headings.append(self._head)
            self._head = None


def parse(html: str) -> _Tables:
    p = _Tables()
    p.feed(html)
    for t in p.tables:
        t["rows"] = [r for r in t["rows"] if r]
    return p


def assert_table_matches_csv(table: dict, csv: Path) -> int:
    """Every cell with a data-value equals the CSV's value in its row, and its text is the formatted value.
    Returns the number of numeric cells checked."""
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    assert len(table["rows"]) == len(frame), f"{csv}: {len(table['rows'])} rows in HTML, {len(frame)} in CSV"
    checked = 0
    for row, (_, rec) in zip(table["rows"], frame.iterrows()):
        csv_values = list(rec.values)
        for cell in row:
            if cell["raw"] is None:  # an empty CSV cell (or a column the CSV lacks)
                assert cell["text"] in (NOT_RUN, "not published", "—"), cell
                continue
            try:
                x = float(cell["raw"])
            except ValueError:
                assert cell["raw"] in csv_values, (csv, cell)
                continue
            matches = [v for v in csv_values if _is_num(v) and math.isclose(float(v), x, rel_tol=1e-12, abs_tol=0)]
            assert matches, f"{csv}: HTML value {cell['raw']} not in the CSV row {csv_values}"
            assert cell["text"] in (fmt_number(x, 2), fmt_number(x, 3), fmt_percent(x),
                                    fmt_number(int(x)) if x == int(x) else None), (cell, x)
            checked += 1
    return checked


def _is_num(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------- synthetic results
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
        r = {"cell": cell, "row": row, "protocol": "reduced", "n_seeds": 1, "epochs": 13, "params_m_ours": 4.65,
             "params_m_paper": 4.65}
        for k, ours, paper in (("train", tr, ptr), ("valid", va, pva), ("test", te, pte)):
            r |= {f"{k}_ours": ours, f"{k}_paper": paper, f"{k}_diff": ours - paper,
                  f"{k}_rel_diff": (ours - paper) / paper}
        rows.append(r | {"train_clean_ours": tr - 1, "source": "Press & Wolf 2017 Table 6"})
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


def test_report_from_synthetic_results(tmp_path):
    res = make_results(tmp_path)
    out = build(res, TEMPLATE, tmp_path / "out/report.md", tmp_path / "out/index.html",
                captions_dir=REPO_ROOT / "workflow/report")
    assert out["verdicts"]["pw_small_tying"] == "holds"
    assert out["verdicts"]["inan_al_small"] == NOT_RUN
    html = (tmp_path / "out/index.html").read_text()
    doc = parse(html)
    for h in SECTION_HEADINGS:
        assert any(x.startswith(h) for x in doc.headings), (h, doc.headings)
    # numbers in the HTML equal the CSV
    t6 = next(t for t in doc.tables if t["source"] == "results/tables/press_wolf_table6.csv")
    assert assert_table_matches_csv(t6, res / "tables/press_wolf_table6.csv") >= 4 * 12
    assert "121.12" in html or "121.13" in html
    # benchmark numbers, device from the run's provenance
    bench = next(t for t in doc.tables if t["source"] == "results/benchmarks/")
    first = [c["text"] for c in bench["rows"][0]]
    assert "3,600.50" in first and "812.25" in first and any(c.startswith("cpu") for c in first)
    # every figure embedded, the unclaimed one under "Other figures"; no external resources
    assert set(doc.figures) == {"initial_loss_vs_width", "mystery_plot"}
    assert all(src.startswith("data:image/png;base64,") for src in doc.imgs)
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html
    # missing results are marked, never numbers
    assert html.count(NOT_RUN) >= 10
    assert "Inan et al. Table 1: not run in this protocol" in html
    # provenance of every run shown
    assert "press_wolf/small/seed1" in html and "0123456789" in html and "2.13.0" in html
    md = (tmp_path / "out/report.md").read_text()
    assert "| Small + WT |" in md and "](../results/figures/initial_loss_vs_width.png)" in md


def test_summary_verdict_flips_with_contradicting_data(tmp_path):
    for contradict, expected in ((False, "holds"), (True, "does not hold")):
        res = make_results(tmp_path / str(contradict), contradict=contradict)
        out = build(res, TEMPLATE, tmp_path / f"{contradict}.md", tmp_path / f"{contradict}.html")
        assert out["verdicts"]["pw_small_tying"] == expected
        doc = parse((tmp_path / f"{contradict}.html").read_text())
        summary = doc.tables[0]
        row = next(r for r in summary["rows"] if r[-1]["raw"] == "pw_small_tying")
        assert row[-1]["text"] == expected


def test_bad_result_file_names_the_column(tmp_path):
    from replicate.errors import ReplicateError

    res = make_results(tmp_path)
    frame = pd.read_csv(res / "tables/press_wolf_table6.csv").drop(columns=["valid_ours"])
    frame.to_csv(res / "tables/press_wolf_table6.csv", index=False)
    with pytest.raises(ReplicateError, match="valid_ours"):
        build(res, TEMPLATE, tmp_path / "r.md", tmp_path / "r.html")


def test_template_directive_typo_is_an_error(tmp_path):
    from replicate.errors import ReplicateError

    res = make_results(tmp_path)
    bad = tmp_path / "t.md"
    bad.write_text("# T\n\n{{sumary}}\n")
    with pytest.raises(ReplicateError, match="sumary"):
        build(res, bad, tmp_path / "r.md", tmp_path / "r.html")
    bad.write_text("# T\n\nText {{verdict:no_such_claim}}.\n")
    with pytest.raises(ReplicateError, match="no_such_claim"):
        build(res, bad, tmp_path / "r.md", tmp_path / "r.html")


# ------------------------------------------------------------------------------------ smoke run
@pytest.mark.slow
def test_smoke_report_sections_figures_numbers(smoke_run):
    res = smoke_run / "results"
    html = (res / "report/index.html").read_text()
    md = (res / "report/report.md").read_text()
    doc = parse(html)
    for h in SECTION_HEADINGS:
        assert any(x.startswith(h) for x in doc.headings), (h, doc.headings)
        assert f"## {h}" in md
    # every figure the pipeline wrote is embedded in the HTML and linked from the Markdown
    stems = sorted(p.stem for p in (res / "figures").glob("*.png"))
    assert stems, "the smoke run wrote no figures"
    assert sorted(doc.figures) == stems
    for stem in stems:
        assert f"{stem}.png" in md
    assert all(src.startswith("data:image/png;base64,") for src in doc.imgs)
    # every table read from a CSV shows exactly the CSV's numbers
    csv_tables = [t for t in doc.tables if t["source"] and t["source"].endswith(".csv")]
    assert csv_tables, "no result table in the smoke report"
    numeric_cells = 0
    for t in csv_tables:
        numeric_cells += assert_table_matches_csv(t, smoke_run / t["source"])  # asserts row by row
    assert numeric_cells > 100, "the smoke report shows (almost) no numbers from the CSVs"
    # each result table present in this protocol has its section's table
    for csv in (res / "tables").glob("*.csv"):
        rel = f"results/tables/{csv.name}"
        assert any(t["source"] == rel for t in csv_tables), f"{rel} is not shown in the report"
    # smoke protocol labelled; the claims table has a verdict per claim
    assert "smoke" in doc.tables[0]["rows"][0][3]["text"] or any("smoke" in r[3]["text"] for r in doc.tables[0]["rows"])
    assert all(r[-1]["text"] in ("holds", "does not hold", "inconclusive", NOT_RUN) for r in doc.tables[0]["rows"])


@pytest.mark.slow
def test_snakemake_report_zip(smoke_run):
    out = smoke_run / "results/report/snakemake.zip"
    run_snakemake(["--report", "results/report/snakemake.zip", "--configfile", "config/smoke.yaml"],
                  cwd=smoke_run, timeout=300)
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
    assert any(n.endswith("report.html") for n in names), names[:20]
    assert any("index.html" in n for n in names), "the project report is not in Snakemake's report"
    out.unlink()  # keep the smoke folder as the run left it (the DAG must stay up to date)


def test_inan_and_scale_sections_read_owner_formats(tmp_path):
    res = make_results(tmp_path)
    t = res / "tables"
    rows = []
    for size, vals in {"small": (92.0, 86.0, 89.0, 85.5)}.items():
        for model, v in zip(["VD-LSTM", "+AL", "+RE", "+REAL"], vals):
            rows.append({"dataset": "ptb", "size": size, "model": model, "valid_ours": v, "test_ours": v - 4,
                         "valid_paper": 90.0, "valid_diff": v - 90.0, "valid_rel_diff": (v - 90) / 90,
                         "protocol": "reduced"})
    pd.DataFrame(rows).to_csv(t / "inan_table1.csv", index=False)
    pd.DataFrame({"tau": 10, "beta": [0.0, 0.5, 1.0], "distance_mean": [0.97, 0.5, 0.08],
                  "protocol": "reduced"}).to_csv(t / "inan_figure1a.csv", index=False)
    pd.DataFrame({"tau": [2, 5, 10], "beta": 1.0, "distance_mean": [0.2, 0.1, 0.08],
                  "protocol": "reduced"}).to_csv(t / "inan_figure1b.csv", index=False)
    pd.DataFrame({"dataset": "ptb", "pct": [10, 10, 100, 100], "train_tokens": [92959, 92959, 929589, 929589],
                  "hidden": 200, "seed": [1, 2, 1, 2], "gain": [20.0, 18.0, 3.0, 2.5],
                  "rel_gain": [0.1, 0.09, 0.02, 0.018], "protocol": "reduced"}).to_csv(t / "scale_data.csv", index=False)
    pd.DataFrame({"study": "model", "hidden": [200, 400, 650], "embedding_share_untied": [0.57, 0.39, 0.28],
                  "gain_mean": [6.0, 3.0, 1.0], "protocol": "reduced"}).to_csv(t / "scale_gain.csv", index=False)
    (res / "scale").mkdir()
    pd.DataFrame([{"study": "model", "hidden": h, "seed": s, "rel_gain": g + 0.001 * s, "protocol": "reduced"}
                  for h, g in ((200, 0.06), (400, 0.03), (650, 0.01)) for s in (1, 2)]
                 ).to_csv(res / "scale/gain_by_seed.csv", index=False)
    pd.DataFrame({"comparison": ["tied_vs_untied_input", "tied_vs_untied_output"], "spearman": [0.3, 0.7],
                  "knn_overlap": [0.1, 0.4], "protocol": "reduced"}).to_csv(t / "embedding_similarity.csv", index=False)
    out = build(res, TEMPLATE, tmp_path / "r.md", tmp_path / "r.html")
    v = out["verdicts"]
    assert v["inan_al_small"] == "holds" and v["inan_real_best"] == "holds" and v["inan_subspace"] == "holds"
    assert v["scale_data_gain"] == "holds" and v["scale_model_share"] == "holds" and v["emb_tied_output"] == "holds"
    doc = parse((tmp_path / "r.html").read_text())
    for name in ("inan_table1", "inan_figure1a", "inan_figure1b", "scale_data", "scale_gain", "embedding_similarity"):
        table = next(x for x in doc.tables if x["source"] == f"results/tables/{name}.csv")
        assert assert_table_matches_csv(table, t / f"{name}.csv") > 0


def test_protocol_differences_listed(tmp_path):
    res = make_results(tmp_path)
    build(res, TEMPLATE, tmp_path / "r.md", tmp_path / "r.html",
          sections={"press_wolf": {"cells": ["small", "small_wt"], "seeds": [1]}, "initial_loss": {"widths": [64]}},
          full_protocol={"press_wolf": {"cells": ["small", "small_wt", "large"], "seeds": [1]},
                         "initial_loss": {"widths": [64]}})
    md = (tmp_path / "r.md").read_text()
    assert '`cells`: ["small", "small_wt"] (full protocol: ["large"' not in md  # shown whole, not truncated
    assert '- `cells`: ["small", "small_wt"] (full protocol: ["small", "small_wt", "large"])' in md
    assert "`seeds`" not in md.split("What this configuration changes")[1].split("##")[0]
    assert "identical to the papers' full protocol (`config/paper.yaml`, `initial_loss`)" in md


def test_empty_cells_say_why():
    from replicate.report.document import frame_table

    f = pd.DataFrame({"valid_ours": [float("nan")], "valid_paper": [float("nan")], "loss_sd": [float("nan")],
                      "valid_diff": [1.5]})
    row = frame_table(f).rows[0]
    assert [c.text for c in row] == [NOT_RUN, "not published", "—", "1.50"]
