"""The registry side: results files, evidence, index.json, scoreboard, derived gates, audits."""
