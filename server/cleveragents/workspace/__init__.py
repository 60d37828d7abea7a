"""Built-in workspace tools (files, search, commands), each confined to the run's sandbox root.

from cleveragents.workspace import register_builtin_tools
register_builtin_tools(registry)
"""

from .bubblewrap import Confinement, bubblewrap_status
from .builtins import builtin_tools, register_builtin_tools
from .command import CommandTool
from .command_policy import CommandPolicy, ResourceLimits, command_mounts
from .sandbox import Sandbox, SandboxPath

__all__ = [
    "CommandPolicy",
    "CommandTool",
    "Confinement",
    "ResourceLimits",
    "Sandbox",
    "SandboxPath",
    "bubblewrap_status",
    "builtin_tools",
    "command_mounts",
    "register_builtin_tools",
]
