"""Inan, Khosravi & Socher 2017: augmented soft-target loss (AL), reused embeddings (RE), REAL,
and the section 6.2 subspace-distance experiment. Training reuses the Press & Wolf LSTM engine
(replicate.lstm)."""
