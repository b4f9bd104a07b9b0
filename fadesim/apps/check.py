"""Property suite for an advantage function: one source of truth for ``fadesim check`` and our tests.

Each property is a hypothesis test over random reward batches (binary and continuous rewards,
group sizes, masks, hyper-parameter-free calls of an already-bound function). A failing property
reports hypothesis' shrunk, minimal counter-example.

Two kinds of result. *Properties* are the mathematics; a failure is a bug (exit status 1 in ``fadesim check``).
*Contract* items are how the function meets the call contract of DESIGN.md section 2 (input validation,
constant output, dtypes, refusing groups below its minimum); a finding is a warning that names its fix
(decorating the function with ``fadesim.advantage`` fixes all of them).

Properties (``PROPERTIES``):
  shape_and_namespace     output has the input's shape and array namespace (numpy, jax, torch)
  backend_agreement_f64   numpy = jax = jax.jit = torch to 1e-12 (relative to the output scale) in float64
  backend_agreement_f32   the same to 1e-6 in float32
  jax_transformations     runs under jax.jit and jax.vmap (no Python branching on values)
  permutation_equivariant permuting a group's rollouts permutes its advantages
  degenerate_groups       all-equal groups give finite output (exact zeros if mean-centred)
  extreme_rewards         finite output for rewards up to 1e6 in magnitude
  mask_handling           masked entries are 0 and do not change the valid ones
  masked_rewards_ignored  changing the rewards of masked rollouts changes no valid rollout's advantage
  float32_ties            equal rewards that float32 cannot represent exactly (0.35, 0.4, 1000.35, ...) give the
                          float64 advantages up to a few ulps of the rewards' scale: no amplified rounding residue
  reward_order            in a group a higher reward never gets a lower advantage, also when the group mean is
                          negative (or the function refuses negative rewards); advantages that read log-probs
                          reshape rewards by design and are exempt
  deterministic           the same input gives bit-identical output
  parameter_domains       (declared domains) each hyper-parameter is accepted at each boundary of its declared
                          domain (finite output) and refused just outside it (ValueError naming the parameter):
                          e.g. gamma >= 0 is called with 0 and with -5e-324, NaN and inf
  mean_centred            (declared) advantages sum to 0 in every group
  scale_invariant         (declared) unchanged under r -> a r + b, a > 0 (up to the eps regulariser)
Contract (``CONTRACT``):
  bad_input               NaN/inf rewards, a 0-d array, a mismatched mask raise ValueError
  constant_output         no gradient flows from the advantages back to the rewards (torch autograd)
  dtype_preserved         float32 rewards give float32 advantages, float64 give float64 (numpy and torch)
  singleton_groups        groups of one are refused with ValueError below the declared minimum group size, and
                          handled (finite, not silently all zero) where the minimum is 1
  device_preserved        torch rewards on an accelerator (CUDA, else MPS) give advantages on that device, equal to
                          the CPU's (1e-12 in float64, 1e-6 in float32, relative to the output scale); skipped,
                          and reported as not checked, where torch sees no accelerator
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import array_api_compat
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fadesim.advantages.registry import info

SIGNALS_KEYS = ("entropy", "initial_entropy")


@dataclass(frozen=True)
class AdvantageSpec:
    """What the checker needs to know about an advantage (its declared properties)."""

    name: str
    fn: Callable[..., Any]
    mean_centred: bool = False
    scale_invariant: bool = False
    needs_logprobs: bool = False
    needs_signals: tuple[str, ...] = ()
    min_group_size: int = 2  # smallest G the suite draws
    max_group_size: int = 16
    declared_min_group_size: int | None = None  # the advantage's own minimum (None: min_group_size)
    domains: Any = field(default_factory=dict)  # hyper-parameter -> declared Interval / Choice (probed at its edges)

    @property
    def refuses_singletons(self) -> bool:
        declared = self.min_group_size if self.declared_min_group_size is None else self.declared_min_group_size
        return declared > 1


def spec_from_registry(name: str, *, max_group_size: int = 16, **params: Any) -> AdvantageSpec:
    """Spec of a registered advantage with ``params`` bound (pass@K-style K raises the minimum G)."""
    entry = info(name)
    fn = entry.bind(**params)
    min_g = max(entry.min_group_size, 2)
    K = params.get("K", entry.params.get("K"))
    if K is not None:
        min_g = max(min_g, int(K) + 1)
    return AdvantageSpec(
        name=name,
        fn=fn,
        mean_centred=entry.mean_centred,
        scale_invariant=entry.scale_invariant,
        needs_logprobs=entry.needs_logprobs,
        needs_signals=entry.needs_signals,
        min_group_size=min_g,
        max_group_size=max(max_group_size, min_g),
        declared_min_group_size=entry.min_group_size,
        domains=dict(entry.domains),
    )


@dataclass(frozen=True)
class PropertyResult:
    prop: str
    passed: bool
    detail: str = ""
    counterexample: str | None = None
    kind: str = "property"  # "property" (the mathematics: a failure is a bug) or "contract" (a warning)
    fix: str = ""  # for contract findings: how to meet the contract
    skipped: bool = False  # not run (not declared, not applicable, or no accelerator); ``passed`` is then True


@dataclass(frozen=True)
class Case:
    """One drawn input: rewards (B, G) float64, optional mask, log-probs and signals."""

    rewards: np.ndarray
    mask: np.ndarray | None = None
    logprobs: np.ndarray | None = None
    signals: dict[str, float] | None = field(default=None)

    def __repr__(self) -> str:  # what a counter-example prints
        parts = [f"rewards={np.array2string(self.rewards, precision=4, separator=', ')}"]
        if self.mask is not None:
            parts.append(f"mask={np.array2string(self.mask, separator=', ')}")
        if self.logprobs is not None:
            parts.append(f"logprobs={np.array2string(self.logprobs, precision=4, separator=', ')}")
        if self.signals is not None:
            parts.append(f"signals={self.signals}")
        return "Case(" + ", ".join(parts) + ")"


# ----------------------------------------------------------------------------- strategies
#: Floats are drawn float32-representable and without subnormals (in float32 too): XLA on CPU flushes
#: subnormals to zero, so jax would legitimately see ties that numpy does not (no real reward or log-prob
#: is subnormal).
#: Group sizes drawn by the suite: small, odd, even, powers of two and 64. A fixed set (rather than
#: every integer) lets jax reuse compiled code across examples, which keeps the suite fast.
GROUP_SIZES = (2, 3, 4, 5, 7, 8, 12, 16, 31, 64)
#: The properties that run jax (each new shape and dtype compiles, eager jax one small program per operation)
#: draw from three buckets: few distinct shapes, so compiled code is reused across examples and advantages
#: (2: the smallest group, even; 5: odd and prime; 64: the largest drawn and a power of two; plus the spec's
#: bounds). Each bucket costs every advantage a set of compiled programs per dtype: a fourth (16) made the cold
#: cross-backend tests a fifth slower (42 s vs 35 s in one process) and added no case the other three lack.
JAX_GROUP_SIZES = (2, 5, 64)
BATCH_SIZES, JAX_BATCH_SIZES = (1, 3), (3,)


def group_sizes(spec: AdvantageSpec, buckets: tuple[int, ...] = GROUP_SIZES) -> list[int]:
    lo, hi = spec.min_group_size, spec.max_group_size
    sizes = sorted({lo, hi, *(g for g in buckets if lo <= g <= hi)})
    return sizes


def _bits(draw: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A boolean array of ``shape`` from one integer draw (one bit per entry; shrinks to all False). One draw
    instead of one per entry: drawing is most of a numpy-only property's cost."""
    n = int(np.prod(shape))
    word = draw(st.integers(0, 2**n - 1))
    return np.array([(word >> i) & 1 for i in range(n)], dtype=bool).reshape(shape)


def _floats(draw: Any, shape: tuple[int, ...], low: float, high: float) -> np.ndarray:
    """Independent float32-representable, non-subnormal floats in [low, high] (no fill: every entry drawn)."""
    elements = st.floats(low, high, allow_nan=False, allow_subnormal=False, width=32)
    return draw(hnp.arrays(np.float64, shape, elements=elements, fill=st.nothing()))


@st.composite
def cases(draw: Any, spec: AdvantageSpec, *, binary: bool | None = None, masked: bool | None = None,
          max_abs: float = 10.0, jax_shapes: bool = False) -> Case:
    B = draw(st.sampled_from(JAX_BATCH_SIZES if jax_shapes else BATCH_SIZES))
    G = draw(st.sampled_from(group_sizes(spec, JAX_GROUP_SIZES if jax_shapes else GROUP_SIZES)))
    is_binary = draw(st.booleans()) if binary is None else binary
    rewards = _bits(draw, (B, G)).astype(np.float64) if is_binary else _floats(draw, (B, G), -max_abs, max_abs)
    use_mask = draw(st.booleans()) if masked is None else masked
    mask = _bits(draw, (B, G)) if use_mask else None
    logprobs = _floats(draw, (B, G), -20.0, 0.0) if spec.needs_logprobs else None
    signals = None
    if spec.needs_signals:
        signals = {"entropy": draw(st.floats(0.0, 3.0)), "initial_entropy": draw(st.floats(0.1, 3.0))}
        for key in spec.needs_signals:
            signals.setdefault(key, 1.0)
    return Case(rewards=rewards, mask=mask, logprobs=logprobs, signals=signals)


# ----------------------------------------------------------------------------- calling
def _kwargs(spec: AdvantageSpec, case: Case, convert: Callable[[Any], Any]) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if case.mask is not None:
        kw["mask"] = convert(case.mask)
    if spec.needs_logprobs:
        kw["logprobs"] = convert(case.logprobs)
    if spec.needs_signals:
        kw["signals"] = dict(case.signals or {})
    return kw


@functools.lru_cache(maxsize=256)
def _jitted(fn: Callable[..., Any]) -> Callable[..., Any]:
    import jax

    return jax.jit(lambda r, kw: fn(r, **kw))


def call(spec: AdvantageSpec, case: Case, backend: str, dtype: str = "float64", device: str | None = None) -> Any:
    """Run the advantage on ``case`` with one backend; returns the raw output of that backend. ``device``: torch's
    device for every input array (default: the CPU)."""
    r = case.rewards.astype(dtype)
    def conv_lp(x: Any) -> Any:
        return x.astype(dtype) if x.dtype.kind == "f" else x

    if backend == "numpy":
        return spec.fn(r, **_kwargs(spec, case, conv_lp))
    if backend == "torch":
        import torch

        return spec.fn(torch.asarray(r, device=device),
                       **_kwargs(spec, case, lambda x: torch.asarray(conv_lp(x), device=device)))
    if backend in ("jax", "jax.jit"):
        import jax
        import jax.numpy as jnp

        with jax.enable_x64(dtype == "float64"):
            kw = _kwargs(spec, case, lambda x: jnp.asarray(conv_lp(x)))
            if backend == "jax":
                out = spec.fn(jnp.asarray(r), **kw)
            else:
                out = _jitted(spec.fn)(jnp.asarray(r), kw)
            return np.asarray(out)
    raise ValueError(f"unknown backend {backend!r}")


def _np(x: Any) -> np.ndarray:
    if array_api_compat.is_torch_array(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _close(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol * scale))


# ----------------------------------------------------------------------------- properties
def _prop_shape_and_namespace(spec: AdvantageSpec, case: Case) -> None:
    checks = {"numpy": array_api_compat.is_numpy_array, "torch": array_api_compat.is_torch_array}
    for backend, is_ns in checks.items():
        out = call(spec, case, backend)
        assert is_ns(out), f"{backend} input gave a {type(out).__module__}.{type(out).__name__} output"
        assert tuple(out.shape) == case.rewards.shape, f"{backend}: output shape {tuple(out.shape)} != {case.rewards.shape}"
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        out = spec.fn(jnp.asarray(case.rewards), **_kwargs(spec, case, jnp.asarray))
        assert array_api_compat.is_jax_array(out), f"jax input gave a {type(out).__module__}.{type(out).__name__} output"
        assert tuple(out.shape) == case.rewards.shape


def _agreement(tol: float, dtype: str) -> Callable[[AdvantageSpec, Case], None]:
    def prop(spec: AdvantageSpec, case: Case) -> None:
        ref = _np(call(spec, case, "numpy", dtype))
        assert np.all(np.isfinite(ref)), "numpy output is not finite"
        for backend in ("jax", "jax.jit", "torch"):
            out = _np(call(spec, case, backend, dtype))
            assert _close(out, ref, tol), (
                f"{backend} differs from numpy ({dtype}): max |diff| = {np.max(np.abs(out - ref)):.3e}"
            )

    return prop


@functools.lru_cache(maxsize=256)
def _vmapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """jit(vmap(fn over the leading axis)), each row computed as a batch of one group."""
    import jax

    def one_group(r: Any, arrays: dict[str, Any], extra: dict[str, Any]) -> Any:
        return fn(r[None, :], **{k: v[None, :] for k, v in arrays.items()}, **extra)[0]

    return jax.jit(jax.vmap(one_group, in_axes=(0, 0, None)))


def _prop_jax_transformations(spec: AdvantageSpec, case: Case) -> None:
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        kw = _kwargs(spec, case, jnp.asarray)
        r = jnp.asarray(case.rewards)
        direct = np.asarray(spec.fn(r, **kw))
        jitted = np.asarray(_jitted(spec.fn)(r, kw))
        assert _close(jitted, direct, 1e-12), "jax.jit output differs from eager jax"
        arrays = {k: v for k, v in kw.items() if k != "signals"}
        extra = {k: v for k, v in kw.items() if k == "signals"}
        mapped = np.asarray(_vmapped(spec.fn)(r, arrays, extra))
        assert _close(mapped, direct, 1e-12), "jax.vmap over groups differs from computing the batch at once"


def _prop_permutation(spec: AdvantageSpec, case: Case, perm_seed: int) -> None:
    G = case.rewards.shape[-1]
    perm = np.random.default_rng(perm_seed).permutation(G)
    permuted = Case(
        rewards=case.rewards[:, perm],
        mask=None if case.mask is None else case.mask[:, perm],
        logprobs=None if case.logprobs is None else case.logprobs[:, perm],
        signals=case.signals,
    )
    a = _np(call(spec, case, "numpy"))
    b = _np(call(spec, permuted, "numpy"))
    assert _close(b, a[:, perm], 1e-10), f"A(permuted r) != permuted A(r) for permutation {perm.tolist()}"


def _prop_degenerate(spec: AdvantageSpec, case: Case, value: float) -> None:
    # degenerate = everything the advantage reads is equal within the group (rewards and log-probs)
    flat = Case(rewards=np.full_like(case.rewards, value), mask=case.mask,
                logprobs=None if case.logprobs is None else np.full_like(case.logprobs, -1.0),
                signals=case.signals)
    out = _np(call(spec, flat, "numpy"))
    assert np.all(np.isfinite(out)), f"non-finite output on all-equal groups (reward {value})"
    if spec.mean_centred:
        assert np.all(out == 0.0), f"mean-centred advantage is not exactly 0 on all-equal groups: {out}"


def _prop_extreme(spec: AdvantageSpec, case: Case) -> None:
    for dtype in ("float64", "float32"):
        out = _np(call(spec, case, "numpy", dtype))
        assert np.all(np.isfinite(out)), f"non-finite output ({dtype}) for rewards up to {np.abs(case.rewards).max():.3g}"


def _prop_mask(spec: AdvantageSpec, case: Case, garbage_seed: int) -> None:
    mask = case.mask if case.mask is not None else np.ones_like(case.rewards, dtype=bool)
    junk = np.random.default_rng(garbage_seed).normal(scale=1e3, size=case.rewards.shape)
    dirty = Case(rewards=np.where(mask, case.rewards, junk), mask=mask,
                 logprobs=None if case.logprobs is None else np.where(mask, case.logprobs, -junk ** 2),
                 signals=case.signals)
    out = _np(call(spec, dirty, "numpy"))
    assert np.all(out[~mask] == 0.0), "masked entries are not 0"
    for i in range(case.rewards.shape[0]):
        valid = mask[i]
        if valid.sum() < spec.min_group_size:
            continue
        alone = Case(rewards=case.rewards[i:i + 1, valid],
                     logprobs=None if case.logprobs is None else case.logprobs[i:i + 1, valid],
                     signals=case.signals)
        ref = _np(call(spec, alone, "numpy"))[0]
        assert _close(out[i, valid], ref, 1e-10), (
            f"group {i}: valid entries under the mask differ from the same group computed without padding"
        )


def _prop_constant(spec: AdvantageSpec, case: Case) -> None:
    import torch

    r = torch.tensor(case.rewards, requires_grad=True)
    out = spec.fn(r, **_kwargs(spec, case, torch.asarray))
    assert not out.requires_grad, "advantages carry autograd history: gradients would flow into the rewards"


def _prop_deterministic(spec: AdvantageSpec, case: Case) -> None:
    a, b = _np(call(spec, case, "numpy")), _np(call(spec, case, "numpy"))
    assert np.array_equal(a, b, equal_nan=True), "two identical calls gave different outputs"


def _expect_value_error(fn: Callable[[], Any], what: str) -> None:
    try:
        fn()
    except ValueError:
        return
    except Exception as err:  # noqa: BLE001 - reported as the failure
        raise AssertionError(f"{what}: raised {type(err).__name__} ({err}) instead of ValueError") from None
    raise AssertionError(f"{what}: no error raised")


def _prop_bad_input(spec: AdvantageSpec, case: Case) -> None:
    kw = _kwargs(spec, Case(rewards=case.rewards, logprobs=case.logprobs, signals=case.signals), lambda x: x)
    for bad in (np.nan, np.inf, -np.inf):
        r = case.rewards.copy()
        r[0, 0] = bad
        _expect_value_error(lambda: spec.fn(r, **kw), f"reward {bad}")
    _expect_value_error(lambda: spec.fn(np.float64(1.0), **{k: v for k, v in kw.items() if k == "signals"}),
                        "0-d rewards")
    bad_mask = np.ones(case.rewards.shape[:-1] + (case.rewards.shape[-1] + 1,), dtype=bool)
    _expect_value_error(lambda: spec.fn(case.rewards, **{**kw, "mask": bad_mask}), "mask of the wrong shape")


def _prop_mean_centred(spec: AdvantageSpec, case: Case) -> None:
    out = _np(call(spec, case, "numpy"))
    sums = out.sum(axis=-1)
    scale = 1.0 + np.abs(out).sum(axis=-1)
    assert np.all(np.abs(sums) <= 1e-9 * scale), f"group sums are not 0: {sums}"


def _prop_scale_invariant(spec: AdvantageSpec, case: Case, a: float, b: float) -> None:
    base = _np(call(spec, case, "numpy"))
    shifted = Case(rewards=a * case.rewards + b, mask=case.mask, logprobs=case.logprobs, signals=case.signals)
    out = _np(call(spec, shifted, "numpy"))
    assert _close(out, base, 1e-4), f"A({a:.3g} r + {b:.3g}) != A(r): max |diff| = {np.max(np.abs(out - base)):.3e}"


def _prop_dtype(spec: AdvantageSpec, case: Case) -> None:
    for dtype in ("float32", "float64"):
        for backend in ("numpy", "torch"):
            out = call(spec, case, backend, dtype)
            got = str(out.dtype).replace("torch.", "")
            assert got == dtype, f"{backend} {dtype} rewards gave {got} advantages"


def accelerator() -> str | None:
    """The torch accelerator the device check runs on: "cuda", else "mps", else None (CPU only)."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else None


def _prop_device(spec: AdvantageSpec, case: Case) -> None:
    device = accelerator()
    for dtype, tol in (("float64", 1e-12), ("float32", 1e-6))[(device == "mps"):]:  # MPS has no float64
        ref = _np(call(spec, case, "torch", dtype))
        out = call(spec, case, "torch", dtype, device=device)
        assert array_api_compat.is_torch_array(out), f"{device} input gave a {type(out).__module__} output"
        assert out.device.type == device, f"{device} {dtype} rewards gave advantages on {out.device}"
        got = _np(out)
        assert _close(got, ref, tol), (f"{device} differs from the CPU ({dtype}): max |diff| = "
                                       f"{np.max(np.abs(got - ref)):.3e}")


def _prop_singletons(spec: AdvantageSpec, case: Case) -> None:
    # the drawn rewards' first rollouts as groups of one, plus a correct, a wrong and a continuous one
    r = np.concatenate([case.rewards[:, :1], [[0.0], [1.0], [0.3]]])
    alone = Case(rewards=r, logprobs=np.full_like(r, -1.0) if spec.needs_logprobs else None, signals=case.signals)
    minimum = spec.min_group_size if spec.declared_min_group_size is None else spec.declared_min_group_size
    try:
        out = _np(call(spec, alone, "numpy"))
    except ValueError:
        assert spec.refuses_singletons, "groups of one raised ValueError although the declared minimum group size is 1"
        return
    assert not spec.refuses_singletons, (
        f"groups of one (G = 1, below the declared minimum group size {minimum}) were not refused and gave "
        f"{np.array2string(out.ravel(), precision=3)}" + (": silently all zero" if np.all(out == 0) else ""))
    assert np.all(np.isfinite(out)), f"groups of one gave non-finite advantages {out.ravel()}"
    assert not np.all(out == 0), f"groups of one gave all-zero advantages without an error (rewards {r.ravel()})"


#: equal rewards that float32 cannot represent exactly, at several magnitudes (and two that it can)
FLOAT32_TIE_VALUES = (0.35, 0.4, 0.7, -0.35, 3.3, 1000.35, -0.4e4 - 0.1, 123456.7, 0.5, 1.0)


def _prop_float32_ties(spec: AdvantageSpec, case: Case, value: float) -> None:
    flat = Case(rewards=np.full_like(case.rewards, value), mask=case.mask,
                logprobs=None if case.logprobs is None else np.full_like(case.logprobs, -1.0), signals=case.signals)
    ref = _np(call(spec, flat, "numpy", "float64"))
    tol = 8 * float(np.finfo(np.float32).eps) * max(1.0, abs(value), float(np.max(np.abs(ref), initial=0.0)))
    for backend in ("numpy", "torch"):
        out = _np(call(spec, flat, backend, "float32")).astype(np.float64)
        err = float(np.max(np.abs(out - ref), initial=0.0))
        assert err <= tol, (
            f"{backend} float32: equal rewards {value:g} give advantages {float(np.max(np.abs(out))):.3g} where float64 "
            f"gives {float(np.max(np.abs(ref))):.3g} (|diff| {err:.3g} > {tol:.2g}, a few ulps): rounding residue of "
            "the group statistics is amplified")


def _prop_reward_order(spec: AdvantageSpec, case: Case, offset: float) -> None:
    shifted = Case(rewards=case.rewards - offset, mask=case.mask, logprobs=case.logprobs, signals=case.signals)
    try:
        out = _np(call(spec, shifted, "numpy"))
    except ValueError:
        return  # refusing (e.g. negative) rewards with a clear error is allowed
    r = shifted.rewards
    mask = np.ones_like(r, dtype=bool) if case.mask is None else case.mask
    scale = 1e-9 * max(1.0, float(np.max(np.abs(out), initial=0.0)))
    for i in range(r.shape[0]):
        valid = np.flatnonzero(mask[i])
        higher = r[i, valid][:, None] > r[i, valid][None, :]
        lower_adv = out[i, valid][:, None] < out[i, valid][None, :] - scale
        bad = np.argwhere(higher & lower_adv)
        assert len(bad) == 0, (
            f"group {i} (mean reward {r[i, valid].mean():.3g}): reward {r[i, valid][bad[0][0]]:.3g} gets advantage "
            f"{out[i, valid][bad[0][0]]:.3g} below reward {r[i, valid][bad[0][1]]:.3g}'s {out[i, valid][bad[0][1]]:.3g}")


def _prop_masked_rewards_ignored(spec: AdvantageSpec, case: Case, seed_a: int, seed_b: int) -> None:
    mask = case.mask
    outs = []
    for seed in (seed_a, seed_b):
        junk = np.random.default_rng(seed).normal(scale=10.0, size=case.rewards.shape)
        dirty = Case(rewards=np.where(mask, case.rewards, junk), mask=mask,
                     logprobs=None if case.logprobs is None else np.where(mask, case.logprobs, -junk ** 2),
                     signals=case.signals)
        outs.append(_np(call(spec, dirty, "numpy")))
    diff = np.abs(outs[0] - outs[1])[mask]
    assert np.all(diff <= 1e-12 * max(1.0, float(np.max(np.abs(outs[0]), initial=0.0)))), (
        f"changing the rewards of masked rollouts changed valid advantages by up to {float(np.max(diff)):.3g}")


#: contract items: name -> the fix a warning names
def domain_probes(spec: AdvantageSpec) -> list[tuple[str, Any, bool]]:
    """(parameter, value, inside?) for every declared domain: values at each boundary and just outside it."""
    out: list[tuple[str, Any, bool]] = []
    for name, dom in sorted(spec.domains.items()):
        inside, outside = dom.probes()
        out += [(name, v, True) for v in inside] + [(name, v, False) for v in outside]
    return out


def _prop_parameter_domains(spec: AdvantageSpec, case: Case) -> None:
    kw = _kwargs(spec, case, lambda x: x)
    for name, value, inside in domain_probes(spec):  # every probe on every case: a handful of numpy calls
        if name == "K" and inside and case.rewards.shape[-1] <= int(value):  # K fixes the smallest group it needs
            continue
        if inside:
            out = np.asarray(spec.fn(case.rewards, **kw, **{name: value}))
            assert np.all(np.isfinite(out)), f"{name} = {value!r} (inside the declared domain) gave non-finite output"
            continue
        try:
            spec.fn(case.rewards, **kw, **{name: value})
        except ValueError as err:
            assert name in str(err), f"{name} = {value!r} was refused, but the error does not name '{name}': {err}"
            continue
        raise AssertionError(f"{name} = {value!r} lies outside the declared domain {spec.domains[name]} and was "
                             "accepted")


CONTRACT = {
    "bad_input": "validate the input: raise ValueError for NaN/inf rewards, 0-d rewards and a mask of another "
                 "shape (decorate the function with @fadesim.advantage, which runs fadesim's own checks)",
    "constant_output": "return constants: torch .detach(), jax.lax.stop_gradient (or decorate with "
                       "@fadesim.advantage)",
    "dtype_preserved": "compute in the rewards' floating dtype, or cast the result back to it (or decorate with "
                       "@fadesim.advantage)",
    "singleton_groups": "raise ValueError for groups smaller than the smallest group the advantage is defined on "
                        "(@fadesim.advantage(min_group_size=2) does), or declare a minimum of 1 (--min-G 1, "
                        "min_group_size=1) and give groups of one a real advantage",
    "device_preserved": "create every array on the input's device (xp.asarray(v, device=array_api_compat.device(x)), "
                        "xp.zeros(..., device=...)) and do not compute through numpy (or decorate with "
                        "@fadesim.advantage, which copies a result back to the rewards' device)",
}


def _property_tests(spec: AdvantageSpec) -> dict[str, tuple[Callable[..., None], dict[str, Any]]]:
    """name -> (test function, hypothesis strategies for its arguments). Properties that draw the same kind of case
    share one strategy object, so a joint screen (``run_checks``) draws that case once for all of them."""
    any_case = cases(spec)
    jax_case = cases(spec, jax_shapes=True)
    masked_case = cases(spec, masked=True)
    unit_case = cases(spec, max_abs=1.0)  # rewards in [-1, 1]: float32 comparisons at 1e-6
    seeds = st.integers(0, 2**31 - 1)
    tests = {
        "shape_and_namespace": (_prop_shape_and_namespace, {"case": jax_case}),
        "backend_agreement_f64": (_agreement(1e-12, "float64"), {"case": jax_case}),
        "backend_agreement_f32": (_agreement(1e-6, "float32"), {"case": cases(spec, max_abs=1.0, jax_shapes=True)}),
        "jax_transformations": (_prop_jax_transformations, {"case": jax_case}),
        "permutation_equivariant": (_prop_permutation, {"case": any_case, "perm_seed": seeds}),
        "degenerate_groups": (_prop_degenerate, {"case": any_case,
                                                 "value": st.sampled_from([0.0, 1.0, -1.0, 0.1, 0.7, 1e6])}),
        "extreme_rewards": (_prop_extreme, {"case": cases(spec, max_abs=1e6)}),
        "mask_handling": (_prop_mask, {"case": masked_case, "garbage_seed": seeds}),
        "masked_rewards_ignored": (_prop_masked_rewards_ignored, {"case": masked_case,
                                                                  "seed_a": seeds, "seed_b": seeds}),
        "float32_ties": (_prop_float32_ties, {"case": any_case, "value": st.sampled_from(FLOAT32_TIE_VALUES)}),
        "deterministic": (_prop_deterministic, {"case": any_case}),
        # reads the rewards only (it drops the mask), so any case serves: its rewards are drawn before its mask
        "bad_input": (_prop_bad_input, {"case": any_case}),
        "constant_output": (_prop_constant, {"case": any_case}),
        "dtype_preserved": (_prop_dtype, {"case": unit_case}),
        "singleton_groups": (_prop_singletons, {"case": any_case}),
    }
    if accelerator() is not None:  # else reported as not checked (_skipped)
        tests["device_preserved"] = (_prop_device, {"case": unit_case})
    if not spec.needs_logprobs:
        tests["reward_order"] = (_prop_reward_order, {"case": any_case, "offset": st.floats(0.0, 20.0)})
    if spec.mean_centred:
        tests["mean_centred"] = (_prop_mean_centred, {"case": any_case})
    if spec.domains:
        tests["parameter_domains"] = (_prop_parameter_domains, {"case": any_case})
    if spec.scale_invariant:
        tests["scale_invariant"] = (_prop_scale_invariant, {
            "case": cases(spec, binary=True),
            "a": st.floats(0.5, 5.0), "b": st.floats(-5.0, 5.0)})
    return tests


PROPERTIES = (
    "shape_and_namespace", "backend_agreement_f64", "backend_agreement_f32", "jax_transformations",
    "permutation_equivariant", "degenerate_groups", "extreme_rewards", "mask_handling", "masked_rewards_ignored",
    "float32_ties", "reward_order", "deterministic", "mean_centred", "scale_invariant", "parameter_domains",
    *CONTRACT,
)


#: no explain phase: after shrinking it varies each part of the failing example in turn to annotate which parts
#: matter, which takes seconds (minutes for a joint example's many draws); the report prints the shrunk example
_SETTINGS = dict(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck),
                 print_blob=False, phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink))


def _kind(prop: str) -> str:
    return "contract" if prop in CONTRACT else "property"


def _passed(prop: str, max_examples: int) -> PropertyResult:
    return PropertyResult(prop, True, f"{max_examples} examples", kind=_kind(prop))


def _skipped(prop: str) -> PropertyResult:
    if prop not in PROPERTIES:
        raise KeyError(f"unknown property '{prop}'; known: {', '.join(PROPERTIES)}")
    if prop in ("mean_centred", "scale_invariant"):
        why = "not declared; skipped"
    elif prop == "parameter_domains":
        why = "no parameter domains declared; skipped"
    elif prop == "device_preserved":
        why = "not checked: torch sees no accelerator (CUDA or MPS) here"
    else:
        why = "not applicable (the advantage reads log-probs)"
    return PropertyResult(prop, True, why, kind=_kind(prop), skipped=True)


def _failure(prop: str, err: BaseException, counterexample: str | None) -> PropertyResult:
    detail = f"{type(err).__name__}: {err}".strip()
    return PropertyResult(prop, False, detail.splitlines()[0] if detail else type(err).__name__, counterexample,
                          kind=_kind(prop), fix=CONTRACT.get(prop, ""))


def run_property(spec: AdvantageSpec, prop: str, *, max_examples: int = 200) -> PropertyResult:
    """Run one property with hypothesis (derandomized: every run draws the same examples); on failure
    return the shrunk counter-example."""
    tests = _property_tests(spec)
    if prop not in tests:
        return _skipped(prop)
    fn, strategies = tests[prop]
    test = settings(max_examples=max_examples, **_SETTINGS)(given(**strategies)(lambda **kw: fn(spec, **kw)))
    try:
        test()
    except Exception as err:  # noqa: BLE001 - any failure of the user's function is a finding
        notes = [n for n in getattr(err, "__notes__", []) if "Falsifying" in n or "Case(" in n or "=" in n]
        return _failure(prop, err, "\n".join(notes) or None)
    return _passed(prop, max_examples)


class _Joint:
    """Several properties as one hypothesis test. Each example draws every distinct strategy once: properties that
    take the same kind of case (``_property_tests`` shares the strategy object) see the same case, and every other
    argument is drawn for its own property. ``screen`` runs every property on every one of ``max_examples``
    examples and records the first failure of each; ``shrink(prop)`` runs the same test again with only ``prop``
    raising. Derandomized generation does not depend on what a passing test body does, so the rerun draws the same
    examples up to ``prop``'s first failure, and hypothesis then shrinks that failure for ``prop`` alone.

    Per property the search is as large as a separate run's (``max_examples`` examples from the property's own
    strategies; the examples themselves differ); drawing and hypothesis' bookkeeping, most of a numpy-only property's
    cost, are paid once per example instead of once per property."""

    def __init__(self, spec: AdvantageSpec, props: list[str], tests: dict[str, Any], max_examples: int) -> None:
        self.spec, self.props, self.tests, self.max_examples = spec, props, tests, max_examples
        slots: dict[Any, str] = {}
        self.strategies: dict[str, Any] = {}
        self.plan: dict[str, dict[str, str]] = {}
        for prop in props:
            self.plan[prop] = {}
            for arg, strategy in tests[prop][1].items():
                key = ("case", id(strategy)) if arg == "case" else (prop, arg)
                if key not in slots:
                    slots[key] = f"s{len(slots)}"
                    self.strategies[slots[key]] = strategy
                self.plan[prop][arg] = slots[key]

    def _run(self, active: list[str], raising: str | None) -> dict[str, BaseException]:
        failures: dict[str, BaseException] = {}
        spec, tests, plan = self.spec, self.tests, self.plan

        def joint(**drawn: Any) -> None:
            for prop in active:
                kw = {arg: drawn[slot] for arg, slot in plan[prop].items()}
                if prop == raising:
                    self.last = kw  # the final call hypothesis makes replays the shrunk example
                    tests[prop][0](spec, **kw)
                elif prop not in failures:
                    try:
                        tests[prop][0](spec, **kw)
                    except Exception as err:  # noqa: BLE001 - recorded; shrunk by its own rerun
                        failures[prop] = err

        settings(max_examples=self.max_examples, **_SETTINGS)(given(**self.strategies)(joint))()
        return failures

    def screen(self) -> dict[str, BaseException]:
        return self._run(self.props, None)

    def shrink(self, prop: str, first: BaseException) -> PropertyResult:
        self.last: dict[str, Any] = {}
        try:
            self._run([prop], prop)
        except Exception as err:  # noqa: BLE001 - the shrunk failure
            args = ",\n".join(f"    {arg}={value!r}" for arg, value in self.last.items())
            return _failure(prop, err, f"Falsifying example: {prop}(\n{args},\n)")
        # the rerun passed: the function gave another answer for the same input (it is not deterministic)
        return _failure(prop, first, "(not reproduced when the property was re-run alone: the function does not "
                                     "give the same output for the same input)")


def run_checks(spec: AdvantageSpec, *, properties: Iterable[str] | None = None,
               max_examples: int = 200) -> list[PropertyResult]:
    """Run the property suite (all properties by default); one result per property, each over ``max_examples``
    examples. The properties are screened together (``_Joint``); a failing one is re-run alone to shrink its
    counter-example, so every failure reports what ``run_property`` would: the shrunk minimal example."""
    props = list(properties) if properties is not None else [p for p in PROPERTIES]
    tests = _property_tests(spec)
    runnable = [p for p in dict.fromkeys(props) if p in tests]
    if len(runnable) <= 1:
        return [run_property(spec, p, max_examples=max_examples) for p in props]
    joint = _Joint(spec, runnable, tests, max_examples)
    failures = joint.screen()
    results = {prop: joint.shrink(prop, failures[prop]) if prop in failures else _passed(prop, max_examples)
               for prop in runnable}
    return [results[p] if p in results else _skipped(p) for p in props]
