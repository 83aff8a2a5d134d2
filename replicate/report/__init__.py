"""The report: claims checked against our results, every table and figure beside the papers'
(``python -m replicate report``); the experiments' claims and sections build on ``replicate.reportkit``."""
