#!/usr/bin/env bash
# Run every scenario under `dtype-lint confirm --device cuda` and write a verdict table.
#
#   runtime/gpu_check.sh [OUTPUT.md]        (default: runtime/gpu_check_results.md)
#
# Needs a CUDA machine with this checkout installed (`pip install -e .`, torch with CUDA).
# Each run is capped at 60 s and the whole check at 7 minutes; the two-rank DTL703 pair runs
# only with two or more GPUs (NCCL cannot put two ranks on one device). Last, two issue-15
# programs run with --device cpu and CUDA_VISIBLE_DEVICES="" on the CUDA build: the emulation
# must survive a CUDA build whose every CUDA initialisation fails (no "No CUDA GPUs" rows).
set -u
cd "$(dirname "$0")/.."
OUT="${1:-runtime/gpu_check_results.md}"
WORK="$(mktemp -d)"
DEADLINE=$(( $(date +%s) + 420 ))
PY="${PYTHON:-python}"
# DEVICE=cpu is a dry run of this script's plumbing on a machine without CUDA.
DEVICE="${DEVICE:-cuda}"

if [[ "$DEVICE" == cuda ]] && ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu_check: torch sees no CUDA device; nothing to check" >&2
    exit 2
fi
GPUS=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
[[ "$DEVICE" == cpu ]] && GPUS=2  # the dry run emulates CUDA, gloo carries the two ranks

run_one() {  # name, then the program
    local name="$1"; shift
    local left=$(( DEADLINE - $(date +%s) ))
    if (( left < 20 )); then
        echo "{\"skipped\": \"time budget spent\"}" > "$WORK/$name.json"
        return
    fi
    local cap=$(( left < 60 ? left : 60 ))
    timeout $(( cap + 15 )) "$PY" -m dtype_lint confirm --quiet --device "${DEVICE}" --format json \
        --timeout "$cap" -- "$@" > "$WORK/$name.json" 2> "$WORK/$name.err"
    echo $? > "$WORK/$name.rc"
}

for path in runtime/scenarios/*.py; do
    name="$(basename "$path" .py)"
    case "$name" in
        dtl703_*)
            if (( GPUS >= 2 )); then
                run_one "$name" torchrun --nproc-per-node 2 "$path"
            else
                echo "{\"skipped\": \"needs 2 GPUs, found $GPUS\"}" > "$WORK/$name.json"
            fi
            ;;
        *) run_one "$name" "$path" ;;
    esac
done

# Issue 15 point 1 on a real CUDA build: with no GPU visible, every CUDA initialisation raises
# (what a CUDA build does on a machine without a driver); confirm --device cpu must still run the
# optimizers, the pinned-memory DataLoader and the torch.accelerator-picked device.
if [[ "$DEVICE" == cuda ]]; then
    for path in tests/data/confirm/adam_dataloader.py tests/data/confirm/accelerator_device.py; do
        name="hidden_gpu_$(basename "$path" .py)"
        CUDA_VISIBLE_DEVICES="" DEVICE=cpu run_one "$name" "$path"
    done
fi

DEVICE="$DEVICE" "$PY" - "$WORK" "$OUT" <<'PYEOF'
import json, os, re, sys, platform
work, out = sys.argv[1], sys.argv[2]
import torch
rows = []
for name in sorted(n[:-5] for n in os.listdir(work) if n.endswith(".json")):
    scenario = f"runtime/scenarios/{name}.py"
    source = open(scenario).read().splitlines() if os.path.exists(scenario) else []
    expected = ", ".join(f"{m.group(1)}@{i}" for i, l in enumerate(source, 1) for m in [re.search(r"#\s*defect:\s*(DTL\d{3})", l)] if m) or "clean"
    if name.startswith("hidden_gpu_"):
        expected = "runs on a CUDA build with no GPU visible (--device cpu)"
    try:
        report = json.load(open(os.path.join(work, name + ".json")))
    except ValueError:
        err = open(os.path.join(work, name + ".err")).read().strip().splitlines()[-1:] or ["no output"]
        rows.append((name, expected, "ERROR", err[0][:120]))
        continue
    if "skipped" in report:
        rows.append((name, expected, "skipped", report["skipped"]))
        continue
    verdicts = "; ".join(f"{f['code']}@{f['line']} {f['verdict']}" for f in report["findings"]) or "no findings"
    extra = "; ".join(f"runtime-only {r['name']}@{r['line']}" for r in report["runtime_only"])
    rows.append((name, expected, verdicts + (f"; {extra}" if extra else ""), report["run"]["outcome"]))
with open(out, "w") as handle:
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device (dry run)"
    handle.write(f"# confirm --device {os.environ.get('DEVICE', 'cuda')} on the scenarios\n\n{device}, torch {torch.__version__}, "
                 f"Python {platform.python_version()}\n\n| scenario | defect line | verdicts | run |\n|---|---|---|---|\n")
    for row in rows:
        handle.write("| " + " | ".join(str(c).replace("|", "/") for c in row) + " |\n")
print(open(out).read())
PYEOF
rm -rf "$WORK"
