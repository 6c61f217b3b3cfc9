"""Backends answer typed questions about a state. The kinds and the catalog are light; a provider
module (httpx, a model runtime) loads only when its backend is built."""
