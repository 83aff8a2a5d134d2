"""Transformer initial-loss experiment: a compact Llama-style decoder, its closed-form initial-loss
theory, a memory-lean streamed sweep, and the table of real model families (embedding share)."""

SWEEP_MODULES = ("transformer.model", "transformer.sweep")
"""What the sweep and the memory benchmark compute with: their hash is each output's ``code_version``."""
