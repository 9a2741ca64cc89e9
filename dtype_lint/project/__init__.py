"""Whole-program analysis: the files given to ``dtype-lint check`` as one program.

summary.py  one file -> its summary (classes, functions, imports, casts), cached with its findings
worlds.py   the summaries joined: imports resolved, each class's precision worlds
seeding.py  how a world enters a file's dtype flow (``ctx.worlds``)
recheck.py  the pass in the pipeline: files re-checked under their worlds, findings added
"""
