"""What an advantage did in a real run: read a trainer's rollout logs, decompose each step's advantages, compare.

``analyze(path, out)`` (and ``fadesim analyze PATH --out DIR``) reads

- a **verl** rollout directory (``trainer.rollout_data_dir``: ``{step}.jsonl``, one JSON object per rollout with
  ``input``, ``output``, ``gts``, ``score``, ``step``, as verl 0.9.1's ``RayPPOTrainer._write_generations`` writes);
- a **TRL** completions directory (``log_completions=True``: ``completions/completions_{step:05d}.parquet`` with
  ``step``, ``prompt``, ``completion``, one column per reward function, ``advantage``: the advantages its loss used);
- a **table** (CSV, JSONL or Parquet) with the columns ``step``, ``prompt`` (or ``prompt_id``), ``reward`` and,
  optionally, ``group`` (group id), ``advantage``, ``logprob`` (the rollout's summed token log-prob), ``entropy``
  (its mean token entropy, nats) and ``length`` (its response tokens).

Rows are read as a stream, one step at a time (a table's rows must come grouped by step, as trainers write them),
so a run of millions of rollouts needs the memory of one step. Groups are the rollouts of one prompt within one
step, or of one ``group`` id where given. verl and TRL write a prompt's G rollouts next to each other and log no
group id, and a prompt can be drawn twice in one step: their groups are the runs of consecutive rows with one
prompt, cut into pieces of G rows, G being the greatest common divisor of the step's run lengths (or
``group_size`` where given). A rollout is correct when its reward exceeds ``threshold`` (0.5 by
default); advantages are computed on those 0/1 rewards.

Per step and advantage it reports what ``fadesim.decompose`` gives, as the simulator logs it: the masses per
group, the sign balance and the ESS, plus the fractions of all-correct and all-wrong groups (rollouts that carried
no signal under a group-centred advantage). The run's own advantages are the ``advantage`` column where the log
has one (TRL) and otherwise the estimator named by ``advantage`` (verl: its grpo by default), recomputed; each
advantage of ``compare`` is computed on the same batches. Per step it also tracks prompts: solved (every rollout
correct), never solved so far, newly solved (a first correct rollout) and newly lost (no correct rollout where
the prompt's previous appearance had one).

Advantages that read what the policy did need the columns that record it, and are refused where the log lacks them:
``unlikeliness`` reads each rollout's sequence log-prob (``logprob``: its tokens' log-probs summed); ``fade`` reads
the entropy signal, which is rebuilt from ``entropy`` (a rollout's mean token entropy, nats) as the trainers build
it (``fadesim.advantages.calling``): the step's entropy is the token mean, sum(entropy * length) / sum(length)
(the plain mean over rollouts where the log has no ``length``), the initial entropy is the first logged step's,
and the signal is their moving average with factor ``entropy_decay`` (0.9, the trainers' default) including the
current step. On a log of the fadesim bridge (``BridgeConfig(log_rollouts=True)``, which writes these columns)
this recomputes the advantages the run used, provided the log starts at the run's first step (a log of a later
stretch starts the signal afresh, so FADE's schedule differs from the trainer's); verl's and TRL's logs hold
neither column.

Outputs, written to a temporary folder and moved into place only when complete: ``steps.csv`` (one row per step x
advantage), ``prompts.csv`` (one row per step; with the step's entropy, the smoothed signal and its ratio to the
first step's where the log has entropies), ``report.md`` and ``analysis.png``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

STEP_COLUMNS = ("step", "advantage", "n_prompts", "n_groups", "n_rollouts", "mean_reward", "all_correct_groups",
                "all_wrong_groups", "positive_mass", "negative_mass", "sign_balance", "ess")
TABLE_SUFFIXES = (".csv", ".jsonl", ".parquet")
TRL_KNOWN = {"step", "prompt", "completion", "advantage", "image", "images"}
CHUNK = 100_000  # rows read at a time from a table
NUMERIC_COLUMNS = ("step", "reward", "advantage", "logprob", "entropy", "length")
ENTROPY_DECAY = 0.9  # the trainers' default (BridgeConfig, FadesimGRPOTrainer, SimConfig)


class AnalysisError(ValueError):
    """A rollout log that cannot be read as documented (the message names the file and line)."""


# ----------------------------------------------------------------------------- reading
def detect(path: str | Path) -> str:
    """"verl", "trl" or "table" for a rollout log, or an AnalysisError saying what was expected."""
    path = Path(path)
    if path.is_file():
        if path.suffix in TABLE_SUFFIXES:
            return "table"
        raise AnalysisError(f"{path}: a table must be .csv, .jsonl or .parquet")
    if not path.is_dir():
        raise AnalysisError(f"{path}: no such file or directory")
    if (path / "completions").is_dir() or any(path.glob("completions_*.parquet")):
        return "trl"
    if any(p.stem.isdigit() for p in path.glob("*.jsonl")):
        return "verl"
    raise AnalysisError(f"{path}: neither a verl rollout directory ({{step}}.jsonl files) nor a TRL output directory "
                        "(completions/completions_*.parquet)")


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise AnalysisError(f"{path}, line {line_no}: not valid JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise AnalysisError(f"{path}, line {line_no}: expected a JSON object per line")
            yield line_no, row


def _number(value: Any, where: str, what: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise AnalysisError(f"{where}: {what} {value!r} is not a number") from None
    if out != out:
        raise AnalysisError(f"{where}: {what} is NaN")
    return out


def _verl_steps(path: Path) -> Iterator[pd.DataFrame]:
    files = sorted((p for p in path.glob("*.jsonl") if p.stem.isdigit()), key=lambda p: int(p.stem))
    for f in files:
        rows = []
        for line_no, row in _jsonl_rows(f):
            where = f"{f}, line {line_no}"
            missing = [c for c in ("input", "score") if c not in row]
            if missing:
                raise AnalysisError(f"{where}: missing {', '.join(missing)} (verl writes input, output, gts, score, "
                                    "step)")
            rows.append({"step": int(_number(row.get("step", f.stem), where, "step")), "prompt": str(row["input"]),
                         "reward": _number(row["score"], where, "score")})
        if rows:
            frame = pd.DataFrame(rows)
            yield frame.assign(group=consecutive_groups(frame.prompt.tolist()).astype(str))


def _trl_steps(path: Path, reward_column: str | None) -> Iterator[pd.DataFrame]:
    import pyarrow.parquet as pq

    folder = path / "completions" if (path / "completions").is_dir() else path
    files = sorted(folder.glob("completions_*.parquet"))
    for f in files:
        names = pq.read_schema(f).names
        if "prompt" not in names or "step" not in names:
            raise AnalysisError(f"{f}: a TRL completions table needs step and prompt columns; it has {names}")
        candidates = [c for c in names if c not in TRL_KNOWN]
        if reward_column is None:
            if len(candidates) != 1:
                raise AnalysisError(f"{f}: {len(candidates)} candidate reward columns {candidates}; name the one to "
                                    "analyse with reward_column (--reward-column)")
            column = candidates[0]
        else:
            if reward_column not in names:
                raise AnalysisError(f"{f}: no column {reward_column!r}; it has {names}")
            column = reward_column
        keep = ["step", "prompt", column] + (["advantage"] if "advantage" in names else [])
        frame = pq.read_table(f, columns=keep).to_pandas()
        frame = frame.rename(columns={column: "reward"})
        frame["prompt"] = frame["prompt"].map(lambda p: p if isinstance(p, str) else json.dumps(p, default=str))
        bad = frame.reward.isna()
        frame["group"] = consecutive_groups(frame.prompt.tolist()).astype(str)
        if bad.any():  # TRL logs None where a reward function did not apply: masked, as TRL masks them
            frame = frame[~bad]
        yield frame


def _table_rows(path: Path) -> Iterator[tuple[Any, pd.DataFrame]]:
    """(where(i): the file and line (or row) of the chunk's i-th row, chunk) of a table, in chunks of CHUNK rows."""
    if path.suffix == ".csv":
        first = 2  # line 1 is the header
        for chunk in pd.read_csv(path, chunksize=CHUNK):
            yield (lambda i, f=first: f"{path}, line {f + i}"), chunk
            first += len(chunk)
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        first = 1
        for batch in pq.ParquetFile(path).iter_batches(batch_size=CHUNK):
            yield (lambda i, f=first: f"{path}, row {f + i}"), batch.to_pandas()
            first += batch.num_rows
    else:
        rows, lines = [], []
        for line_no, row in _jsonl_rows(path):
            rows.append(row)
            lines.append(line_no)
            if len(rows) == CHUNK:
                yield (lambda i, ls=lines: f"{path}, line {ls[i]}"), pd.DataFrame(rows)
                rows, lines = [], []
        if rows:
            yield (lambda i, ls=lines: f"{path}, line {ls[i]}"), pd.DataFrame(rows)


def _table_steps(path: Path) -> Iterator[pd.DataFrame]:
    done: set[int] = set()
    pending: list[pd.DataFrame] = []
    current: int | None = None
    for where, chunk in _table_rows(path):
        if "prompt" not in chunk and "prompt_id" in chunk:
            chunk = chunk.rename(columns={"prompt_id": "prompt"})
        missing = [c for c in ("step", "prompt", "reward") if c not in chunk]
        if missing:
            raise AnalysisError(f"{where(0)}: missing column(s) {missing}; a table needs step, prompt (or prompt_id), "
                                "reward")
        for c in NUMERIC_COLUMNS:
            if c in chunk:
                values = pd.to_numeric(chunk[c], errors="coerce")
                if values.isna().any():
                    i = int(np.flatnonzero(values.isna().to_numpy())[0])
                    raise AnalysisError(f"{where(i)}: {c} {chunk[c].iloc[i]!r} is not a number")
                if c in ("entropy", "length") and (values < 0).any():
                    i = int(np.flatnonzero((values < 0).to_numpy())[0])
                    raise AnalysisError(f"{where(i)}: {c} {float(values.iloc[i]):g} is negative")
                chunk[c] = values
        chunk["prompt"] = chunk["prompt"].astype(str)
        if "group" in chunk:
            chunk["group"] = chunk["group"].astype(str)
        steps = chunk.step.to_numpy().astype(int)
        starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
        for start, stop in zip(starts, np.r_[starts[1:], len(steps)]):
            step, part = int(steps[start]), chunk.iloc[start:stop]
            if step in done:
                raise AnalysisError(f"{where(int(start))}: rows of step {step} come after another step's; the table must be "
                                    "grouped by step, as trainers write it")
            if current is not None and step != current:
                yield pd.concat(pending, ignore_index=True)
                done.add(current)
                pending = []
            current = step
            pending.append(part.assign(step=step))
    if pending:
        yield pd.concat(pending, ignore_index=True)


def consecutive_groups(prompts: Sequence[str], group_size: int | None = None) -> np.ndarray:
    """Group ids of rows written group after group (verl, TRL): runs of consecutive equal prompts, cut into pieces of
    ``group_size`` rows (default: the gcd of the run lengths). A run that is not a multiple of it is an error."""
    values = np.asarray(prompts, dtype=object)
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    lengths = np.diff(np.r_[starts, len(values)])
    size = int(group_size) if group_size else int(np.gcd.reduce(lengths)) if len(lengths) else 1
    if size < 1 or any(n % size for n in lengths):
        bad = next(int(n) for n in lengths if n % size)
        raise AnalysisError(f"a run of {bad} consecutive rollouts of one prompt is not a multiple of the group size "
                            f"{size}")
    return np.arange(len(values)) // size


def read_steps(path: str | Path, *, reward_column: str | None = None) -> tuple[str, Iterator[pd.DataFrame]]:
    """(the detected format, an iterator over the run's steps, each a DataFrame of its rollouts with at least step,
    prompt and reward, and advantage / group where the log has them)."""
    path = Path(path)
    kind = detect(path)
    if kind == "verl":
        return kind, _verl_steps(path)
    if kind == "trl":
        return kind, _trl_steps(path, reward_column)
    return kind, _table_steps(path)


# ----------------------------------------------------------------------------- one step
@dataclass
class StepGroups:
    """One step's rollouts as groups: rewards (groups, G_max) 0/1 and its mask (shorter groups are masked), the
    groups' prompts, and where the log has them the logged advantages and sequence log-probs (same shape) and the
    step's token-mean entropy."""

    rewards: np.ndarray
    mask: np.ndarray
    prompts: list[str]
    advantage: np.ndarray | None = None
    logprob: np.ndarray | None = None
    entropy: float | None = None


def grouped(step: pd.DataFrame, threshold: float) -> StepGroups:
    """A step's rollouts as groups: the ``group`` ids where given, else the prompts, in order of first appearance."""
    key = step["group"] if "group" in step else step["prompt"]
    codes, uniques = pd.factorize(key, sort=False)
    n_groups = len(uniques)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=n_groups)
    width = int(counts.max())
    position = np.empty(len(codes), dtype=int)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position[order] = np.arange(len(codes)) - np.repeat(starts, counts)

    def table(values: np.ndarray) -> np.ndarray:
        out = np.zeros((n_groups, width))
        out[codes, position] = values
        return out

    mask = np.zeros((n_groups, width), dtype=bool)
    mask[codes, position] = True
    rewards = table((step.reward.to_numpy(dtype=float) > threshold).astype(float))
    entropy = None
    if "entropy" in step:
        ent = step.entropy.to_numpy(dtype=float)
        length = step.length.to_numpy(dtype=float) if "length" in step else None
        entropy = (float((ent * length).sum() / length.sum()) if length is not None and length.sum() > 0
                   else float(ent.mean()))
    return StepGroups(rewards, mask, step.groupby(codes, sort=True).prompt.first().tolist(),
                      advantage=table(step.advantage.to_numpy(dtype=float)) if "advantage" in step else None,
                      logprob=table(step.logprob.to_numpy(dtype=float)) if "logprob" in step else None,
                      entropy=entropy)


def step_rows(step: int, rewards: np.ndarray, mask: np.ndarray, advantages: Mapping[str, np.ndarray],
              prompts: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per advantage (STEP_COLUMNS) of one step's groups: ``n_prompts`` counts the distinct ``prompts``
    of the groups (a prompt drawn twice in a step is one prompt, two groups; every group its own prompt where
    ``prompts`` is not given), ``n_groups`` the groups."""
    import fadesim
    from fadesim.advantages.calling import mass_metrics

    n = mask.sum(axis=1)
    k = (rewards * mask).sum(axis=1)
    n_prompts = len(set(prompts)) if prompts is not None else len(n)
    base = {"step": int(step), "n_prompts": int(n_prompts), "n_groups": int(len(n)), "n_rollouts": int(n.sum()),
            "mean_reward": float(k.sum() / n.sum()), "all_correct_groups": float(np.mean(k == n)),
            "all_wrong_groups": float(np.mean(k == 0))}
    rows = []
    for label, adv in advantages.items():
        d = fadesim.decompose(np.where(mask, adv, 0.0), rewards, mask=mask)
        m = mass_metrics(d, len(n))
        rows.append({**base, "advantage": label, **{c: float(m[c]) for c in ("positive_mass", "negative_mass",
                                                                               "sign_balance", "ess")}})
    return rows


@dataclass
class PromptTracker:
    """Which prompts have ever been solved, and each prompt's last pass rate."""

    ever: set[str] = field(default_factory=set)
    last: dict[str, float] = field(default_factory=dict)

    def update(self, step: int, prompts: Sequence[str], pass_rates: np.ndarray) -> dict[str, Any]:
        newly_solved = newly_lost = 0
        for prompt, p in zip(prompts, pass_rates):
            if p > 0 and prompt not in self.ever:
                newly_solved += 1
                self.ever.add(prompt)
            if p == 0 and self.last.get(prompt, 0.0) > 0:
                newly_lost += 1
            self.last[prompt] = float(p)
        hist = np.histogram(pass_rates, bins=10, range=(0.0, 1.0))[0] / max(len(pass_rates), 1)
        return {"step": int(step), "n_prompts": len(prompts), "solved": float(np.mean(pass_rates == 1.0)),
                "never_solved": int(len(self.last) - len(self.ever)), "newly_solved": newly_solved,
                "newly_lost": newly_lost, **{f"pass_rate_bin{i}": float(h) for i, h in enumerate(hist)}}


# ----------------------------------------------------------------------------- the whole run
@dataclass
class EntropySignal:
    """The entropy signal a trainer gives advantages that read ``signals``, rebuilt from logged step entropies: the
    first step's entropy is the initial one, the signal their moving average (``smoothed_entropy``), the step the
    count of steps before this one."""

    decay: float = ENTROPY_DECAY
    initial: float | None = None
    smoothed: float | None = None
    steps: int = 0

    def update(self, entropy: float | None) -> dict[str, float] | None:
        from fadesim.advantages.calling import smoothed_entropy

        if entropy is None:
            return None
        if self.initial is None:
            self.initial = entropy
        self.smoothed = smoothed_entropy(self.smoothed, entropy, self.decay)
        signals = {"entropy": self.smoothed, "initial_entropy": self.initial, "step": self.steps}
        self.steps += 1
        return signals


def _advantages_of(where: str, groups: StepGroups, signals: Mapping[str, float] | None, run: str,
                   compare: Sequence[tuple[str, str, Mapping[str, Any]]]) -> dict[str, np.ndarray]:
    from fadesim.advantages.calling import AdvantageCall

    def compute(label: str, name: str, params: Mapping[str, Any]) -> np.ndarray:
        call = AdvantageCall(name, params)
        entry = call.entry
        if entry.needs_signals and signals is None:
            raise AnalysisError(f"{where}: {label} reads the entropy signal {entry.needs_signals}, and the log has no "
                                "entropy column (each rollout's mean token entropy; the fadesim bridge's "
                                "log_rollouts writes it, verl and TRL do not)")
        if entry.needs_logprobs and groups.logprob is None:
            raise AnalysisError(f"{where}: {label} reads each rollout's log-prob, and the log has no logprob column "
                                "(the rollout's summed token log-prob; the fadesim bridge's log_rollouts writes it)")
        return np.asarray(call(groups.rewards, mask=groups.mask, signals=signals, logprobs=groups.logprob))

    out: dict[str, np.ndarray] = {}
    if groups.rewards.shape[1] < 2 and groups.advantage is None:
        raise AnalysisError(f"{where}: every group has one rollout (a prompt sampled once); group advantages need "
                            "G >= 2 rollouts per prompt (or a group column)")
    if groups.advantage is not None:
        out["run (logged)"] = groups.advantage
    else:
        out[f"run ({run}, recomputed)"] = compute(f"--advantage {run}", run, {})
    for label, name, params in compare:
        out[label] = compute(f"--compare {label}", name, params)
    return out


def analyze(path: str | Path, out: str | Path, *, advantage: str = "grpo", compare: str = "",
            threshold: float = 0.5, reward_column: str | None = None, forecast: bool = True,
            progress: bool = True, entropy_decay: float = ENTROPY_DECAY) -> dict[str, Any]:
    """Analyse a run's rollout log into ``out`` (see the module docstring); returns the tables and paths."""
    from tqdm.auto import tqdm

    from fadesim.lab.literature import parse_advantages

    if not 0.0 <= entropy_decay < 1.0:
        raise AnalysisError(f"entropy_decay must lie in [0, 1); got {entropy_decay}")
    comparisons = parse_advantages(compare) if compare else []
    kind, steps = read_steps(path, reward_column=reward_column)
    tracker = PromptTracker()
    signal = EntropySignal(entropy_decay)
    rows, prompt_rows, first_groups = [], [], None
    for step in tqdm(steps, desc=f"analysing {kind} run", unit="step", disable=not progress):
        if step.empty:
            continue
        groups = grouped(step, threshold)
        rewards, mask, prompts = groups.rewards, groups.mask, groups.prompts
        if first_groups is None:
            first_groups = (rewards, mask)
        s = int(step.step.iloc[0])
        signals = signal.update(groups.entropy)
        rows += step_rows(s, rewards, mask, _advantages_of(f"{path}, step {s}", groups, signals, advantage, comparisons),
                          prompts)
        # a prompt's pass rate over all its groups of the step (verl and TRL can draw a prompt twice in a step)
        per_prompt = pd.DataFrame({"prompt": prompts, "k": (rewards * mask).sum(1), "n": mask.sum(1)}).groupby(
            "prompt", sort=False).sum()
        prompt_rows.append(tracker.update(s, per_prompt.index.tolist(), (per_prompt.k / per_prompt.n).to_numpy()))
        if signals is not None:  # the log has entropies: the step's token mean and the signal FADE would read
            prompt_rows[-1].update(entropy=groups.entropy, entropy_signal=signals["entropy"],
                                   entropy_ratio=signals["entropy"] / signals["initial_entropy"]
                                   if signals["initial_entropy"] > 0 else 1.0)
    if not rows:
        raise AnalysisError(f"{path}: no rollouts found")
    table = pd.DataFrame(rows)[list(STEP_COLUMNS)]
    prompts_table = pd.DataFrame(prompt_rows)
    prediction = _forecast(first_groups, len(prompts_table)) if forecast else None
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        table.to_csv(tmp / "steps.csv", index=False)
        prompts_table.to_csv(tmp / "prompts.csv", index=False)
        if prediction is not None:
            prediction.to_csv(tmp / "forecast.csv", index=False)
        (tmp / "report.md").write_text(_report(path, kind, table, prompts_table, prediction, threshold))
        _figure(table, prompts_table, prediction, tmp / "analysis.png")
        if out.exists():
            shutil.rmtree(out)
        tmp.replace(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"kind": kind, "steps": table, "prompts": prompts_table, "forecast": prediction, "out": out}


def _forecast(first: tuple[np.ndarray, np.ndarray] | None, n_steps: int) -> pd.DataFrame | None:
    """The simulator's GRPO pass@1 over the run's length, calibrated (literature protocol) to the first step's pass@k
    (unbiased, k = 1, 2, 4, ... up to the smallest group); None where the first step cannot calibrate it."""
    from fadesim.lab.literature import ProtocolSettings, predict
    from fadesim.tasks.calibrate import estimate_pass_at_k

    if first is None:
        return None
    rewards, mask = first
    n = mask.sum(1)
    c = (rewards * mask).sum(1)
    g = int(n.min())
    ks = [2**i for i in range(int(np.log2(g)) + 1)] if g >= 2 else []
    if len(ks) < 2:
        return None
    curve = estimate_pass_at_k(n, c, ks)
    if not 0 < curve[1] < 1:
        return None
    settings = ProtocolSettings(seeds=4, G=g, max_steps=max(10, n_steps), log_every=1)
    res = predict(curve, [("grpo", "grpo", {})], settings, steps=max(1, n_steps - 1))
    paths = res["trajectories"]
    return paths[["step", "pass@1"]].rename(columns={"pass@1": "forecast_pass_at_1"})


def _report(path: Any, kind: str, table: pd.DataFrame, prompts: pd.DataFrame, prediction: pd.DataFrame | None,
            threshold: float) -> str:
    first, last = table.step.min(), table.step.max()
    lines = [f"# Run analysis: `{path}`", "", f"Format: {kind}; {prompts.step.nunique()} steps ({first} .. {last}); "
             f"a rollout is correct when its reward exceeds {threshold}.", "",
             "| advantage | mean positive mass | mean negative mass | mean sign balance | mean ESS |", "|---|---|---|---|---|"]
    for label, part in table.groupby("advantage", sort=False):
        lines.append(f"| {label} | {part.positive_mass.mean():.4f} | {part.negative_mass.mean():.4f} | "
                     f"{part.sign_balance.mean():+.3f} | {part.ess.mean():.2f} |")
    run = table[table.advantage == table.advantage.iloc[0]]
    wasted = run.all_correct_groups + run.all_wrong_groups
    lines += ["", f"Mean reward: {run.mean_reward.iloc[0]:.3f} at the first step, {run.mean_reward.iloc[-1]:.3f} at the "
              f"last. Groups with no signal (all correct or all wrong): {wasted.mean():.1%} on average "
              f"({run.all_correct_groups.mean():.1%} all correct, {run.all_wrong_groups.mean():.1%} all wrong).",
              f"Prompts: {int(prompts.newly_solved.sum())} newly solved and {int(prompts.newly_lost.sum())} newly lost "
              f"over the run; {int(prompts.never_solved.iloc[-1])} never solved by the last step."]
    if "entropy" in prompts and prompts.entropy.notna().all():
        low = prompts.entropy_ratio.idxmin()
        lines += [f"Entropy (the token mean of the log's entropies, nats): {prompts.entropy.iloc[0]:.3f} at the first "
                  f"step, {prompts.entropy.iloc[-1]:.3f} at the last; the smoothed signal over the first step's value "
                  f"(FADE's eta) fell to {prompts.entropy_ratio.min():.3f} (step {int(prompts.step[low])})."]
    if prediction is not None:
        observed = run.mean_reward.to_numpy()
        predicted = np.interp(np.arange(len(observed)), prediction.step.to_numpy(),
                              prediction.forecast_pass_at_1.to_numpy())
        apart = np.flatnonzero(np.abs(observed - predicted) > 0.05)
        where = (f"they part (by more than 0.05) from step {int(run.step.iloc[apart[0]])}" if len(apart)
                 else "they stay within 0.05 of each other throughout")
        lines += ["", "Forecast (the simulator calibrated to the first step's pass@k by the literature protocol, GRPO, "
                  f"one simulated step per logged step): pass@1 {predicted[-1]:.3f} at the end vs the observed mean "
                  f"reward {observed[-1]:.3f}; {where}."]
    return "\n".join(lines) + "\n"


def _figure(table: pd.DataFrame, prompts: pd.DataFrame, prediction: pd.DataFrame | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    run = table[table.advantage == table.advantage.iloc[0]]
    axes[0].plot(run.step, run.mean_reward, "-o", ms=3, label="observed mean reward")
    if prediction is not None:
        axes[0].plot(run.step.iloc[0] + prediction.step, prediction.forecast_pass_at_1, "--",
                     label="forecast pass@1 (simulated GRPO)")
    axes[0].plot(run.step, run.all_wrong_groups, ":", label="all-wrong groups")
    axes[0].plot(run.step, run.all_correct_groups, ":", label="all-correct groups")
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("fraction")
    axes[0].legend(fontsize=7)
    bins = [c for c in prompts.columns if c.startswith("pass_rate_bin")]
    image = axes[1].imshow(prompts[bins].to_numpy().T, aspect="auto", origin="lower", extent=(
        prompts.step.min() - 0.5, prompts.step.max() + 0.5, 0, 1), cmap="viridis")
    fig.colorbar(image, ax=axes[1], label="fraction of the step's prompts")
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("prompt pass rate")
    axes[0].set_title("reward and wasted groups", fontsize=9)
    axes[1].set_title("pass-rate distribution over steps", fontsize=9)
    axes[2].set_title("gradient mass per group (M+ solid, M- dashed)", fontsize=9)
    for label, part in table.groupby("advantage", sort=False):
        line, = axes[2].plot(part.step, part.positive_mass, label=f"{label} M+")
        axes[2].plot(part.step, part.negative_mass, "--", color=line.get_color(), label=f"{label} M-")
    axes[2].set_xlabel("step")
    axes[2].set_ylabel("mass per group")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
