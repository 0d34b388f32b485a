"""Tools an operator pushes as an HTTP endpoint: the model's arguments are POSTed as
JSON, the JSON answer is the output.

Every call goes through :func:`toolweave._netguard.guarded_request`: the endpoint's
host is resolved and checked (private, loopback and link-local addresses are refused
unless the endpoint allows them), the request is pinned to the checked address, each
redirect is checked again, and the exchange is bounded in time and size.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from toolweave._netguard import (
    AddressPolicy,
    GuardedResponse,
    address_class,
    guarded_request,
    header_problem,
    literal_address,
)
from toolweave._secrets import strip_userinfo
from toolweave.catalog import ErasedTool, external_tool
from toolweave.center._model import finite, shown_number
from toolweave.errors import CenterError, ErrorKind, ToolError, preview

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "MAX_BYTES",
    "MAX_TIMEOUT",
    "http_tool",
    "validate_endpoint",
]

DEFAULT_TIMEOUT = 10.0
"""Seconds a call may take when the endpoint does not say."""
DEFAULT_MAX_BYTES = 1_000_000
"""Response bytes read when the endpoint does not say."""
MAX_TIMEOUT = 300.0
"""The longest ``timeout`` an endpoint may set."""
MAX_BYTES = 50_000_000
"""The largest ``max_bytes`` an endpoint may set."""

_MAX_URL = 2048
_MAX_HEADERS = 50
_KEYS = ("url", "headers", "timeout", "max_bytes", "allow_private", "allow_loopback")
# The session's deadline for the call leaves the guard's own timeout room to report.
_DEADLINE_MARGIN = 5.0
_EXCERPT = 300
_STATUS_KINDS = {
    429: ErrorKind.RATE_LIMITED,
    502: ErrorKind.UNAVAILABLE,
    503: ErrorKind.UNAVAILABLE,
    504: ErrorKind.UNAVAILABLE,
}


def _number(endpoint: Mapping[str, Any], key: str, default: float, high: float) -> float:
    value = endpoint.get(key, default)
    if not finite(value):  # a NaN, an infinity, an int too large for a float (10**400)
        raise CenterError(
            f"endpoint {key} must be a number of seconds above 0 and at most {high:g} "
            f"(got {shown_number(value)})"
        )
    if not 0 < value <= high:
        raise CenterError(
            f"endpoint {key} must be above 0 and at most {high:g} (got {shown_number(value)})"
        )
    return float(value)


def _check_url(url: object, allow_private: bool, allow_loopback: bool) -> str:
    """``url``, checked; messages show it without its userinfo (a password)."""
    if not isinstance(url, str) or not url:
        raise CenterError("endpoint url must be a non-empty string (an http or https URL)")
    if len(url) > _MAX_URL:
        raise CenterError(f"endpoint url is longer than {_MAX_URL} characters")
    if any(c.isspace() or ord(c) < 32 or c == "\\" for c in url):
        raise CenterError("endpoint url must not contain spaces, control characters or '\\'")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (raises on a port that is not a number in range)
    except ValueError as exc:
        raise CenterError(f"endpoint url {_shown(url)!r} is malformed ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise CenterError(
            f"endpoint url must be http or https, not {parts.scheme or 'scheme-less'} "
            f"({_shown(url)!r})"
        )
    if not host:
        raise CenterError(f"endpoint url {_shown(url)!r} names no host")
    try:
        literal = literal_address(host)
    except ToolError as exc:
        raise CenterError(f"endpoint url: {exc.message}") from None
    if literal is not None:
        kind = address_class(literal)
        policy = AddressPolicy(allow_private=allow_private, allow_loopback=allow_loopback)
        if not policy.allows(kind):
            setting = {"private": "allow_private", "loopback": "allow_loopback"}.get(kind)
            fix = f"set {setting} to reach it" if setting else "it can never be reached"
            article = "an" if kind[0] in "aeiou" else "a"
            raise CenterError(
                f"endpoint url points at {article} {kind.replace('_', '-')} address; {fix}"
            )
    return url


def _shown(url: str) -> str:
    return preview(strip_userinfo(url), 100)


def _check_headers(headers: object) -> dict[str, str]:
    if not isinstance(headers, Mapping):
        raise CenterError("endpoint headers must be an object of header name to string value")
    if len(headers) > _MAX_HEADERS:
        raise CenterError(f"endpoint headers: at most {_MAX_HEADERS} headers")
    for name, value in headers.items():
        problem = header_problem(name, value)
        if problem is not None:
            raise CenterError(f"endpoint headers: {problem}")
    return dict(headers)


def validate_endpoint(endpoint: Mapping[str, Any]) -> dict[str, Any]:
    """Check the endpoint of an HTTP tool and fill in its defaults.

    Args:
        endpoint: ``url`` (http or https, required); ``headers`` (name → value, sent
            with every call); ``timeout`` (seconds, default 10, at most 300);
            ``max_bytes`` (response size, default 1 000 000, at most 50 000 000);
            ``allow_private`` and ``allow_loopback`` (let the URL reach private or
            loopback addresses; default false).

    Returns:
        Every setting, defaults included, as JSON-able data; passing it again returns
        it unchanged.

    Raises:
        CenterError: What is wrong, one problem at a time (an unknown key, a URL that
            is not http(s), a number out of range, a header that cannot be sent, an IP
            literal of a class the endpoint does not allow).
    """
    if not isinstance(endpoint, Mapping):
        raise CenterError("an HTTP tool's endpoint must be an object with at least a url")
    unknown = sorted(str(key) for key in endpoint if key not in _KEYS)
    if unknown:
        raise CenterError(
            f"unknown endpoint setting{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; known: {', '.join(_KEYS)}"
        )
    flags: dict[str, bool] = {}
    for key in ("allow_private", "allow_loopback"):
        value = endpoint.get(key, False)
        if not isinstance(value, bool):
            raise CenterError(f"endpoint {key} must be true or false (got {value!r})")
        flags[key] = value
    max_bytes = endpoint.get("max_bytes", DEFAULT_MAX_BYTES)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise CenterError(f"endpoint max_bytes must be a whole number (got {max_bytes!r})")
    if not 0 < max_bytes <= MAX_BYTES:
        raise CenterError(
            f"endpoint max_bytes must be above 0 and at most {MAX_BYTES} (got {max_bytes})"
        )
    return {
        "url": _check_url(endpoint.get("url"), flags["allow_private"], flags["allow_loopback"]),
        "headers": _check_headers(endpoint.get("headers", {})),
        "timeout": _number(endpoint, "timeout", DEFAULT_TIMEOUT, MAX_TIMEOUT),
        "max_bytes": max_bytes,
        **flags,
    }


def _excerpt(response: GuardedResponse) -> str:
    """A short, one-line view of a body: its error message when it is JSON that has
    one, else its start."""
    text = response.text()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("error", "message", "detail"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                text = value
                break
    return preview(" ".join(text.split()), _EXCERPT)


def _body(response: GuardedResponse) -> Any:
    """A 2xx body: JSON data when it is JSON (by its type, or untyped and parsable),
    else its text."""
    media = response.media_type
    is_json = media == "application/json" or media.endswith("+json")
    text = response.text()
    if not is_json and media:
        return text
    if not text.strip():
        return "" if not is_json else None
    try:
        return json.loads(text)
    except ValueError:
        if not is_json:
            return text
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"the endpoint answered invalid JSON: {preview(' '.join(text.split()), _EXCERPT)}",
            data={"status": response.status},
        ) from None


def _outcome(response: GuardedResponse) -> Any:
    """The output a response means, or the failure it reports."""
    status = response.status
    if not 200 <= status < 300:
        excerpt = _excerpt(response)
        raise ToolError(
            _STATUS_KINDS.get(status, ErrorKind.EXECUTION_ERROR),
            f"the endpoint answered HTTP {status}" + (f": {excerpt}" if excerpt else ""),
            data={"status": status},
        )
    data = _body(response)
    if isinstance(data, dict) and data.get("ok") is False:
        error = data.get("error")
        if isinstance(error, dict):
            error = error.get("message")
        message = error if isinstance(error, str) and error.strip() else None
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            preview(message, 1000)
            if message
            else f"the endpoint reported a failure: {_excerpt(response)}",
            data={"status": status},
        )
    return data


def http_tool(
    name: str, description: str, input_schema: dict[str, Any], endpoint: Mapping[str, Any]
) -> ErasedTool:
    """An external tool (namespace and source ``api``) whose calls POST their validated
    arguments as JSON to ``endpoint["url"]``.

    A 2xx JSON answer is the output, except an object with ``"ok": false``, which fails
    with its ``"error"`` message; a 2xx answer that is not JSON is output as text. HTTP
    429 fails as ``rate_limited``, 502/503/504 as ``unavailable``, any other status as
    ``execution_error``, each with a short excerpt of the body.

    Args:
        name: The tool's id (and the name sessions list it under).
        description: What the model reads.
        input_schema: The JSON Schema of the arguments (an object schema).
        endpoint: Where and how to call; see :func:`validate_endpoint`.

    Raises:
        CenterError: The endpoint or the schema is malformed.
    """
    spec = validate_endpoint(endpoint)
    _check_schema(input_schema)
    policy = AddressPolicy(
        allow_private=spec["allow_private"], allow_loopback=spec["allow_loopback"]
    )
    headers = {"Accept": "application/json", **spec["headers"]}
    url: str = spec["url"]
    seconds: float = spec["timeout"]
    max_bytes: int = spec["max_bytes"]

    async def call(ctx: Any, arguments: dict[str, Any]) -> Any:
        response = await guarded_request(
            "POST",
            url,
            json=arguments,
            headers=headers,
            policy=policy,
            timeout=seconds,
            max_bytes=max_bytes,
        )
        return _outcome(response)

    return external_tool(
        id=name,
        namespace="api",
        description=description,
        input_schema=input_schema,
        call=call,
        source="api",
        timeout=seconds + _DEADLINE_MARGIN,
    )


def _check_schema(schema: object) -> None:
    import jsonschema

    if not isinstance(schema, dict):
        raise CenterError("an HTTP tool's input schema must be a JSON Schema object")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise CenterError(
            f"the input schema is not a valid JSON Schema at {where}: {exc.message}"
        ) from None
