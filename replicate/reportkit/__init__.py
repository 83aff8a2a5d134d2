"""The report's kit, below the experiments that build their claims and sections with it."""
