"""Pack format v0: model, loader and shipped JSON Schemas."""

from .loader import load_pack
from .model import Case, Gates, Pack, Question

__all__ = ["Case", "Gates", "Pack", "Question", "load_pack"]
