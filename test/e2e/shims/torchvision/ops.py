"""`torchvision.ops` stub: every op raises (docs/e2e.md)."""


def __getattr__(name: str):
    def missing(*args, **kwargs):
        raise ModuleNotFoundError(f"torchvision.ops.{name}: torchvision is not installed "
                                  "(accel's e2e harness uses a stub)")
    return missing
