"""Host side of saatp: tensors -> quantized chunks -> frames -> switch -> frames -> tensors."""

# torch.distributed backend "saatp": registered now if torch.distributed is already imported,
# else as soon as it is (never imports torch itself; never fails the import of host_agent).
try:
    from .torch_backend import register as _register_torch_backend

    _register_torch_backend()
except Exception:  # noqa: BLE001
    pass
