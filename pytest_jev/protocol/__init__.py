"""The evaluation protocol: frozen splits, rubric fingerprints, tune/held-out thresholds with a
leakage guard, selective metrics with Wilson intervals, reports and their merge."""

PROTOCOL_VERSION = 1
