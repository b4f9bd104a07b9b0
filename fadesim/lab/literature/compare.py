"""Comparing task families on the published settings: candidates, pooled scores, the best and the
leave-one-setting-out estimate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd


# ----------------------------------------------------------------------------- comparing task families
@dataclass(frozen=True)
class Candidate:
    """One simulated side to compare on the published settings: a task family, an optimizer and (for ``sharpen``)
    its sharpen_scale and, optionally, its prompts a step (0: all) and skill_scale (0: none). Written
    ``task:optimizer``, ``sharpen:optimizer:scale``, ``sharpen:optimizer:scale:prompts_per_step`` or
    ``sharpen:optimizer:scale:prompts_per_step:skill_scale``."""

    task: str
    optimizer: str
    sharpen_scale: float = 1.0
    prompts_per_step: int = 0
    skill_scale: float = 0.0

    @property
    def label(self) -> str:
        if self.task != "sharpen":
            return f"{self.task}:{self.optimizer}"
        if self.skill_scale:
            return f"sharpen:{self.optimizer}:{self.sharpen_scale:g}:{self.prompts_per_step}:{self.skill_scale:g}"
        return f"sharpen:{self.optimizer}:{self.sharpen_scale:g}" + (
            f":{self.prompts_per_step}" if self.prompts_per_step else "")


def parse_candidates(text: str, tasks: Sequence[str], optimizers: Sequence[str]) -> list[Candidate]:
    """``"bandit:adam,sharpen:adam:0.3"`` -> candidates, each checked (a clear error naming the bad entry)."""
    out = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        parts = entry.split(":")
        if len(parts) not in (2, 3, 4, 5):
            raise ValueError(f"--compare entry {entry!r} must be task:optimizer or sharpen:optimizer:scale"
                             f"[:prompts_per_step[:skill_scale]]")
        task, optimizer = parts[0], parts[1]
        if task not in tasks:
            raise ValueError(f"--compare entry {entry!r}: unknown task {task!r}; known: {', '.join(tasks)}")
        if optimizer not in optimizers:
            raise ValueError(f"--compare entry {entry!r}: unknown optimizer {optimizer!r}; known: {', '.join(optimizers)}")
        if len(parts) >= 3 and task != "sharpen":
            raise ValueError(f"--compare entry {entry!r}: only the sharpen task takes a scale")
        try:
            scale = float(parts[2]) if len(parts) >= 3 else 1.0
        except ValueError:
            raise ValueError(f"--compare entry {entry!r}: the scale must be a number") from None
        if not (math.isfinite(scale) and scale >= 0):
            raise ValueError(f"--compare entry {entry!r}: the scale must be a finite number >= 0")
        batch = parts[3] if len(parts) >= 4 else "0"
        if not batch.isdigit():
            raise ValueError(f"--compare entry {entry!r}: prompts_per_step must be a whole number >= 0")
        try:
            skill = float(parts[4]) if len(parts) == 5 else 0.0
        except ValueError:
            raise ValueError(f"--compare entry {entry!r}: the skill scale must be a number") from None
        if not (math.isfinite(skill) and skill >= 0):
            raise ValueError(f"--compare entry {entry!r}: the skill scale must be a finite number >= 0")
        out.append(Candidate(task, optimizer, scale, int(batch), skill))
    if not out:
        raise ValueError("--compare needs at least one task:optimizer entry")
    return out


def setting_score(res: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of one ``run_setting`` result that the comparison pools over settings."""
    c = res["comparisons"]
    return {"setting": res["setting"], "agree": int(c.agree.sum()), "total": int(len(c)),
            "abs_error_sum": float(res["error"] * res["n_error"]) if res["n_error"] else 0.0,
            "n_error": int(res["n_error"]), "length": float(res["length"]), "reached": bool(res["reached"])}


def pooled_scores(scores: pd.DataFrame, configs: Sequence[str] | None = None) -> pd.DataFrame:
    """Per config (``configs``' order, default first-listed in ``scores``): agree, total, the agreeing fraction and
    the pooled pass@k mean abs error, summed over the settings of ``scores`` (one row per config and setting: agree,
    total, abs_error_sum, n_error); a config with no rows there has zero totals."""
    out = scores.groupby("config", sort=False)[["agree", "total", "abs_error_sum", "n_error"]].sum()
    if configs is not None:
        out = out.reindex(list(configs), fill_value=0)
    out["frac"] = (out.agree / out.total).where(out.total > 0)
    out["error"] = (out.abs_error_sum / out.n_error).where(out.n_error > 0)
    return out


def best_config(scores: pd.DataFrame, configs: Sequence[str] | None = None) -> str:
    """The config (among ``configs``, default those in ``scores``) with the highest pooled sign agreement (ties: the
    lower pooled pass@k error, then the first listed; a config with nothing compared or no error ranks last on
    that key)."""
    pooled = pooled_scores(scores, configs)
    ranked = pooled.assign(frac=pooled.frac.fillna(-1.0), error=pooled.error.fillna(float("inf")))
    return str(ranked.sort_values(["frac", "error"], ascending=[False, True], kind="stable").index[0])


def leave_one_setting_out(scores: pd.DataFrame) -> pd.DataFrame:
    """For each setting: the config (column ``config``) that ``best_config`` picks on the *other* settings, and its
    score on the held-out setting.

    ``scores``: one row per (config, setting) with columns agree, total, abs_error_sum, n_error. The held-out rows'
    agree / total summed over settings is the leave-one-setting-out estimate of how well choosing among these
    configs generalises to a setting the choice never saw."""
    configs, rows = list(dict.fromkeys(scores.config)), []
    for held in dict.fromkeys(scores.setting):
        chosen = best_config(scores[scores.setting != held], configs)
        mine = scores[(scores.setting == held) & (scores.config == chosen)].iloc[0]
        rows.append({"held_out": held, "chosen": chosen, "agree": int(mine.agree), "total": int(mine.total)})
    return pd.DataFrame(rows, columns=["held_out", "chosen", "agree", "total"])
