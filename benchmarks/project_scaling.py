"""Time of the whole-program join against the number of files (is it linear?).

    python benchmarks/project_scaling.py [--tree diffusers] [--fractions 0.25,0.5,1] [--check]

On growing prefixes of one corpus tree (benchmarks/corpus.py), in one process: the per-file
summaries (ast parse + summary; the engine computes them during the file's own check), the join
(imports resolved, worlds, returned models, constructor arguments, functions' results, calling
contexts; results and contexts come from each file's flow during its check, so only ``--check``
times them) and how many files the pass
would re-check under worlds. ``--check`` also times the whole check of each prefix (one job, no
cache) with and without the project pass, alternated. One run: compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import CORPUS, ensure_corpus  # noqa: E402


def main() -> None:
    from dtype_lint.project.contexts import call_contexts
    from dtype_lint.project.summary import summarize_tree
    from dtype_lint.project.worlds import Project

    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", default="diffusers")
    parser.add_argument("--fractions", default="0.25,0.5,1")
    parser.add_argument("--check", action="store_true", help="also time check_files with and without the pass")
    options = parser.parse_args()
    tree = next(path for path in ensure_corpus() if path.name.startswith(options.tree))
    files = sorted(tree.rglob("*.py"))
    print(f"{tree.name}: {len(files)} files")
    for fraction in (float(f) for f in options.fractions.split(",")):
        chosen = files[: max(1, int(len(files) * fraction))]
        start = time.perf_counter()
        summaries = {}
        for path in chosen:
            text = path.read_text(encoding="utf-8", errors="replace")
            try:
                parsed = ast.parse(text)
            except (SyntaxError, ValueError):
                parsed = None
            summaries[path.relative_to(CORPUS).as_posix()] = summarize_tree(parsed, text)
        summarized = time.perf_counter() - start
        start = time.perf_counter()
        project = Project(summaries)
        worlds, returned, arguments = project.worlds(), project.returned(), project.arguments()
        values, argument_values = project.values(), project.argument_values()
        contexts = call_contexts(project)  # empty here: the ast-only summaries carry no flow dtypes
        joined = time.perf_counter() - start
        rechecked = ({p for p, _ in worlds} | set(returned) | {p for p, _ in arguments} | set(values)
                     | {p for p, _ in argument_values} | {p for p, _ in contexts})
        print(f"  {len(chosen):5d} files: summaries {summarized:6.2f} s ({1000 * summarized / len(chosen):.2f} ms/file), "
              f"join {joined:6.3f} s ({1000 * joined / len(chosen):.3f} ms/file); "
              f"{len(worlds)} classes with worlds, {len(rechecked)} files to re-check")
        if options.check:
            from dtype_lint.config import Settings
            from dtype_lint.engine import check_files

            work = [(path.relative_to(CORPUS).as_posix(), str(path)) for path in chosen]
            timings = {False: [], True: []}
            for project in (False, True, False, True):
                start = time.perf_counter()
                check_files(work, Settings(), jobs=1, project=project)
                timings[project].append(time.perf_counter() - start)
            local, whole = min(timings[False]), min(timings[True])
            print(f"         check: file-local {local:6.2f} s, with the project pass {whole:6.2f} s "
                  f"(x{whole / local:.3f})")


if __name__ == "__main__":
    main()
