"""The stack driver behind `gpufleet burst`: a small protocol over the Pulumi Automation API.

- `AutomationDriver` selects an existing stack of the project (work_dir = the project directory, so the CLI
  honours `stackConfigDir: stacks`). It runs `pulumi up` targeted at the resources a window changes, refreshed
  first (`Stack.up(refresh=True, target=[urns], target_dependents=True)`, pulumi/automation/_stack.py).
- The burst state is the outputs of the state stack `<stack>-burst` (model/burst.py). `read_state` reads them;
  `write_state` runs `up` of an inline program that exports only them, in the same project and backend. Such an
  `up` records all of its outputs or, failing, leaves the previous ones.
- Writes are compare-and-swap: the check runs inside that `up`, under the backend's update lock (`write_state`).
- Tests use a fake of the same protocol, lock and generation included (tests/burst/helpers.py).

Every failure of the engine or the CLI becomes a `DriverError` with a sentence saying what to do.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

OutputSink = Callable[[str], None]


class DriverError(Exception):
    """The Pulumi CLI or engine could not do what was asked; the message says why and what to do."""


class NotStarted(DriverError):
    """The engine refused before it changed anything (a locked stack, a missing stack or CLI)."""


class StackLocked(NotStarted):
    """Another update holds the stack's lock."""


class SummaryUnread(DriverError):
    """`pulumi up` finished, but reading its outputs or change summary afterwards failed."""


class StateMoved(DriverError):
    """The state stack was written since the command read it; the write was refused and changed nothing."""

    def __init__(self, expected: int, found: int) -> None:
        super().__init__(
            f"the burst state changed while this command ran (it read generation {expected}, the state stack now "
            f"holds generation {found}: another `gpufleet burst` command wrote it); nothing was written. Run "
            "`gpufleet burst status` and try again"
        )
        self.found = found


def generation(outputs: dict[str, Any] | None) -> int:
    """The generation a state stack's outputs record (0: none yet)."""
    return int((outputs or {}).get("generation") or 0)


class StackDriver(Protocol):
    def select(self, stack: str) -> None: ...

    def get_config(self, key: str) -> str | None: ...

    def set_config(self, key: str, value: str) -> None: ...

    def remove_config(self, key: str) -> None: ...

    def preview(self, on_output: OutputSink) -> dict[str, int]: ...

    def up(self, on_output: OutputSink, targets: list[str] | None = None) -> dict[str, int]: ...

    def outputs(self) -> dict[str, Any]: ...

    def read_state(self, stack: str) -> dict[str, Any] | None: ...

    def write_state(self, stack: str, outputs: dict[str, Any], on_output: OutputSink, expect: int) -> None:
        """Record `outputs` only if the state stack still holds generation `expect` (0: no state yet).

        Read, compare and write happen in one `up` of the state stack, under the backend's update lock: Pulumi
        Cloud grants one update lease per stack at a time
        (https://www.pulumi.com/docs/iac/operations/troubleshooting/update-conflicts/), and DIY backends lock by
        default (https://www.pulumi.com/docs/iac/operations/stack-management/using-a-diy-backend/). A second
        writer's `up` fails as locked (`StackLocked`); a writer that read an older generation is refused
        (`StateMoved`). Either way its outputs stay as they were."""
        ...


NO_CLI = (
    "the Pulumi CLI was not found: install it (https://www.pulumi.com/docs/iac/download-install/) and make sure "
    "`pulumi` is on PATH, then run the command again"
)


class AutomationDriver:
    """StackDriver over `pulumi.automation` (needs the Pulumi CLI and the stack's backend login)."""

    def __init__(self, project_dir: Path, pulumi_root: Path | None = None) -> None:
        self.project_dir = project_dir
        self.pulumi_root = pulumi_root  # a directory with bin/pulumi; default: `pulumi` on PATH
        self._stack: Any = None

    def _translate(self, err: Exception, doing: str) -> DriverError:
        from pulumi.automation import errors

        if isinstance(err, FileNotFoundError):
            return NotStarted(NO_CLI)
        if isinstance(err, errors.StackNotFoundError):
            return NotStarted(
                f"{doing}: the stack does not exist in the Pulumi backend you are logged in to; check the login "
                "(`pulumi whoami -v`) or create the stack (`pulumi stack init`)"
            )
        if isinstance(err, errors.ConcurrentUpdateError):
            return StackLocked(
                f"{doing}: the stack is locked by another update; wait for it to finish (or, if it died, run "
                "`pulumi cancel`) and try again"
            )
        if isinstance(err, errors.InvalidVersionError):
            return NotStarted(f"{doing}: the installed Pulumi CLI is too old for the Automation API: {err}")
        if isinstance(err, errors.CommandError):
            return DriverError(f"{doing} failed: {_reason(str(err))}")
        return DriverError(f"{doing} failed: {err}")

    def _call(self, doing: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as err:  # the Automation API also raises plain errors (e.g. a missing summary event)
            raise self._translate(err, doing) from None

    def select(self, stack: str) -> None:
        from pulumi import automation as auto

        def select() -> Any:
            opts = None
            if self.pulumi_root is not None:
                command = auto.PulumiCommand(root=str(self.pulumi_root), skip_version_check=True)
                opts = auto.LocalWorkspaceOptions(pulumi_command=command)
            return auto.select_stack(stack_name=stack, work_dir=str(self.project_dir), opts=opts)

        self._stack = self._call(f"selecting stack {stack}", select)

    def get_config(self, key: str) -> str | None:
        from pulumi.automation import errors

        try:
            return str(self._stack.get_config(key).value)
        except errors.CommandError as err:
            if "not found" in str(err).lower():
                return None
            raise self._translate(err, f"reading config {key}") from None
        except FileNotFoundError as err:
            raise self._translate(err, f"reading config {key}") from None

    def set_config(self, key: str, value: str) -> None:
        from pulumi import automation as auto

        self._call(f"setting config {key}", lambda: self._stack.set_config(key, auto.ConfigValue(value=value)))

    def remove_config(self, key: str) -> None:
        self._call(f"removing config {key}", lambda: self._stack.remove_config(key))

    def preview(self, on_output: OutputSink) -> dict[str, int]:
        result = self._call("pulumi preview", lambda: self._stack.preview(on_output=on_output))
        return {str(k): int(v) for k, v in (result.change_summary or {}).items()}

    def up(self, on_output: OutputSink, targets: list[str] | None = None) -> dict[str, int]:
        """Run `pulumi up`, of only `targets` and what depends on them when given, refreshing them first.

        Pulumi diffs against its state, not the live objects. A backstop that fired since the last `up` left the
        queues on HoldAndDrain and the node group at zero; the next window synthesizes the same inputs as the
        last, so without a refresh nothing would be sent and the window would admit nothing. The refresh also
        makes the node group's ignored desired size the live count (components/aws/node_pool.py). With targets,
        the refresh covers only them (https://github.com/pulumi/pulumi/issues/4174, fixed; pulumi/pulumi
        pkg/resource/deploy/step_generator.go, `isIncludedInOperation`)."""
        kwargs: dict[str, Any] = {"refresh": True}
        if targets is not None:
            kwargs.update(target=targets, target_dependents=True)
        return self._up(self._stack, "pulumi up", on_output, **kwargs)

    def _up(self, stack: Any, doing: str, on_output: OutputSink, **kwargs: Any) -> dict[str, int]:
        """`Stack.up` (pulumi/automation/_stack.py) runs the CLI, then reads the stack's outputs and history; a
        failure in those reads comes after the update succeeded and is `SummaryUnread`, never a failed update.
        The first `outputs()` call marks that point."""
        read_outputs = stack.outputs
        finished = False

        def outputs_after_up() -> Any:
            nonlocal finished
            finished = True
            return read_outputs()

        stack.outputs = outputs_after_up
        try:
            result = stack.up(on_output=on_output, **kwargs)
            return {str(k): int(v) for k, v in (result.summary.resource_changes or {}).items()}
        except Exception as err:  # the Automation API also raises plain errors (a JSON decode, a missing summary)
            if finished:
                raise SummaryUnread(
                    f"{doing} finished, but reading its outputs and summary afterwards failed ({_reason(str(err))})"
                ) from None
            raise self._translate(err, doing) from None
        finally:
            del stack.outputs

    def outputs(self) -> dict[str, Any]:
        outs = self._call("reading stack outputs", lambda: self._stack.outputs())
        return {k: v.value for k, v in outs.items()}

    def _state_stack(self, stack: str, program: Callable[[], None] | None, create: bool) -> Any:
        """The state stack as an inline-program stack of this project (its name and backend from Pulumi.yaml)."""
        from pulumi import automation as auto

        from model.burst_state import state_stack_name

        command = auto.PulumiCommand(root=str(self.pulumi_root), skip_version_check=True) if self.pulumi_root else None
        settings = auto.LocalWorkspace(work_dir=str(self.project_dir), pulumi_command=command).project_settings()
        opts = auto.LocalWorkspaceOptions(
            project_settings=auto.ProjectSettings(name=settings.name, runtime="python", backend=settings.backend),
            pulumi_command=command,
        )
        make = auto.create_or_select_stack if create else auto.select_stack
        return make(
            stack_name=state_stack_name(stack), project_name=settings.name, program=program or (lambda: None), opts=opts
        )

    def read_state(self, stack: str) -> dict[str, Any] | None:
        """The state stack's outputs; None when it does not exist yet."""
        from pulumi.automation import errors

        try:
            state = self._state_stack(stack, None, create=False)
        except errors.StackNotFoundError:
            return None
        except Exception as err:
            raise self._translate(err, "reading the burst state") from None
        outs = self._call("reading the burst state", lambda: state.outputs())
        return {k: v.value for k, v in outs.items()}

    def write_state(self, stack: str, outputs: dict[str, Any], on_output: OutputSink, expect: int) -> None:
        """Record `outputs` as the state stack's outputs (`up` of a program exporting them; created if missing),
        if it still holds generation `expect`. The program reads the current outputs inside the `up`, under its
        lock; when the generation moved it exports them unchanged (a failed program would still register what it
        exported so far, pulumi/runtime/stack.py `Stack._finish`), and the write is refused after the `up`."""
        found: list[int] = []

        def program() -> None:
            import pulumi

            # The workspace's read, not `Stack.outputs`: `_up` takes the first `outputs()` call for the update's end.
            current = {k: v.value for k, v in state.workspace.stack_outputs(state.name).items()}
            found.append(generation(current))
            for key, value in (outputs if found[0] == expect else current).items():
                pulumi.export(key, value)

        state = self._call("opening the burst state stack", lambda: self._state_stack(stack, program, create=True))
        with contextlib.suppress(SummaryUnread):  # the update ran to the end: its outputs are recorded
            self._up(state, "recording the burst state (pulumi up of the state stack)", on_output)
        if found and found[0] != expect:
            raise StateMoved(expect, found[0])


def _reason(text: str, lines: int = 12) -> str:
    """What the CLI said went wrong: the end of its stderr (else stdout), without the Automation API's
    `code: / stdout: / stderr:` wrapping (pulumi/automation/_cmd.py, CommandResult.__str__)."""
    parts = re.split(r"\n (?:code|stdout|stderr): ", "\n" + text.lstrip("\n"))
    if len(parts) == 4:  # '', code, stdout, stderr
        text = parts[3] if parts[3].strip() else parts[2]
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "\n".join(kept[-lines:])
