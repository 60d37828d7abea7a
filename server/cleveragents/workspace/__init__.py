"""Built-in workspace tools (files, search, commands), each confined to the run's sandbox root.

from cleveragents.workspace import register_builtin_tools
register_builtin_tools(registry)
"""

from typing import TYPE_CHECKING

from ..tool.lazy import lazy_exports

if TYPE_CHECKING:
    from .bubblewrap import Confinement, bubblewrap_status
    from .builtins import builtin_tools, register_builtin_tools
    from .command import CommandTool
    from .command_policy import CommandPolicy, ResourceLimits, command_mounts
    from .sandbox import Sandbox, SandboxPath

# Imported on first use: a module that needs one part (the history needs `private`) does not
# load the command wall, search and every tool.
__getattr__ = lazy_exports(
    __name__,
    {
        "Confinement": ".bubblewrap",
        "bubblewrap_status": ".bubblewrap",
        "builtin_tools": ".builtins",
        "register_builtin_tools": ".builtins",
        "CommandTool": ".command",
        "CommandPolicy": ".command_policy",
        "ResourceLimits": ".command_policy",
        "command_mounts": ".command_policy",
        "Sandbox": ".sandbox",
        "SandboxPath": ".sandbox",
    },
)

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
