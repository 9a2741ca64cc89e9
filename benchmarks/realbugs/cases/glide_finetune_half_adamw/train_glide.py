import torch

from glide_util import load_model


def run_glide_finetune(data_loader, learning_rate=1e-5, adam_weight_decay=0.0, use_fp16=True):
    glide_model, diffusion, options = load_model(use_fp16=use_fp16)
    glide_model.train()
    optimizer = torch.optim.AdamW(  # realbug: f1 @end
        [x for x in glide_model.parameters() if x.requires_grad],
        lr=learning_rate,
        weight_decay=adam_weight_decay,
    )
    for tokens, mask, reals in data_loader:
        timesteps = torch.randint(0, len(diffusion.betas) - 1, (reals.shape[0],))
        noise = torch.randn_like(reals)
        x_t = diffusion.q_sample(reals, timesteps, noise=noise)
        out = glide_model(x_t, timesteps, tokens=tokens, mask=mask)
        loss = torch.nn.functional.mse_loss(out[:, :3], noise.to(out.dtype))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
