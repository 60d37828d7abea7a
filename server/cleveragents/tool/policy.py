"""Automation profiles: which tool calls run outright, which need approval, which never run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from .cancel import CancelToken
from .registry import ToolSpec

# In order of what they allow; the tool runtime imports nothing of ours, so the settings
# table's automation profile row spells them again (a test keeps the two equal).
AUTOMATION_PROFILES = ("read-only", "ask", "auto-edit", "full-auto")

Verdict = Literal["allow", "ask", "deny"]
ApprovalDecision = Literal["allow", "deny", "allow_for_run", "cancel"]
"""`cancel`: the user stopped the whole run while asked (ACP's `cancelled` outcome, Ctrl-C at
the terminal prompt): the call does not run, is recorded as cancelled, and the run ends."""


@dataclass(slots=True, frozen=True)
class ApprovalRequest:
    """What a client is shown when a call needs approval."""

    run_id: str
    call_id: str
    tool_name: str
    inputs: dict[str, Any]
    mutating: bool
    executes_code: bool
    automation_profile: str
    iteration: int
    # Why this call is asked about beyond the profile's rule (e.g. it would run unconfined).
    note: str | None = None
    # About a protected write (code that could run later, outside every wall): asked every
    # time, under every profile; an earlier "always allow" of the tool does not answer it, and
    # "allow for run" allows only this once.
    protected: bool = False


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
"""Asks a human (terminal prompt, editor dialog) and returns their decision."""


def check_profile(profile: str) -> str:
    if profile not in AUTOMATION_PROFILES:
        choices = ", ".join(AUTOMATION_PROFILES)
        raise ValueError(f"unknown automation profile {profile!r}; choose one of {choices}")
    return profile


def verdict(profile: str, spec: ToolSpec) -> Verdict:
    """The profile's rule for one tool, before any human is asked."""
    if not spec.mutating or profile == "full-auto":
        return "allow"
    if profile == "read-only":
        return "deny"
    if profile == "auto-edit" and not spec.executes_code:
        return "allow"
    return "ask"


@dataclass(slots=True, frozen=True)
class UnconfinedCode:
    """A tool's code would run with no sandbox around it (no bubblewrap here, say)."""

    reason: str  # why, and how to confine it or allow it
    allowed_under_full_auto: bool  # the user's explicit "allow unconfined commands" setting


@dataclass(slots=True, frozen=True)
class ProtectedWrite:
    """A call would write a protected path: code that could run later, outside every wall."""

    path: str  # as the tool resolved it, relative to the sandbox
    why: str
    setting: str  # the explicit opt-in that lets such writes run without asking
    allowed: bool  # the user gave that opt-in


ProtectedWritesAsker = Callable[[str], Awaitable[bool]]
"""Asks, after a call ran, whether to keep the protected writes it made (the text says
which); True keeps them. Raises CancelledError when the run was stopped while asking."""

_protected_writes_asker: ContextVar[ProtectedWritesAsker | None] = ContextVar(
    "cleveragents_protected_writes_asker", default=None
)


def protected_writes_asker() -> ProtectedWritesAsker | None:
    """Who to ask about the protected writes of the call running now; None: nobody."""
    return _protected_writes_asker.get()


def ask_about_protected_writes(asker: ProtectedWritesAsker | None) -> Token[Any]:
    """From now until `stop_asking_about_protected_writes(token)`, around one call: its tool
    asks `asker` about the protected writes it finds it made (a command's new repository with
    a hook, say), which no check before the call can see. Two plain calls rather than a
    context manager: the runner pays this on every call of every run."""
    return _protected_writes_asker.set(asker)


def stop_asking_about_protected_writes(token: Token[Any]) -> None:
    _protected_writes_asker.reset(token)


@runtime_checkable
class ReportsConfinement(Protocol):
    """A tool handler's owner that can tell, before each call, whether it would be confined."""

    async def unconfined_code(self) -> UnconfinedCode | None: ...


async def unconfined_code(spec: ToolSpec) -> UnconfinedCode | None:
    """Whether `spec` would run code unconfined; a bound method's owner may report it."""
    owner = getattr(spec.handler, "__self__", None)
    if not spec.executes_code or not isinstance(owner, ReportsConfinement):
        return None
    return await owner.unconfined_code()


class Authorizer:
    """Applies a profile for one run, asking the approver and remembering 'allow for run'.

    With a cancel token, a cancelled run asks nothing more: `check` raises CancelledError
    instead of asking, when the question is answered `cancel` (it cancels the token), and when
    the token was cancelled while the question was open, whatever the answer.
    """

    def __init__(
        self,
        profile: str,
        approver: Approver | None,
        run_id: str,
        cancel: CancelToken | None = None,
    ) -> None:
        self.profile = check_profile(profile)
        self.approver = approver
        self.run_id = run_id
        self.cancel = cancel
        self._allowed_for_run: set[str] = set()
        # Calls whose approval question the run's cancel cut short (they never ran).
        self.cancelled_questions: set[str] = set()

    async def check(
        self, spec: ToolSpec, inputs: dict[str, Any], call_id: str, iteration: int
    ) -> str | None:
        """None when the call may run, else the reason it was denied (told to the model)."""
        rule = verdict(self.profile, spec)
        if rule == "deny":
            return f"{spec.name} changes the workspace and the profile '{self.profile}' forbids it"
        note = None
        # Unconfined code is asked about under every profile, except full-auto with the
        # explicit setting that allows it.
        gap = await unconfined_code(spec)
        if gap is not None:
            note = f"{spec.name} would run unconfined: {gap.reason}"
            if not (self.profile == "full-auto" and gap.allowed_under_full_auto):
                rule = "ask"
        # A protected path is asked about every time, under every profile, unless the user
        # opted in: an earlier "allow for this run" does not cover it.
        protected = spec.write_guard(inputs) if spec.write_guard is not None else None
        must_ask = protected is not None and not protected.allowed
        if protected is not None and must_ask:
            note = f"{spec.name} would write {protected.path}, {protected.why}" + (
                f"; {note}" if note else ""
            )
            rule = "ask"
        if rule == "allow" or (spec.name in self._allowed_for_run and not must_ask):
            return None
        if self.approver is None:
            if protected is not None and must_ask:
                return (
                    f"{spec.name} would write {protected.path}, {protected.why}. Such writes "
                    "are asked about under every profile and no one is there to approve it; "
                    f"to allow them without asking, set {protected.setting}"
                )
            return (
                f"{spec.name} needs approval under the profile '{self.profile}' "
                "and no one is there to approve it" + (f" ({note})" if note else "")
            )
        token = self.cancel
        if token is not None and token.cancelled:
            raise asyncio.CancelledError  # never ask once the run is stopping
        try:
            decision = await self.approver(
                self._request(spec, inputs, call_id, iteration, note, protected=must_ask)
            )
            if decision == "cancel" or (token is not None and token.cancelled):
                # Any answer that comes with (or after) a cancel loses to it.
                if token is not None:
                    token.cancel()
                raise asyncio.CancelledError
        except asyncio.CancelledError:
            self.cancelled_questions.add(call_id)
            raise
        if decision == "allow_for_run":
            if not must_ask:  # a protected write is allowed this once only
                self._allowed_for_run.add(spec.name)
            return None
        if decision == "allow":
            return None
        return f"the user denied {spec.name}"

    def _request(
        self,
        spec: ToolSpec,
        inputs: dict[str, Any],
        call_id: str,
        iteration: int,
        note: str | None,
        *,
        protected: bool,
    ) -> ApprovalRequest:
        return ApprovalRequest(
            run_id=self.run_id,
            call_id=call_id,
            tool_name=spec.name,
            inputs=inputs,
            mutating=spec.mutating,
            executes_code=spec.executes_code,
            automation_profile=self.profile,
            iteration=iteration,
            note=note,
            protected=protected,
        )

    async def ask_after(
        self, spec: ToolSpec, inputs: dict[str, Any], call_id: str, iteration: int, what: str
    ) -> bool:
        """Whether to keep the protected writes a call made (`what` says which), asked under
        every profile; no approver, a failing one, or a no: False. "Allow for run" keeps them
        this once and is not remembered. A cancel raises CancelledError (the caller undoes)."""
        if self.approver is None:
            return False
        token = self.cancel
        if token is not None and token.cancelled:
            raise asyncio.CancelledError
        try:
            decision = await self.approver(
                self._request(spec, inputs, call_id, iteration, what, protected=True)
            )
        except asyncio.CancelledError:
            self.cancelled_questions.add(call_id)
            raise
        except Exception:  # an approver that fails must not keep them
            return False
        if decision == "cancel" or (token is not None and token.cancelled):
            if token is not None:
                token.cancel()
            self.cancelled_questions.add(call_id)
            raise asyncio.CancelledError
        return decision in ("allow", "allow_for_run")
