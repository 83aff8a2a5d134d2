"""Publish a run's small outputs into a tracked bundle (default ``paper/measured``): ``catalogue`` (what each
experiment publishes), ``checks`` (the refusals), ``bundle`` (merge, rebuild, redraw, restore), ``readme``."""
