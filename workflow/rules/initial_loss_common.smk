# The initial-loss sweep: config view, sweep spec and targets used by initial_loss.smk.
from replicate.run_checks import check_sweep_width

IL = config["initial_loss"]
# What a sweep job depends on (figure/table settings stay out, so editing them reruns no sweep).
_IL_SWEEP_KEYS = ("vocab_size", "n_layers", "head_dim", "seeds", "batch_size", "seq_len",
                  "token_distributions", "zipf_exponent", "chunk_tokens", "trunks", "heads")
IL_SWEEP_SPEC = spec_json(run_config(None, initial_loss={k: IL[k] for k in _IL_SWEEP_KEYS}))


def initial_loss_point_check(width, where):
    """Plan-time check of one streamed sweep point of width ``width`` (text or int): in range and split into
    heads of even width, as `python -m replicate initial-loss sweep` checks it; memory estimate under the limit."""
    check_sweep_width(parse_text(str(width)), IL["head_dim"], where)
    check_sweep_memory(IL, int(width), where)


def initial_loss_targets():
    out = R(paths.IL_SUMMARY, paths.IL_THEORY, paths.IL_FAMILIES, *(paths.png(f) for f in paths.IL_FIGURES))
    return out + ([R(paths.IL_MEMORY)] if IL["memory_benchmark"]["enabled"] else [])
