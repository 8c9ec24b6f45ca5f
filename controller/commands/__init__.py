"""The controller's commands, one module each: its flags (``add_parser``) and what it does."""
