"""The flags the project's shell scripts pass when they launch a file (facts/launch_scripts.py),
and DTL301's use of them: a bfloat16 model under `--fp16` on the command line is low confidence
when every launch the project ships leaves `--fp16` off (InternVL's scripts all pass
`--bf16 True`), and stays reported when one passes it (Qwen-VL#372's `finetune_lora.sh` did),
passes its caller's arguments on, or no script launches the file."""

from __future__ import annotations

import textwrap

from dtype_lint.config import Settings
from dtype_lint.engine import check_text
from dtype_lint.facts import launch_scripts
from dtype_lint.findings import Confidence

TRAIN = textwrap.dedent('''\
    import torch
    import transformers


    def train():
        parser = transformers.HfArgumentParser((transformers.TrainingArguments,))
        (training_args,) = parser.parse_args_into_dataclasses()
        model = transformers.AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.bfloat16)
        trainer = transformers.Trainer(model=model, args=training_args, train_dataset=[])
        trainer.train()


    if __name__ == "__main__":
        train()
''')

BF16_LAUNCH = textwrap.dedent('''\
    #!/bin/bash
    GPUS=${GPUS:-8}
    # --fp16 True would not fit this model
    torchrun --nproc_per_node=${GPUS} \\
      internvl/train/finetune.py \\
      --model_name_or_path "./pretrained/model" \\
      --bf16 True \\
      --deepspeed "zero_stage1_config.json" \\
      2>&1 | tee -a "log.txt"
''')


def _project(tmp_path, scripts: dict[str, str]):
    (tmp_path / "internvl" / "train").mkdir(parents=True)
    train = tmp_path / "internvl" / "train" / "finetune.py"
    train.write_text(TRAIN)
    for name, text in scripts.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    launch_scripts._launches_under.cache_clear()
    return train


def _dtl301(train, tmp_path, low=False):
    settings = Settings(select=("DTL301",), root=str(tmp_path),
                        min_confidence=Confidence.LOW if low else Confidence.MEDIUM)
    report = check_text(TRAIN, str(train), settings)
    assert not report.internal_errors, report.internal_errors
    return report.findings


def test_every_launch_passing_bf16_makes_it_low(tmp_path):
    train = _project(tmp_path, {"shell/stage1/finetune_full.sh": BF16_LAUNCH,
                                "shell/stage2/finetune_lora.sh": BF16_LAUNCH.replace("--bf16 True", "--bf16=True")})
    assert _dtl301(train, tmp_path) == []
    low = _dtl301(train, tmp_path, low=True)
    assert [f.confidence for f in low] == [Confidence.LOW]
    assert "2 launch command(s)" in low[0].message and "shell/stage1/finetune_full.sh:4" in low[0].message


def test_a_launch_passing_fp16_or_the_callers_arguments_keeps_it(tmp_path):
    for other in ("--fp16 True", "--fp16", "--fp16 ${USE_FP16}", '"$@"'):
        train = _project(tmp_path / other.strip('"$').replace(" ", "_").replace("{", "").replace("}", ""),
                         {"shell/a.sh": BF16_LAUNCH,
                          "shell/b.sh": BF16_LAUNCH.replace("--bf16 True", other)})
        root = train.parents[2]
        assert [f.confidence for f in _dtl301(train, root)] == [Confidence.MEDIUM], other


def test_no_script_launching_the_file_keeps_it(tmp_path):
    # a script that runs another file, and one whose relative path does not resolve from its folder
    train = _project(tmp_path, {"shell/eval.sh": BF16_LAUNCH.replace("finetune.py", "evaluate.py"),
                                "elsewhere/deep/x.sh": BF16_LAUNCH.replace("internvl/train/", "train/")})
    assert [f.confidence for f in _dtl301(train, tmp_path)] == [Confidence.MEDIUM]


def test_flags_of_a_launch_command(tmp_path):
    train = _project(tmp_path, {"run.sh": "cd x; python internvl/train/finetune.py --a 1 --b=2 --c --d False | tee log\n"})
    found = launch_scripts._launches_under(str(tmp_path))[str(train)]
    assert [(launch.flags, launch.open, launch.where) for launch in found] == [
        ((("a", "1"), ("b", "2"), ("c", None), ("d", "False")), False, "run.sh:1")]
    assert found[0].asks("c") and not found[0].asks("d") and not found[0].asks("fp16")


def test_scripts_that_are_not_regular_files_are_skipped_without_blocking(tmp_path):
    # a checkout may hold a symlink named *.sh to a device or outside the tree, or a FIFO: the walk
    # must neither block on it nor read without end; a regular script beside them is still read
    import os
    import stat

    train = _project(tmp_path, {"shell/b.sh": BF16_LAUNCH})
    os.symlink("/dev/zero", tmp_path / "shell" / "zero.sh")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.sh"
    outside.write_text(BF16_LAUNCH.replace("--bf16 True", "--fp16 True"))
    os.symlink(outside, tmp_path / "shell" / "outside.sh")
    os.mkfifo(tmp_path / "shell" / "pipe.sh")
    assert stat.S_ISFIFO(os.stat(tmp_path / "shell" / "pipe.sh").st_mode)
    launch_scripts._launches_under.cache_clear()
    found = launch_scripts._launches_under(str(tmp_path))[str(train)]
    assert [launch.where for launch in found] == ["shell/b.sh:4"]  # not the outside script's --fp16


def test_a_changed_launch_script_invalidates_the_cached_report(tmp_path):
    import json
    import subprocess
    import sys

    from dtype_lint.cache import DIRECTORY_NAME

    _project(tmp_path, {"shell/a.sh": BF16_LAUNCH})

    def codes():
        run = subprocess.run([sys.executable, "-m", "dtype_lint", "check", "--select", "DTL301", "--format", "json",
                              "internvl"], cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode in (0, 1), run.stderr
        return [finding["code"] for finding in json.loads(run.stdout)]

    assert codes() == []  # every launch passes --bf16: low, not reported at the default
    assert (tmp_path / DIRECTORY_NAME).is_dir()  # the run used a cache
    assert codes() == []  # from the cache
    (tmp_path / "shell" / "a.sh").write_text(BF16_LAUNCH.replace("--bf16 True", "--fp16 True"))
    assert codes() == ["DTL301"]  # the script changed, the file did not: checked again
