"""This repository's code location: the suites of its own eval-pipeline.yaml (workspace.yaml).
A team's repository has the same one line with its own project file."""

from eval_pipeline.defs import build_definitions

defs = build_definitions()
