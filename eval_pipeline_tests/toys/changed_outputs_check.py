"""A toy gate check, whole in one file: it blocks when more than half of the candidate's
outputs differ from the baseline's (test_registry.py). A project file that lists this
module under ``plugins`` gets it in every gate: the report, the results file, Dagster."""

from eval_pipeline.plugins import CheckSpec, GateCheck, GateInputs, register_check


def changed_outputs(inputs: GateInputs) -> GateCheck:
    before = {(o.item_id, o.repeat): o.output for o in inputs.base_out}
    changed = [o for o in inputs.cand_out if before.get((o.item_id, o.repeat)) != o.output]
    share = len(changed) / max(1, len(inputs.cand_out))
    return GateCheck("changed_outputs", "fail" if share > 0.5 else "pass",
                     f"{len(changed)} of {len(inputs.cand_out)} outputs differ from the "
                     "baseline's")  # fmt: skip


register_check(CheckSpec(
    "changed_outputs", "gate", blocking=True, run=changed_outputs,
    description="Blocks. At most half of the outputs differ from the baseline's (a toy).",
))  # fmt: skip
