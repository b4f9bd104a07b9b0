"""Renamed modules: the new paths hold the code, the old paths still import with a DeprecationWarning, and no
old path binds a module over the public function of the same name."""

import importlib
import warnings

import numpy as np
import pytest

import fadesim
import fadesim.theory
from fadesim._moved import MOVED


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_old_path_warns_and_gives_the_new_modules_objects(old, new):
    module = importlib.import_module(new)
    public = [n for n in vars(module) if not n.startswith("_") and getattr(getattr(module, n), "__module__", "") == new]
    assert public, f"{new} defines nothing public"
    alias = importlib.import_module(old)
    for name in public:
        with pytest.warns(DeprecationWarning, match=f"{old} was renamed {new}"):
            assert getattr(alias, name) is getattr(module, name)
    with pytest.raises(AttributeError):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            alias.no_such_name_here


def test_old_paths_leave_the_public_functions_callable():
    for old in MOVED:
        importlib.import_module(old)
    assert fadesim.decompose.__module__ == "fadesim.decomposition"
    assert fadesim.theory.profile.__module__ == "fadesim.theory.mass_profile"
    assert fadesim.theory.drift.__module__ == "fadesim.theory.second_order"
    r = np.array([[1.0, 0.0, 0.0, 1.0]])
    assert fadesim.decompose(fadesim.get("grpo")(r), r).balance == pytest.approx(0.0)
