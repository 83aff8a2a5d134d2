"""The report: claims checked against our results, every table and figure beside the papers'.

``python -m replicate report`` (replicate/report/cli.py) -> results/report/{report.md,index.html}.
Modules: sources (read result files), claims (verdicts), format (how a value reads), blocks (Markdown
tables, figures, notices), sections (the generated blocks), build (the template filled -> report.md),
render (report.md -> one self-contained HTML page), figures (report-owned figures).
"""
