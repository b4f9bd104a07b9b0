"""``fadesim.advantage``: turn a plain advantage function into one that meets the call contract (DESIGN.md 2).

The mathematics stays the user's; the decorator adds what every advantage owes its callers and what
``fadesim check`` reports under *contract*:

- input validation: rewards of shape (..., G) with G at least ``min_group_size`` (groups of one are refused,
  never silently zero), finite valid rewards, a boolean mask of the rewards' shape, log-probs shaped like the
  rewards (``prepare_group_batch``, the same checks the registry's advantages run);
- masks: masked rewards (and log-probs) are zeroed before the function sees them, and masked outputs are 0;
- constant output: torch results are detached and jax results wrapped in ``stop_gradient``, so no gradient
  flows from the advantages back into the rewards;
- dtype: the output has the rewards' floating dtype (float32 in, float32 out);
- device: a torch output is put on the rewards' device (a function that computes through numpy returns a CPU
  tensor for CUDA rewards; the result is copied back, one copy per call);
- namespaces: lists and scalars become numpy arrays; numpy, jax (jit/vmap) and torch arrays pass through.

The wrapped function may take any subset of ``mask``, ``signals`` and ``logprobs``; a mask given to a function
that takes none is an error (its mathematics cannot honour it). Declared properties (``mean_centred``,
``scale_invariant``, ...) are recorded in ``__fadesim__`` for ``fadesim check`` and ``fadesim.register``.

    @fadesim.advantage(mean_centred=True)
    def centred(rewards, *, mask=None):
        xp = array_api_compat.array_namespace(rewards)
        m = xp.ones_like(rewards) if mask is None else xp.astype(mask, rewards.dtype)
        mean = xp.sum(rewards * m, axis=-1, keepdims=True) / xp.sum(m, axis=-1, keepdims=True)
        return (rewards - mean) * m
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Mapping

import array_api_compat

from fadesim._validate import _constant, prepare_companion, prepare_group_batch
from fadesim.advantages.domains import Domain, check_domains, check_params

_DECLARABLE = ("mean_centred", "scale_invariant", "needs_logprobs", "needs_signals")


def advantage(fn: Callable[..., Any] | None = None, *, min_group_size: int = 2,
              domains: Mapping[str, Domain] | None = None, **declared: bool) -> Any:
    """Decorator (``@fadesim.advantage`` or ``@fadesim.advantage(min_group_size=1, mean_centred=True)``).

    ``domains`` declares the values each keyword hyper-parameter may take (``fadesim.advantages.domains``:
    ``Interval(low=0)``, ``Choice(("a", "b"))``, ...): a call with a value outside it raises ``ValueError``
    naming the function, parameter, value and domain, and ``fadesim check`` probes each boundary."""
    if isinstance(min_group_size, bool) or int(min_group_size) != min_group_size or min_group_size < 1:
        raise ValueError(f"fadesim.advantage: min_group_size must be an integer >= 1; got {min_group_size!r}")
    unknown = sorted(set(declared) - set(_DECLARABLE))
    if unknown:
        raise ValueError(f"fadesim.advantage: unknown declaration(s) {unknown}; known: {', '.join(_DECLARABLE)}")

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(f):
            raise TypeError(f"fadesim.advantage: expected a function, got {type(f).__name__}")
        params = inspect.signature(f).parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
        takes = {k for k in ("mask", "signals", "logprobs") if takes_all or k in params}
        name = getattr(f, "__name__", "advantage")
        hyper_names = {p.name: p.default for p in params.values()
                       if p.kind is p.KEYWORD_ONLY and p.name not in ("mask", "signals", "logprobs")}
        own_domains = dict(domains or {})
        check_domains(name, hyper_names, own_domains)

        @functools.wraps(f)
        def wrapped(rewards: Any, *, mask: Any = None, signals: Any = None, logprobs: Any = None, **hyper: Any) -> Any:
            if mask is not None and "mask" not in takes:
                raise ValueError(f"{name}: a mask was given but the function takes no 'mask' keyword, so it "
                                 "cannot leave padded rollouts out of its group statistics")
            batch = prepare_group_batch(rewards, mask, name=name, min_group_size=int(min_group_size))
            check_params(name, own_domains, hyper)
            kw: dict[str, Any] = dict(hyper)
            if "mask" in takes:
                kw["mask"] = batch.mask if mask is not None else None
            if "signals" in takes:
                kw["signals"] = signals
            if "logprobs" in takes:
                kw["logprobs"] = None if logprobs is None else prepare_companion(logprobs, batch, name=name,
                                                                                  what="logprobs")
            xp = batch.xp
            out = f(batch.rewards, **kw)
            if array_api_compat.is_torch_array(batch.rewards):  # on the rewards' device (CPU -> CUDA after numpy)
                out = xp.asarray(out, device=array_api_compat.device(batch.rewards))
            else:
                out = xp.asarray(out)
            if tuple(out.shape) != tuple(batch.rewards.shape):
                raise ValueError(f"{name}: returned shape {tuple(out.shape)} for rewards of shape "
                                 f"{tuple(batch.rewards.shape)}")
            out = xp.astype(out, batch.rewards.dtype)
            return _constant(xp.where(batch.mask, out, xp.zeros_like(out)), xp)

        # the contract's signature plus the user's own keyword hyper-parameters (what the registry reads)
        del wrapped.__wrapped__
        first = next(iter(params.values()), None)
        contract = [inspect.Parameter(first.name if first is not None else "rewards", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        contract += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None)
                     for k in ("mask", "signals", "logprobs")]
        contract += [p for p in params.values() if p.kind is p.KEYWORD_ONLY and p.name not in ("mask", "signals", "logprobs")]
        wrapped.__signature__ = inspect.Signature(contract)
        wrapped.__fadesim__ = {**dict(getattr(f, "__fadesim__", {}) or {}), **declared,
                               "min_group_size": int(min_group_size)}
        if own_domains:
            wrapped.__fadesim__["domains"] = own_domains
        return wrapped

    return wrap(fn) if fn is not None else wrap
