"""The evaluation protocol: tune/held-out thresholds with a leakage guard, selective metrics with
Wilson intervals, reports and their merge (frozen splits are packs/cases.py's, rubric
fingerprints rubric.py's)."""

PROTOCOL_VERSION = 1
