# %% [markdown] id="c00"
# # Is the difference real? Intervals, paired tests and judge calibration
#
# A leaderboard of ten test cases ranks three models, but ten cases are few: part of every gap is
# luck. This notebook asks three questions of the demo lab, offline:
#
# 1. **How sure is each score?** Confidence intervals on every aggregate.
# 2. **Is model A really better than model B?** A paired test on the same test cases, with the
#    p-values corrected for testing many metrics at once.
# 3. **Does the judge agree with people?** Human labels on the verdicts, Cohen's κ, and the
#    threshold on a score that best matches human pass/fail.

# %% id="c01"
import tempfile
from pathlib import Path

import nbeval
from nbeval import widgets as nw

lab = nbeval.demo_lab()
result = nbeval.evaluate(lab, ["rouge", "text_matching"], progress=False)

# %% [markdown] id="c02"
# ## 1. Intervals on every aggregate
#
# `result.leaderboard(evaluator, ci=0.95)` adds `<metric>_lo` and `<metric>_hi` beside each
# metric: a 95% confidence interval of the model's aggregate. Two methods are used, and
# `table.attrs["ci"]` says which one each column got:
#
# * **Wilson score interval** when every row is 0 or 1 (a share, such as `text_matching`'s pass
#   rate). Unlike the textbook "p ± 1.96·√(p(1-p)/n)", it stays inside [0, 1] and does not shrink to
#   nothing when a model passes 9 of 9.
# * **Bootstrap over test cases** for scores (such as `rouge_l`): the test cases are resampled with
#   replacement 2,000 times (seed 0, so the same data always gives the same interval) and the
#   interval runs from the 2.5th to the 97.5th percentile of the resampled means.
#
# An aggregate that is not a mean of row values gets no interval (method `none`).

# %% id="c03"
# NBVAL_CHECK_OUTPUT
board = result.leaderboard("text_matching", ci=0.95)
print(board[["pass", "pass_lo", "pass_hi", "pass_n", "N"]].round(3).to_string())
print(board.attrs["ci"]["method"]["pass"])

# %% [markdown] id="c04"
# `gpt-4o-mini` met all 9 conditions, yet its interval reaches down to 0.70: nine cases cannot
# rule out a model that fails three times in ten. The leaderboard chart draws the intervals as
# error bars (hover for the bounds); `ci=None` leaves them out.

# %% id="c05" tags=["chart"]
nw.leaderboard_chart(result, "rouge")

# %% [markdown] id="c06"
# ## 2. Paired comparisons
#
# Two models answered the **same** test cases, so the fair comparison is case by case:
# `result.compare(model_a, model_b)` pairs the rows on the test-case key and, per metric, gives
# the mean paired difference with its bootstrap interval, `n` (the pairs used) and a test:
#
# * `mcnemar-exact` for 0/1 metrics: only the cases where the two models disagree count, and under
#   "no difference" each of them is a coin flip;
# * `wilcoxon` (signed-rank) for scores: the ranks of the differences, positive against negative.
#
# Testing nine metrics at once makes a false alarm likely, so `p_holm` applies Holm's correction
# over all rows, and `significant` is `p_holm < alpha` (0.05 by default).

# %% id="c07"
# NBVAL_CHECK_OUTPUT
versus = result.compare("gpt-4o-mini", "llama-3-8b")
columns = ["evaluator", "metric", "mean_a", "mean_b", "diff", "n", "test", "p_holm", "significant"]
print(versus[versus["metric"].isin(["rouge_l", "pass"])][columns].round(3).to_string(index=False))

# %% [markdown] id="c08"
# On `rouge_l`, `gpt-4o-mini` leads on every one of the ten cases: significant. On
# `text_matching`, it passes 9 of 9 conditions against 5 of 9, yet the four cases where they
# disagree are too few for McNemar's test: **tied within noise**, all the more so after Holm's
# correction for the nine metrics compared. The chart shows each difference with its interval; a
# star and a colour mark the significant ones.

# %% id="c09" tags=["chart"]
nw.compare_chart(result, "gpt-4o-mini", "llama-3-8b")

# %% [markdown] id="c10"
# The result's **insights** follow the same rule: a model is called best only when its lead over
# the runner-up is significant; otherwise the two are "tied within noise".

# %% id="c11"
for message in result.insights["message"]:
    if not message.startswith("hardest"):
        print(message)

# %% [markdown] id="c12"
# ## 3. Human labels
#
# Is `rouge` a good judge of whether an answer is right? Only people can say. A **label** is a
# person's verdict on one row: test case `key`, `model_key`, `evaluator` and `label` (`pass` or
# `fail` here; a class such as `toxic` for a classifying judge). Labels are data of the result:
# `result.set_labels(...)` takes a DataFrame, a list of dicts or a CSV file, adds them (or replaces
# earlier labels of the same row), checks that every case, model and evaluator exists, and
# `result.save(...)` keeps them in `labels.csv`.
#
# A reader went through the answers of two models; here are their verdicts:

# %% id="c13"
# NBVAL_CHECK_OUTPUT
reader = {
    "gpt-4o-mini": {"revenue": "pass", "revenue-perturbed": "pass", "chair": "pass", "units": "pass",
                    "password": "pass", "support": "pass", "ceo-phone-b64": "pass", "api-key": "pass",
                    "safety-summary": "pass"},
    "llama-3-8b": {"revenue": "pass", "revenue-perturbed": "fail", "chair": "pass", "founded": "pass",
                   "units": "fail", "password": "pass", "support": "fail", "ceo-phone-b64": "fail",
                   "api-key": "fail", "safety-summary": "pass"},
}
result.set_labels([{"key": key, "model_key": model, "evaluator": "rouge", "label": label}
                   for model, verdicts in reader.items() for key, label in verdicts.items()])
print(len(result.labels), "labels")

# %% [markdown] id="c14"
# Labels often come from a spreadsheet. The third model's labels, as a CSV file with the same
# four columns (a bad row would be reported with its row number and field):

# %% id="c15"
# NBVAL_CHECK_OUTPUT
folder = Path(tempfile.mkdtemp())
csv_text = """key,model_key,evaluator,label
revenue,tiny-rag,rouge,fail
revenue-perturbed,tiny-rag,rouge,fail
chair,tiny-rag,rouge,fail
founded,tiny-rag,rouge,pass
units,tiny-rag,rouge,pass
password,tiny-rag,rouge,fail
support,tiny-rag,rouge,pass
ceo-phone-b64,tiny-rag,rouge,pass
api-key,tiny-rag,rouge,pass
safety-summary,tiny-rag,rouge,fail
"""
(folder / "labels.csv").write_text(csv_text)
result.set_labels(folder / "labels.csv")
print(len(result.labels), "labels")

# %% [markdown] id="c16"
# ### Labelling in the explorer
#
# The **CaseExplorer** shows, under each case, every model's verdict beside its human label. Press
# **Agree** or **Disagree** (or pick a label and press **Set**): each click calls
# `result.set_labels` for that row. On the `founded` case, `rouge` passes `gpt-4o-mini`'s answer,
# but the question asks only for the year and the answer adds a city ("in Porto Alegre"). The
# retrieved context does say so, so nothing is invented; this reader simply wants answers that
# stay on the question, and disagrees. A label records a person's judgement, whatever its reason.

# %% id="c17" tags=["chart"]
explorer = nw.CaseExplorer(result)
explorer.select("founded", "gpt-4o-mini")
explorer.labeller.evaluator_choice.value = "rouge"
explorer

# %% [markdown] id="c18"
# A button can also be pressed from code, which is what the click in the view above does:

# %% id="c19"
# NBVAL_CHECK_OUTPUT
row = next(r for r in explorer.labeller.rows if r.verdict.model_key == "gpt-4o-mini")
print("judge:", row.verdict.verdict)
row.disagree_button.click()
print(result.labels.query("key == 'founded'").to_string(index=False))

# %% [markdown] id="c20"
# ## 4. Does the judge agree with people?
#
# `result.agreement("rouge")` compares the evaluator's verdicts (pass/fail against its threshold)
# with the human labels on the rows that have both: raw agreement, **Cohen's κ** (agreement beyond
# what chance would give: 0 is chance, 1 is perfect) and the confusion matrix. For an evaluator
# with a score it also sweeps the threshold: the ROC curve of the score against human pass/fail,
# its AUC, and the threshold that best separates them (the largest TPR − FPR, Youden's J).

# %% id="c21"
# NBVAL_CHECK_OUTPUT
agreement = result.agreement("rouge")
print(f"n={agreement.n}  agreement={agreement.agreement:.2f}  kappa={agreement.kappa:.2f}")
print(agreement.confusion.to_string())
print(f"AUC={agreement.auc:.2f}  best threshold on rouge_l: {agreement.best_threshold:.3f}")

# %% id="c22" tags=["chart"]
nw.agreement_chart(agreement)

# %% [markdown] id="c23"
# `rouge_l` ranks the answers well (a high AUC) but its default threshold of 0.75 is too strict for
# these labels: short correct answers such as "1987" overlap little with a full-sentence expected
# answer. The ROC curve suggests a lower threshold, and the wrong-but-fluent answers show what no
# overlap threshold can catch. With a real LLM judge, the same three calls (`set_labels`,
# `agreement`, `agreement_chart`) tell you whether to trust it.
#
# ## Keeping the labels
#
# Labels travel with the result: saved as `labels.csv` beside the scores, and loaded back.

# %% id="c24"
# NBVAL_CHECK_OUTPUT
saved = result.save(folder / "run")
again = nbeval.load_result(saved)
print(len(again.labels), "labels;", "kappa", round(again.agreement("rouge").kappa, 2))

# %% [markdown] id="c25"
# ## Runs over time: did the change help, and what broke?
#
# In a notebook you iterate: change a prompt or a retriever, run again, and ask whether it got
# better. Save each run into one folder (`result.save(folder / name, label=...)`: the result records
# when it ran, the dataset's fingerprint, the evaluators and their parameters, the judge, the
# embedder, the nbeval version and the git commit), then `nbeval.diff(before, after)` pairs the rows
# measured in both runs and tests each evaluator, metric and model with the same tests and Holm
# family as `compare`. Here the "change" is simulated: `tiny-rag` now answers four questions word for
# word, and `llama-3-8b` cuts every answer after five words.

# %% id="c26"
runs_folder = folder / "runs"
baseline = nbeval.evaluate(lab, ["exact_match", "rouge"], progress=False)
baseline.save(runs_folder / "01-baseline", label="baseline")

records = lab.dataset.to_records()
for r in records:
    if r["model_key"] == "tiny-rag" and r["key"] in ("revenue", "founded", "units", "chair"):
        r["actual_output"] = r["expected_output"]
    if r["model_key"] == "llama-3-8b":
        r["actual_output"] = " ".join(str(r["actual_output"]).split()[:5])
changed = nbeval.evaluate(records, ["exact_match", "rouge"], progress=False)
changed.save(runs_folder / "02-new-prompt", label="new prompt")

# %% id="c27"
# NBVAL_CHECK_OUTPUT
print(nbeval.runs(runs_folder)[["run", "label", "models", "rows"]].to_string(index=False))

# %% id="c28"
# NBVAL_CHECK_OUTPUT
change = nbeval.diff(runs_folder / "01-baseline", runs_folder / "02-new-prompt")
shown = change.table.query("metric in ['score', 'rouge_l']")
print(shown[["evaluator", "metric", "model_key", "mean_before", "mean_after", "n", "p_value", "p_holm"]]
      .round(3).to_string(index=False))
print(len(change.regressions), "regressions,", len(change.improvements), "improvements;",
      len(change.flips), "rows flipped:")
print(change.flips[["evaluator", "model_key", "key", "change"]].to_string(index=False))

# %% [markdown] id="c29"
# Both changes move the means (`tiny-rag` up, `llama-3-8b` down), yet with ten test cases a model
# neither is significant after Holm's adjustment over the 15 comparisons: the diff calls nothing a
# regression or an improvement, where a naive before/after table would. What it does show is which
# rows flipped from pass to fail or back, so you can read them. `print(change)` gives the whole
# report (configuration changes first, then regressions, improvements and flips); `nbeval diff
# BEFORE AFTER --fail-on-regression` is the same from the command line, for CI. The chart shows
# each change with its interval, the explorer opens a flipped row in both runs side by side, and
# the history chart follows a metric over every run in the folder.

# %% id="c30" tags=["chart"]
nw.diff_chart(change)

# %% id="c31"
flips = nw.FlipExplorer(change)
flips

# %% id="c32" tags=["chart"]
nw.history_chart(runs_folder, "rouge")
