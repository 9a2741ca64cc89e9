# realbugs-case: bug | family: 2,6 | shape: 2 | twin: -
# source: https://github.com/innnky/so-vits-svc/issues/11
# report: fp16_run made the default: torch.stft under autocast -> cuFFT only supports dimensions whose sizes are powers of two when computing in half precision, signal size [1280]
import torch


def spectrogram_torch(y, n_fft, hop_size, win_size, center=False):
    window = torch.hann_window(win_size).to(dtype=y.dtype, device=y.device)
    y = torch.nn.functional.pad(y.unsqueeze(1), (int((n_fft - hop_size) / 2),) * 2, mode="reflect").squeeze(1)
    spec = torch.stft(  # realbug: s2 f6
        y, n_fft, hop_length=hop_size, win_length=win_size, window=window,
        center=center, pad_mode="reflect", normalized=False, onesided=True, return_complex=True,
    )
    return spec.abs().pow(2).add(1e-6).sqrt()
