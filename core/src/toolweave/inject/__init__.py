"""Injection: the few tools a model sees each turn (global groups, intent classifiers
and their fusion, role and status filters, explicit names, model-driven search), capped,
explained and logged."""

from toolweave.catalog import NOT_FOR_HINT, says_what_not
from toolweave.inject._classify import Candidate, Classifier, ToolDoc
from toolweave.inject._docs import tool_doc, tool_docs
from toolweave.inject._fusion import FusionClassifier, IntentConfig, default_classifiers
from toolweave.inject._injector import MAX_TEXT, Injector
from toolweave.inject._rules import RuleClassifier
from toolweave.inject._search import SEARCH_NAME, KeywordClassifier
from toolweave.inject._selection import OFFLINE_HINT, Choice, Dropped, Selection

__all__ = [
    "MAX_TEXT",
    "NOT_FOR_HINT",
    "OFFLINE_HINT",
    "SEARCH_NAME",
    "Candidate",
    "Choice",
    "Classifier",
    "Dropped",
    "FusionClassifier",
    "Injector",
    "IntentConfig",
    "KeywordClassifier",
    "RuleClassifier",
    "Selection",
    "ToolDoc",
    "default_classifiers",
    "says_what_not",
    "tool_doc",
    "tool_docs",
]
