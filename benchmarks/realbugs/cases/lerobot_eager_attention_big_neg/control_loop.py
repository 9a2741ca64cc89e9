import torch

from paligemma_with_expert import eager_attention_forward


class Policy(torch.nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.q = torch.nn.Linear(dim, dim)
        self.k = torch.nn.Linear(dim, dim)
        self.v = torch.nn.Linear(dim, dim)

    def select_action(self, obs, mask):
        q, k, v = self.q(obs), self.k(obs), self.v(obs)
        return eager_attention_forward(mask, q[:, None], k[:, None], v[:, None], q.shape[-1])


def control_loop(policy, robot, device="cuda", use_amp=True):
    while True:
        obs, mask = robot.capture()
        with torch.inference_mode(), torch.autocast(device_type=device, enabled=use_amp):
            action = policy.select_action(obs.to(device), mask.to(device))
        robot.send_action(action)
