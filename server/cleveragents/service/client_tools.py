"""Tools a client serves: declared by the front's client, offered to the model beside the
daemon's own tools, each call a request to that client.

A front hands the core the declarations (checked here, once, by `check_client_tools`) and a
host that sends one request and returns the client's answer (`ClientToolHost`). Everything
else is here: the spec (schema, approval class, timeout), the run and call a request names,
and the answer as a record's output or failure. So a client's tool gets the same records,
timeouts, cancel (the awaiting request is withdrawn) and approvals as any other tool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from ..tool.errors import ToolError
from ..tool.registry import ToolRegistry, ToolSpec, make_spec
from ..workspace.limits import MAX_OUTPUT_BYTES, cut_utf8
from .errors import TOOLS_UNAVAILABLE, ClientRequestError, ServiceError

# A client answers from its own state (the editor's problems, its open files): seconds at
# most. Longer waits are a client that hangs, which must not hold the run.
DEFAULT_CLIENT_TOOL_TIMEOUT_S = 30.0
MAX_CLIENT_TOOL_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class ClientTool:
    """A tool as the client declared it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    # Only a tool declared read-only is taken at its word; any other may change things, so
    # `ask` and `auto-edit` ask before it runs (as for an MCP server's tools).
    read_only: bool = False
    timeout_s: float = DEFAULT_CLIENT_TOOL_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class ClientToolCall:
    """One call of a client's tool: what the request to the client says."""

    run_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    iteration: int


@dataclass(frozen=True, slots=True)
class ClientToolAnswer:
    """The client's answer: its text, and whether the tool failed."""

    text: str
    is_error: bool = False


class MalformedAnswer(ValueError):
    """The client answered a tool call with something that is not a tool result."""


@runtime_checkable
class ClientToolHost(Protocol):
    """A sink whose client serves tools (optional): the daemon's, for clients that declare
    `tools` at `initialize`."""

    @property
    def client_tools(self) -> Sequence[ClientTool]: ...

    async def call_client_tool(self, call: ClientToolCall) -> ClientToolAnswer:
        """The client's answer; ClientRequestError for an error answer, MalformedAnswer for
        one that is no tool result. Cancelling the awaiting task withdraws the request."""
        ...


def check_client_tools(tools: Sequence[ClientTool], taken: Iterable[str]) -> list[str]:
    """Problems of a client's declarations, each naming the tool (`tools[1] ('x'): ...`):
    a bad name or schema, a duplicate, a timeout out of range, or a name already taken by
    the daemon's own tools (a client's tool never shadows one)."""
    problems: list[str] = []
    own = set(taken)
    seen: set[str] = set()
    for index, declared in enumerate(tools):
        where = f"tools[{index}] ({declared.name!r})"
        if declared.name in own:
            problems.append(
                f"{where}: the daemon already has a tool named {declared.name!r}; "
                "a client's tool cannot replace it: rename it"
            )
        elif declared.name in seen:
            problems.append(f"{where}: declared twice")
        seen.add(declared.name)
        if not declared.description.strip():
            problems.append(f"{where}: description must not be empty (the model reads it)")
        if not 0 < declared.timeout_s <= MAX_CLIENT_TOOL_TIMEOUT_S:
            problems.append(
                f"{where}: timeout must be more than 0 and at most "
                f"{MAX_CLIENT_TOOL_TIMEOUT_S:g} s, got {declared.timeout_s:g}"
            )
            continue
        try:
            _spec(declared, _refuse)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    return problems


async def _refuse(**arguments: Any) -> None:
    raise AssertionError("only checked, never called")


def client_tool_specs(
    tools: Sequence[ClientTool], host: ClientToolHost, run_id: str
) -> list[ToolSpec]:
    """One run's specs of the client's tools; each call is a request through `host`."""
    return [_spec(declared, _caller(declared.name, host, run_id)) for declared in tools]


def _spec(declared: ClientTool, handler: Callable[..., Awaitable[Any]]) -> ToolSpec:
    spec = make_spec(
        handler,
        name=declared.name,
        description=declared.description,
        input_schema=declared.input_schema,
        mutating=not declared.read_only,
        executes_code=not declared.read_only,
        timeout_s=declared.timeout_s,
        source="client",
    )
    # The model's arguments go to the client as they are: no context keys injected.
    return replace(spec, context_params=frozenset())


def _caller(name: str, host: ClientToolHost, run_id: str) -> Callable[..., Awaitable[Any]]:
    # Imported by a run, not with this module: `initialize` checks declared tools without
    # loading the tool runner (issue 21: cold start).
    from ..tool.runner import running_call

    async def call_client_tool(**arguments: Any) -> dict[str, Any]:
        running = running_call()
        call = ClientToolCall(
            run_id=run_id,
            call_id=running.call_id if running is not None else "",
            tool_name=name,
            arguments=arguments,
            iteration=running.iteration if running is not None else 0,
        )
        try:
            answer = await host.call_client_tool(call)
        except ClientRequestError as exc:
            raise ToolError(f"the client could not run {name}: {exc}") from None
        except MalformedAnswer as exc:
            raise ToolError(f"the client's answer to {name} is not a tool result: {exc}") from None
        if answer.is_error:
            raise ToolError(f"{name} failed in the client: {answer.text or 'no message given'}")
        data, was_cut = cut_utf8(answer.text.encode("utf-8"), MAX_OUTPUT_BYTES)
        output: dict[str, Any] = {"text": data.decode("utf-8")}
        if was_cut:
            output["truncated"] = True
        return output

    return call_client_tool


def registry_with_client_tools(
    base: ToolRegistry, tools: Sequence[ClientTool], host: ClientToolHost, run_id: str
) -> ToolRegistry:
    """A new registry: `base`'s tools, then the client's. A client's tool whose name a tool of
    the run already has (a workspace MCP server's) is a ServiceError naming both: the run does
    not start rather than offer one of them silently."""
    registry = ToolRegistry()
    for spec in base.specs():
        registry.add_spec(spec)
    for spec in client_tool_specs(tools, host, run_id):
        existing = registry.get(spec.name)
        if existing is not None:
            raise ServiceError(
                TOOLS_UNAVAILABLE,
                f"the client's tool {spec.name!r} clashes with a tool of this run (from "
                f"{existing.source}); rename one of them",
                {"tool": spec.name},
            )
        registry.add_spec(spec)
    return registry
