"""The functions of drivegen's lmms-eval tasks (written by `drivegen export --format lmms-eval`).

Each reads one row of a drivegen release as `datasets` gives it. A response is scored as
`drivegen score` scores it: the response is matched to one of the row's `choices` (exact, then
with `_` and spaces alike, then a bare option letter where the family letters its options, then
the last line, then a whole-word match, longest option first), and is right when that choice
is the row's `answer`.
"""

import logging
import re
from collections import defaultdict

log = logging.getLogger("lmms-eval")

# The scorer takes letters from every family but EgoDyn, whose prompts ask for the option.
UNLETTERED = {"egodyn"}


def doc_to_visual(doc):
    """The row's images in `cameras` order, as RGB PIL images (none for text-only rows)."""
    return [img.convert("RGB") for img in (doc.get("images") or [])]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """The release's prompt, between the pre- and post-prompt lmms-eval passes for a model."""
    kw = lmms_eval_specific_kwargs or {}
    return f"{kw.get('pre_prompt', '')}{doc['question']}{kw.get('post_prompt', '')}"


def doc_to_target(doc):
    """What the prompt asks for: the letter where options are lettered, else the option."""
    if doc["family"] in UNLETTERED:
        return doc["answer"]
    return doc["answer_letter"]


def _normalise(s):
    s = " ".join(s.lower().replace("*", "").replace("`", "").split())
    return s.rstrip(".,;:!?").strip()


def _spaced(s):
    return s.replace("_", " ")


def _word_match(hay, needle):
    if not needle:
        return False
    return re.search(r"(?<![\w])" + re.escape(needle) + r"(?![\w])", hay) is not None


def _exact(text, choices):
    return next((i for i, c in enumerate(choices) if _normalise(c) == text), None)


def _equivalent(text, choices):
    t = _spaced(text)
    return next((i for i, c in enumerate(choices) if _spaced(_normalise(c)) == t), None)


def _letter(text, n):
    t = text.lstrip("(").rstrip(")")
    if len(t) != 1 or not ("a" <= t <= "z"):
        return None
    k = ord(t) - ord("a")
    return k if k < min(n, 26) else None


def _words(text, choices):
    order = sorted(range(len(choices)), key=lambda i: -len(choices[i]))
    for i in order:
        c = _normalise(choices[i])
        if _word_match(text, c) or ("_" in c and _word_match(text, _spaced(c))):
            return i
    return None


def parse(response, choices, letters):
    """The index of the choice `response` names, or None."""
    text = _normalise(response)
    for found in (_exact(text, choices), _equivalent(text, choices)):
        if found is not None:
            return found
    if letters:
        found = _letter(text, len(choices))
        if found is not None:
            return found
    lines = [_normalise(line) for line in response.splitlines()]
    last = next((line for line in reversed(lines) if line), None)
    if last is not None:
        for found in (_exact(last, choices), _equivalent(last, choices), _words(last, choices)):
            if found is not None:
                return found
    return _words(text, choices)


def process_results(doc, results):
    """Whether the response names the row's answer, kept with the row's question type."""
    response = results[0] if results else ""
    choices = list(doc["choices"])
    i = parse(response or "", choices, doc["family"] not in UNLETTERED)
    right = i is not None and choices[i] == doc["answer"]
    entry = {
        "qa_id": doc["qa_id"],
        "question_type": doc["question_type"],
        "correct": 1.0 if right else 0.0,
    }
    return {"accuracy": entry, "type_accuracy": entry}


def _by_type(results):
    per = defaultdict(list)
    for r in results:
        per[r["question_type"]].append(r["correct"])
    return {t: sum(v) / len(v) for t, v in sorted(per.items())}


def aggregate_accuracy(results):
    """The share of rows answered right; each question type's accuracy is logged."""
    for t, acc in _by_type(results).items():
        log.info("drivegen %s: %.4f", t, acc)
    return sum(r["correct"] for r in results) / len(results) if results else 0.0


def aggregate_type_accuracy(results):
    """The mean over question types of each type's accuracy."""
    per = _by_type(results)
    return sum(per.values()) / len(per) if per else 0.0
