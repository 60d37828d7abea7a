"""Tool specs and the registry the runtime offers to the model."""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .reserved import RESERVED_PARAMS
from .validation import ArgumentValidator

if TYPE_CHECKING:
    from .messages import ToolSchema
    from .policy import ProtectedWrite
    from .typed_arguments import TypedArguments

    WriteGuard = Callable[[dict[str, Any]], ProtectedWrite | None]

DEFAULT_TOOL_TIMEOUT_S = 60.0

# Anthropic and OpenAI both accept ^[a-zA-Z0-9_-]{1,64}$ for tool names.
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_SPEC_ATTR = "__cleveragents_tool__"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True, frozen=True)
class ToolSpec:
    """A registered tool: what the model sees (name, description, schema) and how to run it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[..., Any]
    mutating: bool = False
    # Runs programs (shell commands, unknown MCP tools): `auto-edit` still asks for these.
    executes_code: bool = False
    timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    # Reserved keys (sandbox_root, resource_bindings) the handler accepts from the context.
    context_params: frozenset[str] = frozenset()
    source: str = "python"
    is_async: bool = field(default=False)
    # A typed tool's (Pydantic models, dataclasses, Enums, Field constraints...): validates
    # and converts the arguments in one pass; built once, at registration. None for a tool
    # whose parameters are plain JSON, which takes its arguments as they are.
    typed_arguments: TypedArguments | None = field(default=None, repr=False, compare=False)
    # For tools that write files: the protected path (a git hook, editor tasks) a call would
    # write, which the Authorizer asks about under every profile (policy.ProtectedWrite).
    write_guard: WriteGuard | None = field(default=None, compare=False, repr=False)
    # Arguments naming files the tool writes, edits or deletes (the built-in file tools:
    # `path`): their previous content is kept before the call, whatever .gitignore says.
    changes_paths: tuple[str, ...] = ()
    # Checks arguments against input_schema; compiled at the first call and kept here, so
    # every runner and run that offers this spec shares it (a typed tool's is its
    # typed_arguments, which answers the same `problems` question).
    validator: ArgumentValidator | TypedArguments = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        checker = self.typed_arguments or ArgumentValidator(self.input_schema)
        object.__setattr__(self, "validator", checker)

    def to_schema(self) -> ToolSchema:
        # Imported here: a daemon checks a client's tools at `initialize` (make_spec) without
        # loading the conversation's types (issue 21: cold start).
        from .messages import ToolSchema

        return ToolSchema(
            self.name, self.description, self.input_schema, self.mutating, self.executes_code
        )


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise ValueError(f"invalid tool name {name!r}: use 1 to 64 letters, digits, '_' or '-'")


def _check_schema(tool_name: str, schema: dict[str, Any]) -> None:
    """A schema that is not valid JSON Schema is refused at registration, not at first call."""
    from jsonschema import exceptions, validators

    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        raise ValueError(
            f"tool {tool_name}: input_schema is not valid JSON Schema: {exc.message}"
        ) from None


def _accepted_reserved(handler: Callable[..., Any]) -> frozenset[str]:
    try:
        parameters = inspect.signature(handler).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return RESERVED_PARAMS
    return frozenset(name for name in parameters if name in RESERVED_PARAMS)


def make_spec(
    handler: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    mutating: bool = False,
    executes_code: bool = False,
    timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
    source: str = "python",
    schema_checked: bool = False,
    changes_paths: tuple[str, ...] = (),
) -> ToolSpec:
    """Build a spec from a function; the schema comes from its type hints unless given.

    A given schema is checked against JSON Schema's metaschema, unless `schema_checked` says
    it already was: the built-in tools' schemas are checked by their tests, and checking
    them at every start would cost the daemon the import of `jsonschema` (over 100 ms)
    before its first answer.
    """
    if not callable(handler):
        raise TypeError(f"tool handler must be callable, not {type(handler).__name__}")
    tool_name: str = name or str(getattr(handler, "__name__", ""))
    _check_name(tool_name)
    if timeout_s <= 0:
        raise ValueError(f"tool {tool_name}: timeout_s must be positive, got {timeout_s}")
    typed: TypedArguments | None = None
    if input_schema is None:
        # Here, not at import: the daemon's `initialize` checks client tools (given schemas)
        # without loading the type-hint reader and its patterns.
        from .schema import describe_function

        described = describe_function(handler)
        schema, doc_description = described.input_schema, described.description
        reserved, typed = described.context_params, described.typed_arguments
    else:
        if not isinstance(input_schema, dict) or input_schema.get("type", "object") != "object":
            raise ValueError(f"tool {tool_name}: input_schema must be a JSON Schema object")
        schema = copy.deepcopy(input_schema)  # never edit the caller's schema
        schema.setdefault("type", "object")
        if not schema_checked:
            _check_schema(tool_name, schema)
        doc_description = inspect.getdoc(handler) or ""
        reserved = _accepted_reserved(handler)
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for key in RESERVED_PARAMS:
                properties.pop(key, None)
        if isinstance(schema.get("required"), list):
            schema["required"] = [k for k in schema["required"] if k not in RESERVED_PARAMS]
    return ToolSpec(
        name=tool_name,
        description=(description if description is not None else doc_description) or tool_name,
        input_schema=schema,
        handler=handler,
        mutating=mutating or executes_code,
        executes_code=executes_code,
        timeout_s=timeout_s,
        context_params=reserved,
        source=source,
        is_async=inspect.iscoroutinefunction(handler),
        typed_arguments=typed,
        changes_paths=changes_paths,
    )


@overload
def tool(function: F, /) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    mutating: bool = False,
    executes_code: bool = False,
    timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
) -> Callable[[F], F]: ...
def tool(
    function: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    mutating: bool = False,
    executes_code: bool = False,
    timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
) -> Any:
    """Mark a function as a tool; its schema comes from type hints and docstring.

    The function is returned unchanged (still callable); `ToolRegistry.add` and module
    discovery pick the spec up from it.
    """

    def mark(fn: F) -> F:
        spec = make_spec(
            fn,
            name=name,
            description=description,
            mutating=mutating,
            executes_code=executes_code,
            timeout_s=timeout_s,
        )
        setattr(fn, _SPEC_ATTR, spec)
        return fn

    return mark(function) if function is not None else mark


def spec_of(obj: Any) -> ToolSpec | None:
    """The spec a `@tool` function carries, or None."""
    spec = getattr(obj, _SPEC_ATTR, None)
    return spec if isinstance(spec, ToolSpec) else None


class ToolRegistry:
    """Named tools, in registration order."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}

    def register(
        self,
        name: str,
        handler: Callable[..., Any],
        *,
        input_schema: dict[str, Any] | None = None,
        description: str | None = None,
        mutating: bool = False,
        executes_code: bool = False,
        timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        source: str = "python",
        replace: bool = False,
    ) -> ToolSpec:
        """Register `handler` under `name`, with an explicit schema or one from type hints."""
        spec = make_spec(
            handler,
            name=name,
            description=description,
            input_schema=input_schema,
            mutating=mutating,
            executes_code=executes_code,
            timeout_s=timeout_s,
            source=source,
        )
        return self.add_spec(spec, replace=replace)

    def add(self, function: Callable[..., Any], *, replace: bool = False) -> ToolSpec:
        """Register a function: the spec from `@tool` if it has one, else one from its hints."""
        spec = spec_of(function) or make_spec(function)
        return self.add_spec(spec, replace=replace)

    def add_spec(self, spec: ToolSpec, *, replace: bool = False) -> ToolSpec:
        if not isinstance(spec, ToolSpec):
            raise TypeError(f"expected ToolSpec, not {type(spec).__name__}")
        if spec.name in self._tools and not replace:
            raise ValueError(f"a tool named {spec.name!r} is already registered")
        self._tools[spec.name] = spec
        return spec

    @overload
    def tool(self, function: F, /) -> F: ...
    @overload
    def tool(
        self,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        mutating: bool = False,
        executes_code: bool = False,
        timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
    ) -> Callable[[F], F]: ...
    def tool(
        self,
        function: Any = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        mutating: bool = False,
        executes_code: bool = False,
        timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
    ) -> Any:
        """Decorator: `@registry.tool` or `@registry.tool(mutating=True)`."""

        def register(fn: F) -> F:
            marked = tool(
                name=name,
                description=description,
                mutating=mutating,
                executes_code=executes_code,
                timeout_s=timeout_s,
            )(fn)
            self.add(marked)
            return marked

        return register(function) if function is not None else register

    def unregister(self, name: str) -> None:
        del self._tools[name]

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def specs(self) -> list[ToolSpec]:
        return list(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(list(self._tools.values()))
