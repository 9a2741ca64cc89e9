"""The runtime companion behind ``dtype-lint confirm``: run the program, observe it, give verdicts.

Two halves that never share a process:

- the parent (``launch``, ``program``, ``verdicts``, ``render``) runs in ``dtype-lint confirm``
  and never imports torch;
- the child (``companion`` and what it installs: ``emulation``, ``observer``, ``hooks``,
  ``reach``, ``recorder``) is injected into every Python process of the program through
  ``bootstrap/sitecustomize.py`` and is the only code in dtype-lint that imports torch.

They talk through ``protocol``: a JSON config file going in, per-process JSONL evidence coming out.
"""
