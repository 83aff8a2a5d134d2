"""Transformer initial-loss experiment: a compact Llama-style decoder, its closed-form initial-loss
theory, a memory-lean streamed sweep, and the table of real model families (embedding share)."""
