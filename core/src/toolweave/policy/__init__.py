"""Permission rules and approval: which calls run, which are refused, and which wait
for a person.

Rules are written as users of coding agents write them — a tool name
(``read_file``), a glob of names (``mcp__github__*``), or a tool with an argument
pattern (``bash(git status)``, ``bash(npm run test *)``, ``read_file(src/**)``,
``write_file(*.md)``) — in a :class:`PolicyConfig` (TOML or JSON), with more per
role. ``deny`` beats ``ask`` beats ``allow``; a call no rule matches runs when its
tool is read-only and asks otherwise (both configurable). Shell commands are parsed
(``pip install 'toolweave[policy]'``): a compound command is allowed only when every
part is, and what cannot be read is never allowed by a pattern. Paths are compared
after they are resolved against the workspace.

``ask`` goes to the host's approver; a host that cannot answer now gets a pending
result and completes the call later with :meth:`Session.resume
<toolweave.Session.resume>`. "Always allow" answers become rules of the session,
recorded through a recorder (:func:`flag_recorder` for a registry center).

Example:
    ```python
    from toolweave.policy import attach_policy

    hook = attach_policy(session, {"allow": ["bash(git status)"], "deny": ["bash(rm *)"]})
    ```

See ``docs/permissions.md``.
"""

from toolweave.policy._approval import (
    Approval,
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    FlagStore,
    RecordedRule,
    RuleRecorder,
    call_digest,
    flag_recorder,
)
from toolweave.policy._ask import ask_user_approver, describe_request, terminal_approver
from toolweave.policy._config import Effect, PolicyConfig, RoleRules, Rule, parse_rule
from toolweave.policy._decide import Decision, EntryRules, Policy
from toolweave.policy._hook import AsyncPolicyHook, PolicyHook, attach_policy

__all__ = [
    "Approval",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "AsyncPolicyHook",
    "Decision",
    "Effect",
    "EntryRules",
    "FlagStore",
    "Policy",
    "PolicyConfig",
    "PolicyHook",
    "RecordedRule",
    "RoleRules",
    "Rule",
    "RuleRecorder",
    "ask_user_approver",
    "attach_policy",
    "call_digest",
    "describe_request",
    "flag_recorder",
    "parse_rule",
    "terminal_approver",
]
