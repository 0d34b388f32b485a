"""Injection: the few tools a model sees each turn (global groups, intent classifiers
and their fusion, role and status filters, explicit names, model-driven search), capped,
explained and logged."""

from toolweave.inject._classify import Candidate, Classifier, ToolDoc

__all__ = ["Candidate", "Classifier", "ToolDoc"]
