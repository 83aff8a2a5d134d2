"""The report: claims checked against our results, every table and figure beside the papers'.

``python -m replicate report`` (replicate/report/cli.py) -> results/report/{report.md,index.html}.
Modules: sources (read result files), claims (verdicts), figures (report-owned figures),
document (Markdown / self-contained HTML rendering), build (assembly from paper/report_template.md).
"""
