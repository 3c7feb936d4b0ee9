from .toy_env import register_toy_env

register_toy_env()
