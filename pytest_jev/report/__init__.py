"""Renderers: pure functions of run payloads (terminal, JSON); they never compute metrics."""
