"""A program that starts a grandchild in a session of its own (out of reach of killpg), writes
"<its pid> <grandchild pid>" to the file named by its argument, then waits forever."""
import os
import subprocess
import sys
import time

import torch  # noqa: F401  (a training program: the companion is in this process)

grandchild = subprocess.Popen(["sleep", "600"], start_new_session=True)
with open(sys.argv[1] + ".tmp", "w") as handle:
    handle.write(f"{os.getpid()} {grandchild.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(0.1)
