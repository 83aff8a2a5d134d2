# The initial-loss sweep: config view, sweep spec and targets used by initial_loss.smk.
IL = config["initial_loss"]
# What a sweep job depends on (figure/table settings stay out, so editing them reruns no sweep).
_IL_SWEEP_KEYS = ("vocab_size", "n_layers", "head_dim", "seeds", "batch_size", "seq_len",
                  "token_distributions", "zipf_exponent", "chunk_tokens", "trunks", "heads")
IL_SWEEP_SPEC = spec_json(run_config(None, initial_loss={k: IL[k] for k in _IL_SWEEP_KEYS}))


def initial_loss_point_check(width, where):
    """Plan-time check of one streamed sweep point of width ``width`` (text or int): in range, splits into
    heads of even width (as replicate.llama.ModelConfig requires), memory estimate under the limit."""
    width = SCHEMAS.check(parse_text(str(width)), "initial_loss.schema.yaml#/$defs/width", key="width",
                          where=where, fix="use a width from 2 to 65536 (results/initial_loss/runs/d<width>.csv, "
                                           "initial_loss.widths)")
    heads = max(1, width // IL["head_dim"])
    if width % heads or (width // heads) % 2:
        raise SettingError(f"{where}: width {width} does not split into {heads} heads of even width "
                           f"(initial_loss.head_dim = {IL['head_dim']})",
                           "use a multiple of head_dim, or change initial_loss.head_dim")
    check_sweep_memory(IL, width, where)


def initial_loss_targets():
    out = R(paths.IL_SUMMARY, paths.IL_THEORY, paths.IL_FAMILIES, *(paths.png(f) for f in paths.IL_FIGURES))
    return out + ([R(paths.IL_MEMORY)] if IL["memory_benchmark"]["enabled"] else [])
