"""This repository's code location: the suites of the project file found from the working
directory (or EVAL_PROJECT), else the examples' (examples/eval-pipeline.yaml, what
workspace.yaml loads). A team's repository has the one line at the bottom with its own
project file."""

from eval_pipeline import settings
from eval_pipeline.defs import build_definitions

settings.fall_back_to_examples()
defs = build_definitions()
