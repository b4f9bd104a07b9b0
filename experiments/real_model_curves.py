"""The project's own measured SmolLM2 runs as literature-protocol settings: one curves file and one methods file in
the schema of ``fadesim/data/literature/`` (``fadesim.lab.literature``), so that any simulator family is scored on the
real model by the same command that scores it on the published runs::

    python experiments/real_model_curves.py            # writes paper_figures/real_model/smollm2_{curves,methods,training}.csv
    python experiments/real_model_curves.py --clock    # every checkpoint at its multiple: smollm2_clock_*.csv
    python experiments/real_model_curves.py --beside   # the paper experiment + the arms measured beside it
    python experiments/real_model_curves.py --longer   # its checkpoints at 1x-4x, and 6x, 8x of the arms trained longer
    python experiments/real_model_curves.py --part     # its three-operand part trained alone, steps 16-96 at 1x-6x
    python experiments/literature.py --full --curves paper_figures/real_model/smollm2_curves.csv \\
        --methods paper_figures/real_model/smollm2_methods.csv --training paper_figures/real_model/smollm2_training.csv

Three settings, each read at one checkpoint (the methods' mean pass@k over the measured seeds; GRPO there is the
reference whose pass@1 fixes the simulated length):

- ``SmolLM2-135M / sums (issue 27), step 24``: ``real_model_measured.csv``, the first design (GRPO, PSR, NSR,
  W-REINFORCE, FADE; 2 seeds), at its last step;
- ``SmolLM2-135M / sums prefilled, step 24``: ``real_model_prefilled_measured.csv``, the same with the answer's start
  prefilled, at its last step;
- ``SmolLM2-135M / paper experiment, step 48``: ``real_model_paper_measured.csv`` (issue 39), the seven static arms
  (GRPO, the sign axis b = -1 .. +1, focal gamma 1 and 3) and FADE's chosen setting, at step 48 (4 seeds; FADE 3
  held-out seeds).

Nothing is simulated or trained here; the files are a reformatting of committed measurements (``literature_files``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

from real_model import FULL, PAPER, literature_files  # noqa: E402 - the experiment next to this one

from fadesim.lab.results import write_atomic  # noqa: E402

FOLDER = ROOT / "paper_figures" / "real_model"
#: FADE's setting chosen on the tuning seed of the paper experiment (real_model_paper_winners.csv)
PAPER_FADE = "fade:lam_neg_explore=1:lam_neg_exploit=0.25"
PAPER_STATICS = ("grpo", "sign_scaled:balance=-1", "sign_scaled:balance=-0.5", "sign_scaled:balance=0.5",
                 "sign_scaled:balance=1", "focal:gamma=1", "focal:gamma=3")
SOURCE = "fadesim SmolLM2-135M-Instruct runs (paper_figures/real_model)"


def _long(measured: pd.DataFrame) -> pd.DataFrame:
    """(method, seed, step, k, pass_at_k) from the paper experiment's wide file (one pass@k column per k)."""
    cols = [c for c in measured.columns if c.startswith("pass@") and c[5:].isdigit()]
    out = measured.melt(id_vars=["method", "seed", "step"], value_vars=cols, var_name="k", value_name="pass_at_k")
    out["k"] = out.k.str[5:].astype(int)
    # the base once, from the first run's step-0 rows: every arm and seed starts at the same measured base (the score
    # phase checks each run's step 0 against it)
    base = out[out.step == 0].drop_duplicates("k").assign(method="base")
    return pd.concat([base, out[out.step > 0]], ignore_index=True)


def _on_the_papers_base(path: Path, paper: pd.DataFrame) -> pd.DataFrame:
    """The runs measured in ``path`` (``_long``'s rows), refused unless their base is the paper experiment's own
    (``paper``'s base rows): runs scored on another base do not belong to its setting."""
    extra = _long(pd.read_csv(path))
    if not extra[extra.method == "base"].set_index("k").pass_at_k.equals(
            paper[paper.method == "base"].set_index("k").pass_at_k):
        raise ValueError(f"{path.name} was scored against another base than the paper experiment's; its runs do not "
                         "belong to that setting")
    return extra


def training(curves: pd.DataFrame) -> pd.DataFrame:
    """Each setting's batch in the schema of ``fadesim/data/literature/training.csv`` (the noise-scale clock's N): the
    two sums designs ran ``real_model.FULL``'s, the paper experiment ``real_model.PAPER``'s."""
    rows = []
    for setting in dict.fromkeys(curves.setting):
        s = PAPER if "paper experiment" in setting else FULL
        rows.append({"setting": setting, "prompts_per_step": s.prompts_per_step, "rollouts_per_prompt": s.G})
    return pd.DataFrame(rows)


def export(folder: Path = FOLDER, clock: bool = False, beside: bool = False, longer: bool = False
           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curves, methods) of the three settings (module docstring), from the committed measured files in ``folder``.
    ``clock``: instead, every checkpoint of each design, the first at 1x (where GRPO's pass@1 fixes the simulated
    length) and each later one at its multiple of it (steps 12 and 24 of the earlier designs at 1x and 2x; 12, 24, 36
    and 48 of the paper experiment at 1x .. 4x): one calibration predicting 2x, 3x and 4x the training.
    ``beside``: the paper experiment's setting alone, with the arms measured beside it under its settings and seeds
    (``real_model_beside_measured.csv``, ``experiments/real_model_beside.py``) added to its arms.
    ``longer`` (with ``clock``): the paper experiment's setting alone at every checkpoint, with the evaluations of the
    arms trained past its length (``real_model_longer_measured.csv``, ``experiments/real_model_longer.py``: steps 72
    and 96, 6x and 8x the first checkpoint, on the paper experiment's seeds) added to its arms."""
    if longer and (beside or not clock):
        raise ValueError("longer adds the arms trained past the paper experiment's length to its training-length "
                         "setting: it needs clock and not beside")
    curves, methods = [], []
    earlier = (("real_model_measured.csv", "SmolLM2-135M / sums (issue 27), step 24", 24),
               ("real_model_prefilled_measured.csv", "SmolLM2-135M / sums prefilled, step 24", 24))
    for name, setting, step in () if beside or longer else earlier:
        steps = {12: 1, 24: 2} if clock else {step: 1}
        c, m = literature_files(pd.read_csv(folder / name), setting.replace("step 24", "steps 12-24") if clock
                                else setting, steps, SOURCE)
        curves.append(c)
        methods.append(m)
    paper = _long(pd.read_csv(folder / "real_model_paper_measured.csv"))
    paper = paper[paper.method.isin(("base", *PAPER_STATICS, PAPER_FADE))]
    if beside:
        extra = _on_the_papers_base(folder / "real_model_beside_measured.csv", paper)
        paper = pd.concat([paper, extra[extra.method != "base"]], ignore_index=True)
    steps = {12: 1, 24: 2, 36: 3, 48: 4} if clock else {48: 1}
    if longer:
        extra = _on_the_papers_base(folder / "real_model_longer_measured.csv", paper)
        # the paper experiment's own seeds: each arm's course over one set of seeds (runs on further seeds, such as
        # b = -1's seeds 4-7, are a measurement of their own, not points of this setting)
        extra = extra[(extra.method == "base") | (extra.seed < PAPER.seeds)]
        later = sorted(int(step) for step in extra.step.unique() if step > max(steps))
        paper = pd.concat([paper, extra[extra.step.isin(later)]], ignore_index=True)
        steps = {**steps, **{step: int(step / min(steps)) if step % min(steps) == 0 else step / min(steps)
                             for step in later}}
    last = max(steps)
    c, m = literature_files(paper, f"SmolLM2-135M / paper experiment, {f'steps 12-{last}' if clock else 'step 48'}",
                            steps, SOURCE)
    curves.append(c)
    methods.append(m)
    methods = pd.concat(methods, ignore_index=True)
    clash = methods[methods.duplicated("method", keep=False)]
    if len(clash.drop_duplicates()) != len(clash.drop_duplicates("method")):
        raise ValueError(f"a method name maps to two advantages: {sorted(set(clash.method))}")
    return pd.concat(curves, ignore_index=True), methods.drop_duplicates("method")


#: the paper experiment's three-operand part trained alone (``experiments/real_model_part.py``), on its own questions
PART_FILE = "real_model_paperpart1_trained_part_measured.csv"
PART_SETTING = "SmolLM2-135M / paper experiment's three-operand part alone"


def export_part(folder: Path = FOLDER) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curves, methods) of one training-length setting: the paper experiment's three-operand part trained alone
    (``PART_FILE``: its 16 evaluation questions, the base at step 0), every checkpoint at its multiple of the first
    (steps 16, 32, 48 and 96 at 1x, 2x, 3x and 6x): one calibration at step 16 predicting the rest."""
    measured = _long(pd.read_csv(folder / PART_FILE))
    later = sorted(int(step) for step in measured.step.unique() if step > 0)
    steps = {step: int(step / later[0]) if step % later[0] == 0 else step / later[0] for step in later}
    return literature_files(measured, f"{PART_SETTING}, steps {later[0]}-{later[-1]}", steps, SOURCE)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(FOLDER),
                    help="folder for smollm2_curves.csv, smollm2_methods.csv and smollm2_training.csv")
    ap.add_argument("--clock", action="store_true",
                    help="every checkpoint at its multiple of the first (smollm2_clock_{curves,methods}.csv)")
    ap.add_argument("--beside", action="store_true",
                    help="the paper experiment with the arms measured beside it (smollm2_beside[_clock]_*.csv)")
    ap.add_argument("--longer", action="store_true",
                    help="the paper experiment at every checkpoint with the arms trained past its length, at their "
                         "multiples of the first (smollm2_longer_clock_*.csv; implies --clock)")
    ap.add_argument("--part", action="store_true",
                    help="the paper experiment's three-operand part trained alone, on its own questions, every "
                         "checkpoint at its multiple of the first (smollm2_part1_clock_*.csv; alone)")
    args = ap.parse_args(argv)
    try:
        if args.part and (args.clock or args.beside or args.longer):
            raise ValueError("--part is a setting of its own: it takes no --clock, --beside or --longer")
        curves, methods = export_part() if args.part else export(clock=args.clock or args.longer, beside=args.beside,
                                                                  longer=args.longer)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    out = Path(args.out)
    name = "smollm2_part1_clock" if args.part else (
        "smollm2" + "_beside" * args.beside + "_longer" * args.longer + "_clock" * (args.clock or args.longer))
    write_atomic(out / f"{name}_curves.csv", curves)
    write_atomic(out / f"{name}_methods.csv", methods)
    write_atomic(out / f"{name}_training.csv", training(curves))
    for setting, part in curves.groupby("setting", sort=False):
        print(f"{setting}: {part.method.nunique() - 1} methods, k = {sorted(int(k) for k in part.k.unique())}")
    print(f"wrote {out / f'{name}_curves.csv'}, {out / f'{name}_methods.csv'} and {out / f'{name}_training.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
