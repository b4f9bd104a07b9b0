"""fadesim: check, cheaply and exactly, what an advantage function does to RL post-training.

Public API::

    fadesim.get(name, **params)      # the advantage function (registry object itself when no params)
    fadesim.names()                  # registered advantage names
    fadesim.info(name)               # metadata: arXiv id, parameters, mean-centred?, needs ...
    fadesim.register(name, fn, ...)  # add your own advantage
    @fadesim.advantage               # make a plain function meet the call contract (validation, masks, ...)
    fadesim.decompose(adv, rewards)  # sign x difficulty mass decomposition
    fadesim.profile(name, G)         # exact expected masses under k ~ Binomial(G, p)
"""

from fadesim import theory
from fadesim.advantages import Advantage, entries, get, info, names, register, unregister
from fadesim.contract import advantage
from fadesim.decomposition import MassDecomposition, decompose
from fadesim.theory import profile

__version__ = "0.1.0"


__all__ = [
    "Advantage",
    "MassDecomposition",
    "advantage",
    "decompose",
    "entries",
    "get",
    "info",
    "names",
    "profile",
    "register",
    "theory",
    "unregister",
]
