"""Whole-program analysis: the files given to ``dtype-lint check`` as one program.

summary.py       one file -> its summary (classes, functions, imports, casts), cached with its findings
handoffs.py      the part of a summary where a model is handed to a framework that casts it
astnames.py      dotted names in CPython's ``ast`` (shared by the two above)
results.py       one file's flow -> what each of its functions returns (the summary's ``results``)
worlds.py        the summaries joined: imports resolved, each class's precision worlds
config_files.py  configuration files a program names (a DeepSpeed JSON), read by the join
recheck.py       the pass in the pipeline: files re-checked under their worlds, findings added

What the pass hands each file's flow is defined on the facts side, which never imports this
package: facts/flow/seeding.py (how a world or another file's function result enters the flow,
``ctx.worlds``) and facts/flow/checkpoint_loads.py (what a ``torch.load`` of a project's
low-precision save gives).
"""
