"""Inputs shared by several test files: MLIR snippets, model files."""

import sys
from pathlib import Path
from typing import Any


def load_get_model(folder: Path, module: str) -> Any:
    """`get_model()` of `folder/<module>.py`, imported without leaving it in sys.modules."""
    sys.path.insert(0, str(folder))
    try:
        loaded = __import__(module)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(module, None)
    return loaded.get_model()

#: Elementwise add of two 4-element tensors.
ADD = """\
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>)
      -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""

#: A linalg.generic with a runtime assertion (division by zero): accel-assert-to-error-return.
SAFE_DIV = """
func.func @safe_div(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                        affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %ok = arith.cmpf one, %y, %zero : f32
    cf.assert %ok, "division by zero"
    %q = arith.divf %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def matmul_source(name: str, m: int, k: int, n: int, *, zero: str = "%z",
                  init: str = "%f") -> str:
    """`func.func @name(A: MxK, B: KxN) -> MxN` as a zero-filled linalg.matmul."""
    a, b, c = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    return (f"func.func @{name}(%a: {a}, %b: {b}) -> {c} {{\n"
            f"  {zero} = arith.constant 0.0 : f32\n"
            f"  %e = tensor.empty() : {c}\n"
            f"  {init} = linalg.fill ins({zero} : f32) outs(%e : {c}) -> {c}\n"
            f"  %r = linalg.matmul ins(%a, %b : {a}, {b}) outs({init} : {c}) -> {c}\n"
            f"  return %r : {c}\n}}")


def sum_source(name: str, n: int) -> str:
    """`func.func @name(x: n x f32) -> f32` summing x with a linalg.generic reduction."""
    return f"""
func.func @{name}(%x: tensor<{n}xf32>) -> tensor<f32> {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                       iterator_types = ["reduction"]}}
      ins(%x : tensor<{n}xf32>) outs(%init : tensor<f32>) {{
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }} -> tensor<f32>
  return %r : tensor<f32>
}}"""


def mlp_class(inputs: int, hidden: int, outputs: int) -> type:
    """`class MLP(nn.Module)`: fc1 -> ReLU -> fc2 with these widths (torch imported here,
    so test files can skip cleanly without it)."""
    import torch

    class MLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(inputs, hidden)
            self.fc2 = torch.nn.Linear(hidden, outputs)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc2(torch.relu(self.fc1(x)))

    return MLP


def write_mlp_model_file(path: Path, inputs: int, hidden: int, outputs: int, *,
                         batch: int, activation: str = "ReLU") -> Path:
    """A model file for accel-compile (`get_model(batch_size)`): a seeded
    Linear -> `torch.nn.<activation>` -> Linear MLP in eval mode and a random input."""
    path.write_text(
        "import torch\n"
        f"def get_model(batch_size={batch}):\n"
        "    torch.manual_seed(0)\n"
        f"    m = torch.nn.Sequential(torch.nn.Linear({inputs}, {hidden}), "
        f"torch.nn.{activation}(), torch.nn.Linear({hidden}, {outputs}))\n"
        f"    return m.eval(), (torch.randn(batch_size, {inputs}),)\n")
    return path


def wrapped(model: Any, call: Any) -> Any:
    """An eval-mode `nn.Module` holding `model` whose forward is `call(model, x)` (e.g. a
    transformers model's logits or hidden state as one tensor)."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return call(self.model, x)

    return Wrapped().eval()
