"""Backends answer typed questions about a state. Replay never imports this package."""
