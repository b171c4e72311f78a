"""benchbook.reproduce: rerun paper figures and say whether they match.

    registry         paper folders (notebooks/<paper>/paper.toml + one TOML per figure), the
                     search path (built in + --papers / BENCHBOOK_PAPERS), validated entries
    capabilities     can an entry run here ("root", "kvm", programs on PATH ...), and why not
    datasets         dataset folders with SOURCES.md and SHA256SUMS, verified before use
    verdict          published | computed | run(s) | status | note, outcome and claim, verdict.json
    outputs          figure export for notebooks (HTML + PNG/SVG, or the reason it failed)
    evaluator_table  declared tables of statistics over TUM pos evaluator runs
    evaluator_tails  GPD return levels and extreme clusters of TUM pos evaluator runs
    notebook_params  a notebook's parameters with their defaults and meaning

The command is `benchbook reproduce` (benchbook.commands.reproduce).
"""
