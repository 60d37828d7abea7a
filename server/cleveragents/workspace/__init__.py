"""Built-in workspace tools (files, search, commands), each confined to the run's sandbox root.

from cleveragents.workspace import register_builtin_tools
register_builtin_tools(registry)
"""

from .builtins import builtin_tools, register_builtin_tools
from .command import Confinement, bubblewrap_status
from .sandbox import Sandbox, SandboxPath

__all__ = [
    "Confinement",
    "Sandbox",
    "SandboxPath",
    "bubblewrap_status",
    "builtin_tools",
    "register_builtin_tools",
]
