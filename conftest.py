"""Settings for running this repo's own packs live in pyproject.toml ([tool.pytest.ini_options]:
jev_backend = "sparrow", the embedded backend whose recordings are committed under results/)."""
