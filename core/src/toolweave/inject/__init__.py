"""Injection: the few tools a model sees each turn (global groups, intent classifiers
and their fusion, role and status filters, explicit names, model-driven search), capped,
explained and logged."""

from toolweave.inject._classify import Candidate, Classifier, ToolDoc
from toolweave.inject._docs import tool_doc, tool_docs
from toolweave.inject._fusion import FusionClassifier, IntentConfig, default_classifiers
from toolweave.inject._rules import RuleClassifier

__all__ = [
    "Candidate",
    "Classifier",
    "FusionClassifier",
    "IntentConfig",
    "RuleClassifier",
    "ToolDoc",
    "default_classifiers",
    "tool_doc",
    "tool_docs",
]
