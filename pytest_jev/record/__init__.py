"""Recording a pack against a backend: plan, pacing, driver, journal, finalise (engine.py runs them)."""
