"""Importing this module registers fadesim's advantages in verl (entry point ``verl.plugins: fadesim``).

``import verl`` loads it in every verl process; with verl's plugin policy off (``VERL_USE_EXTERNAL_PLUGINS=none``)
use ``VERL_USE_EXTERNAL_MODULES=fadesim.bridge.verl_autoload`` or call ``register_verl()`` yourself.
"""

from fadesim.bridge.verl_plugin import register_verl

REGISTERED = register_verl()
