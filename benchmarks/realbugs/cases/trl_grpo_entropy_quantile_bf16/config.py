from dataclasses import dataclass


@dataclass
class GRPOConfig:
    bf16: bool = True
    top_entropy_quantile: float = 0.2
