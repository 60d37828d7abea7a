"""What the tests share: fixtures (`support.fixtures`, registered for every test by the root
conftest), the fake model servers, and the helpers that drive the daemon and the ACP agent.

Importable as `support` because pytest puts `tests/` on the path (`pythonpath` in
pyproject.toml): no test edits `sys.path`.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
