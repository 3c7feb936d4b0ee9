"""A run's config: its checks, a resumed run's config, saved YAML."""
