import argparse

from predictor import Predictor

parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
args = parser.parse_args()
predictor = Predictor(fp16=args.fp16)
predictor.warmup()
