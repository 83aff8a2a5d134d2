"""The report's kit, below the experiments that build their claims and sections with it: sources (the results
read, ``Results``), claims (a claim and its verdict), effects and noise (the verdict rule and the seed-noise
allowance), format (how a value reads), labels (readable names, from docs/glossary.md), blocks (Markdown tables,
figures, notices), sections (what every section shares), brief (how a section opens)."""
