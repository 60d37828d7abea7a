"""The wire's command options as the core's layer of command settings.

Apart from `translate.py` (which imports the run machinery): `initialize` reads the session's
command options and must not pay for loading what runs need (issue 21: cold start).
"""

from __future__ import annotations

from ..service.settings import COMMAND_LIMITS, CommandSettings
from . import wire


def command_settings(options: wire.RunParams | wire.InitializationOptions) -> CommandSettings:
    """The wire's command options (of a run, or of the session) as the core's layer of command
    settings."""
    limits = options.command_limits
    set_limits = {
        name: value
        for name in COMMAND_LIMITS
        if limits is not None and (value := getattr(limits, name)) is not None
    }
    return CommandSettings(
        read_paths=tuple(options.command_read_paths or ()),
        env=tuple(options.command_env or ()),
        limits=set_limits,
        allow_unconfined=options.allow_unconfined_commands,
    )
