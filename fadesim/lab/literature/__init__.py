"""The literature protocol: calibrated to a real model's base pass@k, does the simulator predict what RL did to
that model in published runs?

Inputs are two CSV files (the shipped ones are the package data ``fadesim/data/literature/``; a user's own in the same
schema):

- curves, columns exactly ``setting,source,method,k,pass_at_k``: one published pass@k (a fraction in [0, 1]) per
  row; each setting has ``base`` rows (the model before RL) at two k or more;
- methods, columns exactly ``method,advantage,params,steps_scale``: the name a method has in the curves, the
  registered fadesim advantage it corresponds to, its hyper-parameters as a JSON object, and a multiplier of the
  training length (2: a checkpoint trained twice as long as the reference). A method without a row is reported
  "not simulated" and left out of the score.

Per setting (``run_setting``):

a. **calibrate** the task's initial difficulty to the base rows alone (``fadesim.tasks.calibrate``, a Beta by
   default: two parameters, so two published k suffice);
b. **match the length**: the reference is the setting's method mapped to ``grpo`` with steps_scale 1 (exactly one,
   else an error naming the setting). Its simulated pass@1, averaged over the *tuning* seeds (or, with
   ``match_seeds="held"``, the default family's since 2026-12-07, over the held-out seeds of the run that is read),
   is compared with its published pass@1 at every logged step; the training length T is the first step where the
   simulation reaches it, or, where it never does, the step where it comes closest (reported as such). This is the
   only post-RL number the simulation sees;
c. **train** every mapped method on the *held-out* seeds (``split_seeds``) and read it at steps_scale x T
   (the nearest logged step): the **matched step**, the published runs' own condition. With ``match="pass@1"``
   each method is read instead where its own held-out pass@1 first reaches the reference's published pass@1 (or
   comes closest): **matched pass@1**, the pass@k-vs-pass@1 frontier, which takes learning speed out of the
   comparison (steps_scale is then moot, and pass@1 itself is matched, so k = 1 is left out of the sign score);
d. **score**: for every k published for two rows of the setting (a method and base, or two methods) whose
   published difference is at least ``min_difference`` (0.01: the papers' evaluation noise), does the simulated
   difference (held-out mean) have the same sign? And the mean absolute error of pass@k over every published
   (method, k) that is simulated, base included.

Split by job: ``published`` (reading the files), ``protocol`` (settings, calibrated task, length match),
``engines`` (the simulator and the first-order path), ``scoring`` (step d), ``compare`` (task families,
leave-one-setting-out), ``predict`` (a user's model; the grid written before a run). ``summary_line`` is the last line ``experiments/literature.py`` prints, exactly
``literature: A/B signs agree (P%) over S settings; pass@k mean abs error E``.
"""

from fadesim.lab.literature.published import BASE, CURVES, CURVE_COLUMNS, LiteratureError, METHODS, METHOD_COLUMNS, Method, TRAINING, TRAINING_COLUMNS, load_curves, load_methods, load_training, reference_method
from fadesim.lab.literature.scoring import length_line, mean_abs_error, resolved_line, sign_score, summary_line
from fadesim.lab.literature.protocol import (CHOSEN, CHOSEN_2026_12_05, CLOCKS, ENGINES, MATCH_SEEDS, MATCHES, READOUTS, SHARPEN_ONLY, ProtocolSettings,
                                             calibrated_task, clocked, crossing_point, describe_optimizer, describe_task, for_task, implied_by, match_length, matched_task,
                                             nearest_step, read_path, fallbacks, fallen_back, falls_short,
                                             unreached_note, without_misfire, without_reach)
from fadesim.lab.literature.engines import first_order_setting, run_setting
from fadesim.lab.literature.compare import Candidate, best_config, leave_one_setting_out, parse_candidates, pooled_scores, setting_score
from fadesim.lab.literature.predict import (extrapolations, parse_advantages, predict, prediction_grid, read_prediction,
                                           support)

__all__ = ["BASE", "CHOSEN", "CHOSEN_2026_12_05", "CLOCKS", "CURVES", "CURVE_COLUMNS", "Candidate", "ENGINES", "LiteratureError", "MATCH_SEEDS", "MATCHES", "METHODS", "METHOD_COLUMNS", "Method", "ProtocolSettings", "READOUTS", "SHARPEN_ONLY", "TRAINING", "TRAINING_COLUMNS", "best_config", "calibrated_task", "clocked", "crossing_point", "describe_optimizer", "describe_task", "extrapolations", "fallbacks", "fallen_back", "falls_short", "first_order_setting", "for_task", "implied_by", "leave_one_setting_out", "length_line", "load_curves", "load_methods", "load_training", "match_length", "matched_task", "mean_abs_error", "nearest_step", "parse_advantages", "parse_candidates", "pooled_scores", "predict", "prediction_grid", "read_path", "read_prediction", "reference_method", "resolved_line", "run_setting", "setting_score", "sign_score", "summary_line", "support", "unreached_note", "without_misfire", "without_reach"]
