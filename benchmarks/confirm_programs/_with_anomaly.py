"""Run a program under autograd anomaly detection (NaN checks on), as people debug today:
``python _with_anomaly.py PROGRAM [ARGS]``. The baseline confirm's overhead is measured against."""
import runpy
import sys

import torch

torch.autograd.set_detect_anomaly(True, check_nan=True)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
