"""The fadesim command: list, card, check (registry and planted broken advantages), simulate, errors."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import fadesim
from fadesim.apps.cli import main

PLANTED = Path(__file__).parent / "planted" / "advantages.py"
# with the registry's cross-backend properties on one xdist worker: both run advantages on eager jax, whose
# operations compile once per process and shape, so one worker compiles them once instead of each worker
pytestmark = pytest.mark.xdist_group("eager_jax")


def _check_args(name, examples):
    entry = fadesim.info(name)
    args = ["check", f"{entry.fn.__module__}:{entry.fn.__name__}", "--examples", str(examples)]
    for flag in ("mean_centred", "scale_invariant", "needs_logprobs"):
        if getattr(entry, flag):
            args += ["--declare", flag]
    if entry.needs_signals:
        args += ["--declare", "needs_signals"]
    return args


#: the CLI tests check the command's plumbing (loading, metadata, report, exit status); every property runs on
#: every registered advantage in test_registry_properties, so most of them run a numpy-only subset here
QUICK_PROPERTIES = ["--only", "permutation_equivariant", "--only", "mask_handling", "--only", "singleton_groups"]


def test_check_passes_a_registered_advantage_loaded_by_path_with_every_property(capsys):
    assert main(_check_args("grpo", 10)) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    # parameter_domains included: the registered function carries grpo's declared domains in __fadesim__
    assert "15 passed, 0 failed; 4 contract items met, 0 warning(s)" in out and "advantage card" in out


@pytest.mark.parametrize("name", ["fade", "unlikeliness"])
def test_check_passes_registered_advantages_loaded_by_path(name, capsys):
    assert main(_check_args(name, 10) + QUICK_PROPERTIES) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "0 failed" in out and "advantage card" in out


@pytest.mark.parametrize("name", ["pkpo", "pass_at_k", "focal"])
def test_check_by_registry_name_uses_its_metadata(name, capsys):
    assert main(["check", name, "--examples", "10"] + QUICK_PROPERTIES) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "0 failed" in out and ("G from 5" in out) == (name in ("pkpo", "pass_at_k"))


def test_min_group_size_flag(capsys):
    target = f"{fadesim.info('pkpo').fn.__module__}:pkpo"
    assert main(["check", target, "--examples", "10"] + QUICK_PROPERTIES) == 1  # K = 4 needs G >= 5: G = 2..4 raise
    capsys.readouterr()
    assert main(["check", target, "--examples", "10", "--min-G", "5"] + QUICK_PROPERTIES) == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", fadesim.names())
def test_check_passes_every_registered_advantage(name, capsys):
    assert main(["check", name, "--examples", "50"]) == 0, capsys.readouterr().out


def test_check_passes_a_sound_user_advantage(capsys):
    assert main(["check", f"{PLANTED}:sound", "--examples", "30", "--only", "mean_centred", "--only",
                 "degenerate_groups"]) == 0
    out = capsys.readouterr().out
    assert "checked declared properties: mean_centred" in out and "PASS  mean_centred" in out
    assert "E[M+]" in out  # the mass card follows a clean report


@pytest.mark.parametrize("function,prop,message", [
    ("nan_on_ties", "degenerate_groups", "non-finite output on all-equal groups"),
    ("not_equivariant", "permutation_equivariant", "A(permuted r) != permuted A(r)"),
    ("numpy_only", "shape_and_namespace", "output"),
    ("ignores_mask", "mask_handling", "masked entries are not 0"),
    ("claims_centred", "mean_centred", "group sums are not 0"),
    # bugs trainers have shipped
    ("grpo_float32_residue", "float32_ties", "rounding residue of the group statistics is amplified"),
    ("relative_to_mean", "reward_order", "below reward"),
    ("masked_in_baseline", "masked_rewards_ignored", "changing the rewards of masked rollouts changed valid"),
])
def test_check_catches_planted_bugs(function, prop, message, capsys):
    """The intended property fails (exit 1) with a shrunk counter-example; run alone (--only) to keep the suite
    fast: every property runs on every registered advantage in test_registry_properties."""
    assert main(["check", f"{PLANTED}:{function}", "--examples", "30", "--only", prop]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"FAIL  {prop}"))
    assert message in line, line
    block = out[out.index(line):]
    assert "Case(rewards=" in block  # the shrunk counter-example is printed under the failure


def test_full_check_fails_a_planted_bug_with_exit_1(capsys):
    assert main(["check", f"{PLANTED}:ignores_mask", "--examples", "10"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  mask_handling" in out and "FAIL  masked_rewards_ignored" in out


def test_rloo_that_zeroes_groups_of_one_is_a_contract_finding(capsys):
    assert main(["check", f"{PLANTED}:rloo_zero_singletons", "--examples", "30", "--only", "singleton_groups"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("WARN  singleton_groups"))
    assert "were not refused" in line and "silently all zero" in line
    assert "fix: raise ValueError for groups smaller than" in out and "0 failed; 0 contract items met, 1 warning" in out


def test_a_plain_five_line_advantage_passes_with_contract_warnings_and_decorated_has_no_findings(capsys):
    assert main(["check", f"{PLANTED}:plain_centred", "--examples", "20"]) == 0
    out = capsys.readouterr().out
    warned = {ln.split()[1] for ln in out.splitlines() if ln.strip().startswith("WARN ")}
    assert warned == {"bad_input", "constant_output", "singleton_groups"}, warned
    assert out.count("fix:") == 3 and "@fadesim.advantage" in out
    assert "12 passed, 0 failed, 3 skipped;" in out  # mean_centred, scale_invariant, parameter domains: not declared
    assert not any(ln.strip().startswith("FAIL ") for ln in out.splitlines())
    assert main(["check", f"{PLANTED}:decorated_centred", "--examples", "20"]) == 0
    out = capsys.readouterr().out
    assert "12 passed, 0 failed, 3 skipped; 4 contract items met, 0 warning(s)" in out
    assert not any(ln.strip().startswith(("FAIL ", "WARN ")) for ln in out.splitlines())


def test_only_rejects_unknown_properties(capsys):
    assert main(["check", "grpo", "--only", "nope"]) == 2
    assert "--only takes one of" in capsys.readouterr().err


def test_numpy_only_also_breaks_under_jit(capsys):
    main(["check", f"{PLANTED}:numpy_only", "--examples", "10", "--only", "jax_transformations"])
    out = capsys.readouterr().out
    assert any(ln.strip().startswith("FAIL  jax_transformations") for ln in out.splitlines())


@pytest.mark.parametrize("target,message", [
    ("nowhere/missing.py:fn", "no such file: nowhere/missing.py"),
    (f"{PLANTED}:absent", "has no function 'absent'"),
    (f"{PLANTED}:wrong_signature", "has no 'mask' keyword"),
    (f"{PLANTED}:NOT_A_FUNCTION", "is a int, not a function"),
    ("no_such_module_xyz:fn", "cannot import module 'no_such_module_xyz'"),
    ("just_a_name", "expected FILE.py:FUNCTION or MODULE:FUNCTION"),
])
def test_check_load_errors_are_one_line(target, message, capsys):
    assert main(["check", target]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_card_prints_the_profile_and_writes_a_png(tmp_path, capsys):
    out_png = tmp_path / "card.png"
    assert main(["card", "grpo", "--G", "8", "--out", str(out_png)]) == 0
    text = capsys.readouterr().out
    prof = fadesim.profile("grpo", 8)
    row3 = next(ln for ln in text.splitlines() if ln.startswith("  3 "))
    assert f"{prof.a_pos[3]:+11.5f}" in row3 and f"{prof.a_neg[3]:+11.5f}" in row3
    row = next(ln for ln in text.splitlines() if ln.startswith("  0.25"))
    assert f"{float(prof.expected_positive_mass(0.25)):9.5f}" in row
    assert "profile peak: p* = 0.500 (medium focus)" in text
    assert out_png.stat().st_size > 20_000
    import matplotlib.pyplot as plt

    assert plt.imread(out_png).std() > 0.01


def test_card_for_focal_reports_hard_focus(tmp_path, capsys):
    assert main(["card", "focal", "--param", "gamma=4", "--out", str(tmp_path / "c.png")]) == 0
    assert "(hard focus)" in capsys.readouterr().out


def test_the_fade_card_reads_the_entropy_ratio(tmp_path, capsys):
    """--entropy-ratio (old spelling --eta) is FADE's schedule position H/H0: the two spellings agree, and the card
    at the start of training (ratio 1) differs from the card late in training (ratio 0.2)."""
    cards = {}
    for flag, ratio in (("--entropy-ratio", "1.0"), ("--eta", "1.0"), ("--entropy-ratio", "0.2")):
        assert main(["card", "fade", flag, ratio, "--out", str(tmp_path / "f.png")]) == 0
        cards[(flag, ratio)] = capsys.readouterr().out
    assert cards[("--entropy-ratio", "1.0")] == cards[("--eta", "1.0")]
    assert cards[("--entropy-ratio", "1.0")] != cards[("--entropy-ratio", "0.2")]


def test_card_errors(capsys):
    assert main(["card", "gpro"]) == 2
    assert "unknown advantage 'gpro'" in capsys.readouterr().err
    assert main(["card", "grpo", "--param", "gamma=2"]) == 2
    assert "has no parameter(s) ['gamma']" in capsys.readouterr().err
    assert main(["card", "grpo", "--param", "eps"]) == 2
    assert "--param expects name=value" in capsys.readouterr().err


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in fadesim.names():
        assert name in out
    assert "2402.03300" in out


def test_simulate(tmp_path, capsys):
    png = tmp_path / "sim.png"
    assert main(["simulate", "grpo", "--prompts", "16", "--steps", "40", "--seeds", "2", "--out", str(png)]) == 0
    out = capsys.readouterr().out
    assert "pass@1" in out and "logit_norm" in out and png.exists()
    png = tmp_path / "neural.png"
    assert main(["simulate", "grpo", "--task", "neural", "--prompts", "16", "--steps", "10", "--log-every", "5",
                 "--seeds", "2", "--out", str(png)]) == 0
    out = capsys.readouterr().out
    assert "grpo on neural" in out and "weight_norm" in out and png.exists()


@pytest.mark.parametrize("sub", [[], ["list"], ["card"], ["check"], ["simulate"], ["predict"], ["analyze"]])
def test_help_is_clear(sub, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*sub, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: fadesim") and len(out.splitlines()) > 3
    if not sub:  # the usage line names every command the parser has (six), not a stale subset
        from fadesim.apps.cli import build_parser

        commands = next(a for a in build_parser()._actions if a.dest == "command").choices
        assert len(commands) == 6 and "{" + ",".join(commands) + "}" in out.splitlines()[0]


def test_console_script_is_installed():
    exe = shutil.which("fadesim") or str(Path(sys.executable).with_name("fadesim"))
    assert Path(exe).exists(), "the fadesim console script is not installed (pip install -e .)"
    out = subprocess.run([exe, "list"], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "grpo" in out


def _base_only(tmp_path, settings=("mine",)):
    path = tmp_path / "curves.csv"
    path.write_text("setting,source,method,k,pass_at_k\n" + "".join(
        f"{s},me,base,{k},{v}\n" for s in settings for k, v in ((1, 0.3), (8, 0.62), (64, 0.85))))
    return path


def test_predict_forecasts_each_advantage_from_a_base_curve(tmp_path, capsys):
    curves = _base_only(tmp_path)
    out = tmp_path / "fig" / "p.png"
    small = ["--seeds", "4", "--prompts", "16", "--max-steps", "20", "--log-every", "10", "--task", "bandit",
             "--optimizer", "adam"]
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo,w_reinforce:lam=0.1", "--steps", "20",
                 "--out", str(out), *small]) == 0
    text = capsys.readouterr().out
    assert "length: 20 steps (given)" in text and "entropy (nats), start -> predicted length: grpo" in text
    table = pd.read_csv(out.with_suffix(".csv"))
    assert list(dict.fromkeys(table.label)) == ["base", "grpo", "w_reinforce:lam=0.1"] and set(table.k) == {1, 8, 64}
    base = table[table.label == "base"].set_index("k").pass_at_k
    assert abs(base[1] - 0.3) < 0.05 and abs(base[64] - 0.85) < 0.05  # calibrated to the given curve
    assert out.exists()
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo", "--grpo-pass1", "0.35",
                 "--out", str(out), *small]) == 0
    assert "GRPO pass@1 0.350 UNREACHABLE (never reached; the closest logged step)" in capsys.readouterr().out
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo", "--grpo-pass1", "0.2",
                 "--out", str(out), *small]) == 0  # below the base's 0.3: the rising run never comes down to it
    assert re.search(r"GRPO pass@1 0\.200 UNREACHABLE \(below the calibrated base's pass@1 0\.(2[89]|3[01])\d, where the "
                     r"simulated GRPO starts, and the run never came down to it", capsys.readouterr().out)
    # the default family matches the length on the held-out seeds' own GRPO run: where it is reached, its pass@1
    # there is the given one
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo", "--grpo-pass1", "0.32",
                 "--out", str(out), *small]) == 0
    text = capsys.readouterr().out
    assert "GRPO pass@1 0.320 reached" in text
    assert re.search(r"match residual: .* [+-]0\.0000 \(held-out seeds; the length is matched on the held-out seeds\)",
                     text), text


def test_predict_without_a_skill_drops_its_reach_and_a_reach_without_one_is_refused(tmp_path, capsys):
    """The default family's skill reach (CHOSEN) limits the skill: --skill-scale 0 implies no reach (not refused);
    asking for a reach as well is refused in one line."""
    curves = _base_only(tmp_path)
    small = ["--seeds", "4", "--prompts", "16", "--eval-prompts", "8", "--max-steps", "20", "--log-every", "10",
             "--steps", "20", "--out", str(tmp_path / "p.png"), "--skill-scale", "0"]
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo", *small]) == 0
    text = capsys.readouterr().out
    assert "sharpen c = 1, 1 prompt a step" in text and "reach" not in text
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo", *small, "--reach-samples", "8"]) == 2
    assert "it needs skill_scale > 0" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--advantages", "grpo"], "give --grpo-pass1"),
    (["--advantages", "grpo,nope", "--steps", "5"], "advantage entry 'nope': "),
    (["--advantages", "focal:gamma=-1", "--steps", "5"], "gamma = -1 is outside its domain"),
    (["--advantages", "w_reinforce:lam", "--steps", "5"], "parameters are name:key=value"),
    (["--advantages", "grpo", "--grpo-pass1", "1.5"], "grpo_pass1 must lie in (0, 1)"),
    (["--advantages", "grpo", "--steps", "5", "--tie", "0.1"], "--tie applies to --optimizer adam_tied only; got "
                                                                 "--optimizer adam"),
    (["--advantages", "grpo", "--steps", "5", "--optimizer", "adam_tied", "--tie", "-1"], "tie"),
    (["--advantages", "grpo", "--steps", "5", "--rollouts-per-step", "64"], "give --rollouts-per-step with --clock "
                                                                          "noise only"),
])
def test_predict_refuses_bad_input_with_one_line(tmp_path, capsys, argv, message):
    curves = _base_only(tmp_path)
    assert main(["predict", "--curves", str(curves), "--seeds", "4", "--prompts", "8", "--max-steps", "10",
                 "--task", "bandit", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fadesim predict: error: ") and message in err


def test_predict_under_the_noise_clock_reads_each_advantage_at_the_given_batch(tmp_path, capsys):
    """--clock noise --rollouts-per-step N: NSR read at the length x noise_clock at N, said in the output; the clock
    without a batch is refused in one line."""
    from fadesim.lab.literature import CHOSEN, ProtocolSettings, calibrated_task
    from fadesim.theory.step_size import noise_clock

    curves = _base_only(tmp_path)
    small = ["--seeds", "4", "--prompts", "16", "--eval-prompts", "8", "--max-steps", "20", "--log-every", "10",
             "--steps", "20", "--out", str(tmp_path / "p.png"), "--clock", "noise"]
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo,nsr", *small]) == 2
    assert "give it --rollouts-per-step" in capsys.readouterr().err
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo,nsr", *small,
                 "--rollouts-per-step", "64"]) == 0
    text = capsys.readouterr().out
    assert "its noise-scale clock at 64 rollouts a step, rho 1: grpo 20, nsr " in text
    task, _ = calibrated_task(ProtocolSettings(**{**CHOSEN, "n_prompts": 16, "eval_prompts": 8}),
                              {1: 0.3, 8: 0.62, 64: 0.85})
    read = float(text.split(", nsr ")[1].split(";")[0])
    assert read == pytest.approx(20 * noise_clock(task, "nsr", 8, 64), rel=1e-5)


def test_predict_takes_adam_tieds_tie_and_prints_it(tmp_path, capsys):
    curves = _base_only(tmp_path)
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo", "--steps", "4", "--seeds", "2",
                 "--prompts", "8", "--max-steps", "4", "--log-every", "2", "--task", "bandit",
                 "--optimizer", "adam_tied", "--tie", "0.1", "--out", str(tmp_path / "p.png")]) == 0
    assert "fadesim predict [bandit, adam_tied (tie 0.1), G = 8," in capsys.readouterr().out


def test_predict_refuses_sharpen_settings_it_cannot_use(tmp_path, capsys):
    """The defaults are the chosen sharpen family; its own settings are refused loudly for another task or where
    they do not fit (more held-out prompts than prompts)."""
    curves = _base_only(tmp_path)
    base = ["predict", "--curves", str(curves), "--advantages", "grpo", "--steps", "5", "--seeds", "4"]
    assert main([*base, "--task", "bandit", "--skill-scale", "0.5", "--eval-prompts", "4"]) == 2
    assert "--skill-scale, --eval-prompts apply to the sharpen task only; got --task bandit" in capsys.readouterr().err
    assert main([*base, "--prompts", "16"]) == 2
    assert "eval_prompts must be an integer in [0, n_prompts = 16)" in capsys.readouterr().err


def test_predict_needs_a_setting_when_the_file_has_several(tmp_path, capsys):
    curves = _base_only(tmp_path, settings=("a", "b"))
    assert main(["predict", "--curves", str(curves), "--advantages", "grpo", "--steps", "5"]) == 2
    assert "has 2 settings; choose one with --setting: 'a', 'b'" in capsys.readouterr().err
    assert main(["predict", "--curves", str(curves), "--setting", "c", "--advantages", "grpo", "--steps", "5"]) == 2
    assert "no setting 'c'" in capsys.readouterr().err


def test_predict_with_the_reach_fallback_says_when_it_drops_the_reach(tmp_path, capsys):
    """A pass@1 GRPO cannot reach under a one-draw reach: --reach-fallback matches it without the reach and says so;
    a reachable one keeps the reach and says nothing of it; --tail-entropy, --reach-draw, --misfire and
    --shortcut-scale reach the task (its description)."""
    curves = _base_only(tmp_path)
    small = ["--seeds", "4", "--prompts", "48", "--eval-prompts", "24", "--skill-scale", "2", "--sharpen-scale", "0.5",
             "--prompts-per-step", "2", "--max-steps", "200", "--log-every", "20", "--reach-samples", "1",
             "--reach-fallback", "--tail-entropy", "4", "--reach-draw", "uniform", "--misfire", "0.5",
             "--advantages", "grpo", "--out", str(tmp_path / "p.png")]
    assert main(["predict", "--curves", str(curves), "--grpo-pass1", "0.6", *small]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "GRPO pass@1 0.600 reached" in first and "without the skill's reach" in first
    assert "tail of e^4 wrong answers" in first
    assert main(["predict", "--curves", str(curves), "--grpo-pass1", "0.33", *small, "--shortcut-scale", "0.5"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "GRPO pass@1 0.330 reached" in first and "without the skill's reach" not in first
    assert "(its share drawn uniformly), misfiring m = 0.5 on the unreached, a learned shortcut f = 0.5" in first


def test_predict_with_the_misfire_fallback_drops_the_misfire_and_keeps_the_reach(tmp_path, capsys):
    """A pass@1 GRPO reaches under a one-draw reach but not with misfire 2 on the unreached: --misfire-fallback matches
    it without the misfire, the reach kept, and says so; a pass@1 reachable with the misfire says nothing of it."""
    curves = _base_only(tmp_path)
    small = ["--seeds", "4", "--prompts", "48", "--eval-prompts", "24", "--skill-scale", "2", "--sharpen-scale", "0.5",
             "--prompts-per-step", "2", "--max-steps", "200", "--log-every", "20", "--reach-samples", "1",
             "--misfire", "2", "--misfire-fallback", "--reach-fallback", "--advantages", "grpo", "--out",
             str(tmp_path / "p.png")]
    assert main(["predict", "--curves", str(curves), "--grpo-pass1", "0.4", *small]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "GRPO pass@1 0.400 reached" in first and "without the misfire, the reach kept" in first
    assert "without the skill's reach" not in first
    assert main(["predict", "--curves", str(curves), "--grpo-pass1", "0.33", *small]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "GRPO pass@1 0.330 reached" in first and "without the misfire, the reach kept" not in first


def test_predict_scores_a_settings_published_methods_and_ends_with_the_protocols_line(tmp_path, capsys):
    curves = tmp_path / "curves.csv"
    curves.write_text("setting,source,method,k,pass_at_k\n" + "".join(
        f"s,hand,{m},{k},{v}\n" for m, vals in [("base", (0.30, 0.80)), ("GRPO", (0.45, 0.78)), ("NSR", (0.40, 0.84))]
        for k, v in zip((1, 32), vals)))
    methods = tmp_path / "methods.csv"
    methods.write_text("method,advantage,params,steps_scale\nGRPO,grpo,{},1\nNSR,nsr,{},1\n")
    assert main(["predict", "--curves", str(curves), "--methods", str(methods), "--advantages", "fade", "--seeds",
                 "4", "--prompts", "16", "--max-steps", "20", "--task", "bandit", "--out",
                 str(tmp_path / "p.png")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "GRPO pass@1 0.450 " in lines[0]  # the published reference fixes the length
    assert lines[-1].startswith("literature: ") and "over 1 settings" in lines[-1]
    # over two task draws: each draw matched on the published reference on its own, the numbers their mean
    assert main(["predict", "--curves", str(curves), "--methods", str(methods), "--advantages", "fade", "--seeds",
                 "4", "--prompts", "16", "--max-steps", "20", "--task", "bandit", "--task-draws", "2", "--out",
                 str(tmp_path / "p2.png")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "(the mean over 2 task draws, each matched on its own: 0: " in lines[0] and "; 1: " in lines[0]
    assert lines[-1].startswith("literature: ") and lines[-2].startswith("resolved: ")
