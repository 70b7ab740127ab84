"""Loads a `drivegen export --format lmms-eval` folder with lmms-eval's own TaskManager and checks
every task against the release.

usage: lmms_eval_check.py RELEASE TASK_DIR

lmms-eval is installed without its model dependencies (torch, transformers, ...), which only
models need. Those modules are stubbed at import so that `lmms_eval.tasks` imports; a stub touched
once the imports are done (building a task, its documents, its functions) fails the check, so
nothing checked here ran on a stub.

Checks: TaskManager lists one task per (family, split) with rows in the manifest and a group per
family; each task builds its documents from the release (the rows of that family and split, in
the shards' order); doc_to_visual gives the row's images at the sizes the release records;
doc_to_text is the release's prompt (with the pre/post prompts around it); doc_to_target is the
letter (the option for EgoDyn); process_results on the oracle answer (the target, and the
option's text) aggregates to 1.0 and on a wrong letter to 0.0, overall and per question type.
"""

import importlib.abc
import importlib.machinery
import json
import sys
import types
from pathlib import Path

# The model stack; everything else lmms-eval imports is installed.
HEAVY = {
    "torch", "torchvision", "transformers", "accelerate", "peft", "timm", "deepspeed",
    "sentence_transformers", "cv2", "av", "decord", "wandb", "vllm", "flash_attn",
}
IMPORTING = [True]
TOUCHED_AT_IMPORT = set()
TOUCHED_AFTER = []


class Stub:
    """Stands for anything a heavy module holds; touching it after the imports is a failure."""

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def _touch(self, what):
        name = f"{object.__getattribute__(self, '_name')}{what}"
        if IMPORTING[0]:
            TOUCHED_AT_IMPORT.add(name)
            return Stub(name)
        TOUCHED_AFTER.append(name)
        raise RuntimeError(f"stubbed module used after import: {name}")

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return self._touch(f".{attr}")

    def __call__(self, *a, **k):
        return self._touch("()")

    def __mro_entries__(self, bases):
        # A class deriving from a stubbed base (nn.Module) at import: a plain base stands in.
        self._touch(" (as a base class)")
        return (object,)

    def __getitem__(self, key):
        return self._touch("[]")

    def __or__(self, other):
        return self._touch("|")

    __ror__ = __or__


class StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Stub(self.__name__)._touch(f".{attr}")


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        m = StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        if not IMPORTING[0]:
            TOUCHED_AFTER.append(f"import {module.__name__}")
            raise ImportError(f"stubbed module imported after the imports: {module.__name__}")


def main():
    release, task_dir = Path(sys.argv[1]), Path(sys.argv[2])
    # `datasets` probes for torch when imported and again when it pickles, so it is imported
    # first (it sees no torch) and the stubs leave sys.modules once lmms-eval has imported: its
    # modules keep their references, so a use still fails.
    import datasets  # noqa: F401
    import pyarrow.parquet as pq
    import yaml

    finder = StubFinder()
    sys.meta_path.insert(0, finder)
    from lmms_eval.tasks import TaskManager

    IMPORTING[0] = False
    sys.meta_path.remove(finder)
    for name in [m for m in sys.modules if m.split(".")[0] in HEAVY]:
        del sys.modules[name]
    problems = []
    manifest = json.loads((release / "manifest.json").read_text())
    want = {}
    for split, fams in manifest["split_counts"].items():
        for fam, n in fams.items():
            if n:
                want[f"drivegen_{fam}_{split}"] = (fam, split, n)
    groups = {f"drivegen_{fam}" for fam, _, _ in want.values()}

    tm = TaskManager(include_path=str(task_dir))
    listed = set(tm.all_tasks)
    missing = (set(want) | groups) - listed
    if missing:
        problems.append(f"TaskManager does not list {sorted(missing)}")
    for g in groups:
        members = set(yaml.safe_load((task_dir / f"{g}.yaml").read_text())["task"])
        fam = g[len("drivegen_"):]
        expect = {t for t, (f, _, _) in want.items() if f == fam}
        if members != expect:
            problems.append(f"group {g} holds {sorted(members)}, not {sorted(expect)}")

    # The release's rows per (family, split), in the shards' order, read directly.
    rows = {}
    for shard in sorted((release / "data").glob("*.parquet")):
        for r in pq.read_table(shard).to_pylist():
            rows.setdefault((r["family"], shard_split(shard.name, manifest)), []).append(r)

    checked = 0
    for name, (fam, split, n) in sorted(want.items()):
        task = tm.load_task_or_group([name])[name]
        docs = list(task.test_docs())
        expect = rows.get((fam, split), [])
        if len(docs) != n or len(expect) != n:
            problems.append(f"{name}: {len(docs)} documents, {len(expect)} rows read, manifest {n}")
            continue
        right, wrong, types_right = [], [], {}
        for doc, row in zip(docs, expect):
            if doc["qa_id"] != row["qa_id"]:
                problems.append(f"{name}: document {doc['qa_id']} where the release has {row['qa_id']}")
                break
            images = task.doc_to_visual(doc)
            sizes = [im.size for im in images]
            recorded = list(zip(row["image_widths"] or [], row["image_heights"] or []))
            if len(images) != len(row["images"] or []) or sizes != recorded:
                problems.append(f"{name} {row['qa_id']}: images {sizes}, release {recorded}")
            text = task.doc_to_text(doc)
            if text != row["question"]:
                problems.append(f"{name} {row['qa_id']}: doc_to_text differs from the prompt")
            target = task.doc_to_target(doc)
            letter = row["answer_letter"]
            if target != (row["answer"] if fam == "egodyn" else letter):
                problems.append(f"{name} {row['qa_id']}: target {target!r}")
            pr = task.process_results(doc, [target])
            right.append(pr)
            types_right.setdefault(row["question_type"], []).append(
                task.process_results(doc, [row["answer"]])["accuracy"]["correct"]
            )
            if fam != "egodyn":
                bad = next(chr(65 + i) for i in range(len(row["choices"])) if chr(65 + i) != letter)
                wrong.append(task.process_results(doc, [bad]))
            checked += 1
        aggs = task.aggregation()
        for metric in ("accuracy", "type_accuracy"):
            got = aggs[metric]([r[metric] for r in right])
            if got != 1.0:
                problems.append(f"{name}: {metric} {got} on the oracle answers")
            if wrong:
                got = aggs[metric]([r[metric] for r in wrong])
                if got != 0.0:
                    problems.append(f"{name}: {metric} {got} on a wrong letter")
        for t, v in types_right.items():
            if sum(v) != len(v):
                problems.append(f"{name} {t}: the option's own text scored {sum(v)}/{len(v)}")
        # The pre/post prompts lmms-eval passes per model frame the prompt.
        doc = docs[0]
        framed = task.config.doc_to_text(doc, {"pre_prompt": "<pre>", "post_prompt": "<post>"})
        if framed != f"<pre>{expect[0]['question']}<post>":
            problems.append(f"{name}: pre/post prompts not placed around the prompt")

    if TOUCHED_AFTER:
        problems.append(f"stubbed modules used: {sorted(set(TOUCHED_AFTER))}")
    if checked != sum(n for _, _, n in want.values()):
        problems.append(f"checked {checked} rows of {sum(n for _, _, n in want.values())}")
    if problems:
        print("\n".join(problems[:40]))
        sys.exit(1)
    print(
        f"lmms-eval: {len(want)} tasks, {len(groups)} groups, {checked} rows checked; "
        f"stubs touched only while importing: {len(TOUCHED_AT_IMPORT)}, 0 problems"
    )


def shard_split(file_name, manifest):
    """The split of `data/{split}-{family}-…` (the longest split name that matches)."""
    best = None
    for s in manifest["splits"]:
        if file_name.startswith(s + "-") and (best is None or len(s) > len(best)):
            best = s
    return best


if __name__ == "__main__":
    main()
