import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--cpu", action="store_true")
parser.add_argument("--bf16", action="store_true")
args = parser.parse_args()
