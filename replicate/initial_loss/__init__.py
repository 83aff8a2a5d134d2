"""The transformer initial-loss sweep: on the shared Llama-style decoder (``replicate.llama``), its
closed-form initial-loss theory, a memory-lean streamed sweep, and the table of real model families (embedding share)."""
