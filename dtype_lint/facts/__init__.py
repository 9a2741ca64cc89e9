"""Facts computed once per file and shared by every rule."""
