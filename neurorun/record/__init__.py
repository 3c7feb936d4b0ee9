"""The run folder: its layout and lock, checkpoint files, the state record."""
