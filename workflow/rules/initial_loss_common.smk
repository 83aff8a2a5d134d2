# The initial-loss sweep: config view, the memory benchmark's check and targets used by initial_loss.smk.
from replicate.initial_loss.runs import check_width, memory_benchmark_config

IL = config["initial_loss"]


def initial_loss_point_check(width, where):
    """Plan-time check of one streamed sweep point of width ``width`` (text or int): in range and split into
    heads of even width, as `python -m replicate train initial_loss runs/d<width>` checks it; memory estimate
    under the limit."""
    check_width(parse_text(str(width)), IL["head_dim"], where)
    check_sweep_memory(IL, int(width), where)


def il_report(rel, caption):
    """An output shown in the Snakemake report, its caption workflow/report/initial_loss_<caption>.rst."""
    return report(R(rel), caption=f"../report/initial_loss_{caption}.rst", category="Initial loss")


def initial_loss_targets():
    out = R(paths.IL_SUMMARY, paths.IL_THEORY, paths.IL_FAMILIES, *(f"{f}.png" for f in paths.IL_FIGURES))
    return out + ([R(paths.IL_MEMORY)] if IL["memory_benchmark"]["enabled"] else [])
