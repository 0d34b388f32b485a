"""The retrieval signals learned from tool documents: the kinds of values a request states
against the parameters that take them, prerequisites within a group (sign in, change the
current directory, look up an argument), and the fusion's share for a tool one
classifier did not rank."""

from __future__ import annotations

from toolweave.inject import Candidate, FusionClassifier, IntentConfig, ToolDoc, tool_doc
from toolweave.inject._deps import prerequisites
from toolweave.inject._fusion import fuse
from toolweave.inject._lexical import LexicalClassifier, doc_words
from toolweave.inject._text import parameter_types, value_types, words


def test_value_types_of_requests() -> None:
    """Dates (ISO, written, relative), times, e-mail addresses, URLs, file paths and
    amounts are told apart; a URL is not also a path; plain numbers are nothing."""
    assert value_types("the weather on 2023-03-01") == ["__value_date"]
    assert value_types("on March 5th 2023") == ["__value_date"]
    assert value_types("the 5th of march") == ["__value_date"]
    assert value_types("next Monday at 5pm") == ["__value_date", "__value_time"]
    assert value_types("at 12:30") == ["__value_time"]
    assert value_types("mail bob@example.com") == ["__value_email"]
    assert value_types("open https://example.com/a/b") == ["__value_url"]
    assert value_types("run d:/play/test.py") == ["__value_path"]
    assert value_types("show notes.txt") == ["__value_path"]
    assert value_types("it costs $30") == ["__value_money"]
    assert value_types("add 42 and 7") == []


def test_parameter_types_from_parameter_words() -> None:
    """A parameter's name and description say what it takes."""
    assert parameter_types(words("start_date: The first day (YYYY-MM-DD)")) == ["__value_date"]
    assert parameter_types(words("file_name: The file to read")) == ["__value_path"]
    assert parameter_types(words("query: What to look for")) == []
    doc = tool_doc(
        "t",
        "A tool.",
        {"type": "object", "properties": {"when": {"type": "string", "description": "A date"}}},
    )
    assert "__value_date" in doc_words(doc)
    assert "__value_date" not in doc_words(doc, values=False)


def test_a_stated_date_prefers_the_tool_that_takes_one() -> None:
    """Two tools alike but for a date parameter: a request with a date ranks the one
    that takes it first; without the value kinds, the shorter document wins."""
    docs = [
        tool_doc(
            "book_table",
            "Book a table at a restaurant.",
            {"type": "object", "properties": {"party": {"description": "How many people"}}},
        ),
        tool_doc(
            "reserve_table",
            "Book a table at a restaurant.",
            {
                "type": "object",
                "properties": {
                    "party": {"description": "How many people"},
                    "day": {"description": "The date of the booking, as YYYY-MM-DD"},
                },
            },
        ),
    ]
    query = "book a table at a restaurant on 2024-05-01"
    plain = LexicalClassifier(value_weight=0.0)
    plain.index(docs)
    assert [c.name for c in plain.rank(query)] == ["book_table", "reserve_table"]
    typed = LexicalClassifier()
    typed.index(docs)
    assert [c.name for c in typed.rank(query)] == ["reserve_table", "book_table"]


def _doc(tool: str, description: str, group: str, /, **params: str) -> ToolDoc:
    schema = {"type": "object", "properties": {k: {"description": v} for k, v in params.items()}}
    return tool_doc(tool, description, schema, groups=[group])


def _social() -> list[ToolDoc]:
    return [
        _doc("authenticate_user", "Log the user in.", "social", username="Name", password="Pw"),
        _doc("get_login_status", "Whether the user is logged in.", "social"),
        _doc("post_message", "Post a message for the authenticated user.", "social", text="Text"),
        _doc("get_user_id", "The id of a user from the name.", "social", name="The name"),
        _doc("follow", "Follow someone.", "social", user_id="The id of the user to follow"),
        _doc("cd", "Change the current working directory.", "files", folder="Where to"),
        _doc("ls", "List the files of the current directory.", "files"),
        _doc("grep", "Search lines of a file in the local directory.", "files", pattern="What"),
        _doc("mkdir", "Make a directory.", "files", name="Its name"),
        _doc("login", "Sign in to the shop.", "shop"),
        _doc("select_project", "Select the active project for the session.", "tracker"),
        _doc("list_issues", "List the issues of the active project.", "tracker"),
        _doc("set_owner", "Set the current user to someone.", "tracker", user="Who"),
    ]


def test_prerequisites_within_groups() -> None:
    """A group's sign-in tool comes before its other tools (not a status check); the
    tool that changes the current directory before those that work in it; a look-up
    before the tool whose parameter it gives; never across groups."""
    requires = prerequisites(_social())
    assert "authenticate_user" in requires["post_message"]
    assert "authenticate_user" in requires["get_login_status"]
    assert "get_login_status" not in requires.get("post_message", ())
    assert "authenticate_user" not in requires.get("authenticate_user", ())
    assert "get_user_id" in requires["follow"]
    assert "get_user_id" not in requires.get("post_message", ())
    assert requires["ls"] == ("cd",)
    assert requires["grep"] == ("cd",)
    assert "mkdir" not in requires  # works on no current directory
    assert "login" not in requires.get("post_message", ())  # another group
    assert requires["list_issues"] == ("select_project",)
    assert "set_owner" not in requires.get("list_issues", ())  # sets a user, not a project
    assert prerequisites(_social(), max_group=2) == {}


def test_fusion_brings_prerequisites_of_its_best_candidates() -> None:
    """Asked to post a message, the fusion also offers the group's sign-in tool, with
    the reason; with prerequisites off, it does not."""
    docs = _social()
    on = FusionClassifier([LexicalClassifier()], prerequisites=0.7)
    on.index(docs)
    ranked = on.rank("post the message 'hello' to my feed", k=3)
    names = [c.name for c in ranked]
    assert names[0] == "post_message"
    assert "authenticate_user" in names
    auth = next(c for c in ranked if c.name == "authenticate_user")
    assert "before post_message" in auth.reason
    off = FusionClassifier([LexicalClassifier()])
    off.index(docs)
    assert "authenticate_user" not in [
        c.name for c in off.rank("post the message 'hello' to my feed", k=3)
    ]


def test_fusion_share_for_a_tool_a_member_cut_off() -> None:
    """A tool one member did not rank gets that member's lowest answered share when the
    member's answer was cut at the depth, and nothing when it answered fewer."""
    a = ("a", 1.0, [Candidate("x", 1.0), Candidate("z", 0.9)])
    b = ("b", 0.9, [Candidate("w", 1.0), Candidate("v", 0.5)])
    assert fuse([a, b], method="relative")[0].name == "x"
    assert fuse([a, b], method="relative", missing=1.0, depth=2)[0].name == "w"
    assert fuse([a, b], method="relative", missing=1.0, depth=3)[0].name == "x"


def test_intent_config_carries_the_new_settings() -> None:
    """The settings are in IntentConfig and reach the fusion and BM25."""
    from toolweave.inject import default_classifiers

    fusion = default_classifiers(
        {"prerequisites": 0.5, "missing": 0.0, "value_weight": 0.0, "embed": False}
    )
    assert isinstance(fusion, FusionClassifier)
    assert (fusion.prerequisites, fusion.missing) == (0.5, 0.0)
    lexical = fusion.classifiers[0]
    assert isinstance(lexical, LexicalClassifier)
    assert lexical.value_weight == 0.0
    assert IntentConfig().prerequisites > 0
    assert IntentConfig().value_weight > 0
