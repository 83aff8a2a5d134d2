"""The report's kit: claims checked against our results, every table and figure beside the papers'.

``python -m replicate report`` (replicate/report/cli.py) -> results/report/{report.md,index.html}.
Each experiment brings its claims and its section (``replicate/<experiment>/{claims,section}.py``, found by
``experiments``); the kit: sources (read result files), claims (a claim and its verdict), effects and noise (the
verdict rule and the seed-noise allowance), format (how a value reads), labels (readable names), blocks
(Markdown tables, figures, notices), sections (what every section shares), summary (the first screen and the
verdict table), compute (Compute and Provenance), build (the template filled -> report.md), render (report.md
-> one self-contained HTML page), figures (report-owned figures).
"""
