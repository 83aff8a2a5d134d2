"""Publish a run's small outputs into a tracked bundle (default ``paper/measured``).

- ``catalogue``: per experiment, its files, its runs (finished or not) and what each run recorded.
- ``checks``: the refusals (code versions or protocols mixed within an experiment, tables of unfinished runs).
- ``bundle``: the atomic merge into the bundle, the rebuilt report and ``MANIFEST.json``.
- ``readme``: the README's measured-results block, generated from the bundle.
- ``cli``: ``python -m replicate publish``.
"""
