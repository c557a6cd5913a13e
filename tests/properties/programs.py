"""A generator of V1-era Ray Train programs: session imports in all their forms, aliases,
nested functions, keyword calls, and constructs the codemod must flag."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

SESSION_IMPORTS = {
    "plain": ("from ray.air import session", "session"),
    "alias": ("from ray.air import session as sess", "sess"),
    "module": ("import ray.air.session", "ray.air.session"),
    "mixed": ("from ray.air import session, ScalingConfig", "session"),
}

FLAGGABLE = {
    "RTM102": "print(result.metrics_dataframe)",
    "RTM105": "print(result.log_dir)",
    "RTM107": "scaling = ScalingConfig(num_workers=1, trainer_resources={'CPU': 0})",
    "RTM108": "run_config = RunConfig(name='x', verbose=0)",
    "RTM109": "failure = FailureConfig(fail_fast=True)",
}


@dataclass(frozen=True)
class Program:
    source: str
    expected_flags: frozenset[str]
    function: str


@st.composite
def v1_programs(draw: st.DrawFn) -> Program:
    form = draw(st.sampled_from(sorted(SESSION_IMPORTS)))
    import_line, session = SESSION_IMPORTS[form]
    function = draw(st.sampled_from(["train_func", "train"]))  # `train` must not be shadowed
    import_inside = form != "mixed" and draw(st.booleans())  # ScalingConfig is used at module level
    nested = draw(st.booleans())
    keyword = draw(st.booleans())
    checkpoint = draw(st.booleans())
    calls = draw(st.lists(st.sampled_from(["get_world_rank", "get_world_size", "get_local_rank"]), max_size=2))
    flags = draw(st.sets(st.sampled_from(sorted(FLAGGABLE))))

    header = ["import os", "import tempfile", ""]
    if not import_inside:
        header.insert(0, import_line)
    if form != "mixed":
        header.insert(0, "from ray.air.config import ScalingConfig, RunConfig, FailureConfig")
    else:
        header.insert(0, "from ray.air.config import RunConfig, FailureConfig")
    body = []
    indent = "    "
    if import_inside:
        body.append(indent + import_line)
    metrics = "{" + ", ".join([f"'{c}': {session}.{c}()" for c in calls] + ["'step': step"]) + "}"
    argument = f"metrics={metrics}" if keyword else metrics
    ckpt = ", checkpoint=ckpt" if checkpoint else ""
    report = f"{session}.report({argument}{ckpt})"
    loop = ["for step in range(config.get('steps', 2)):"]
    if checkpoint:
        loop.append("    ckpt = Checkpoint.from_directory(tempfile.mkdtemp())")
    if nested:
        body += [indent + "def inner(step, ckpt=None):", indent * 2 + report]
        loop.append("    inner(step, ckpt)" if checkpoint else "    inner(step)")
    else:
        loop.append("    " + report)
    body += [indent + line for line in loop]
    if checkpoint:
        header.insert(0, "from ray.train import Checkpoint")
    tail = (
        ["", "", "def inspect(result):"] + [indent + FLAGGABLE[f] for f in sorted(flags)] + [indent + "return result"]
    )
    source = "\n".join(header + ["", f"def {function}(config):"] + body + tail) + "\n"
    expected = set(flags)
    if not checkpoint:
        expected.add("RTM101")
    return Program(source, frozenset(expected), function)
