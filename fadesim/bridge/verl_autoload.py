"""Importing this module registers fadesim's advantages in verl (entry point ``verl.plugins: fadesim``).

``import verl`` loads it in every verl process; with verl's plugin policy off (``VERL_USE_EXTERNAL_PLUGINS=none``)
use ``VERL_USE_EXTERNAL_MODULES=fadesim.bridge.verl_autoload`` or call ``register_verl()`` yourself.

verl logs a plug-in that fails to import at DEBUG level only (the estimator is then just "unknown" later), so a
failure here is also a warning that names the error before the exception propagates to verl.
"""

import warnings

from fadesim.bridge.verl_plugin import register_verl

try:
    REGISTERED = register_verl()
except Exception as err:
    warnings.warn(f"fadesim: registering fadesim's advantage estimators in verl failed: {type(err).__name__}: {err}; "
                  "algorithm.adv_estimator=fadesim_* will be unknown", RuntimeWarning, stacklevel=2)
    raise
