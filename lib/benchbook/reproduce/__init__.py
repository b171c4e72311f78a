"""benchbook.reproduce: rerun paper figures and say whether they match.

    registry      figure registry: one TOML entry per figure (figures/<id>.toml), validated
    capabilities  can an entry run here ("root", "kvm", programs on PATH ...), and why not
    datasets      data/published/<name>/ with SOURCES.md and SHA256SUMS, verified before use
    verdict       published | computed | run(s) | status | note, verdict.json, rich table
    outputs       figure export for notebooks (HTML + PNG/SVG, or the reason it failed)
    wiedner       Wiedner et al. ITC'23: Table III, HDR and rate figures from the evaluator data
    scheerer      Scheerer et al. IITM'23 §4 from printed parameters; EVT on the Wiedner tails

The command is `benchbook reproduce` (benchbook.commands.reproduce).
"""
