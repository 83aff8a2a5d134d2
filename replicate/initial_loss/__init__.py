"""The transformer initial-loss sweep: on the shared Llama-style decoder (``replicate.llama``), its
closed-form initial-loss theory, a memory-lean streamed sweep, and the table of real model families (embedding share)."""

SWEEP_MODULES = ("llama", "initial_loss.sweep")
"""What the sweep and the memory benchmark compute with: their hash is each output's ``code_version``."""
