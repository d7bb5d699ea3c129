"""What a doc page's examples assume and do not show, run before its first block.

test_docs_examples.py runs each page's blocks in order in one namespace, in a fresh folder;
a page's prelude (Python) runs there first: it defines the names the page's snippets use
(`model`, `x`, a module to add sections to) and writes the input files its commands name
(`mlp.mlir`, `w.npy`). Small random-weight models only: nothing is downloaded.
"""

from __future__ import annotations

_MLP = '''
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10)).eval()
x = torch.randn(4, 784)
'''

_MLP_MLIR = '''\
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
func.func @mlp(%x: tensor<?x128xf32>, %w: tensor<128x32xf32>, %b: tensor<32xf32>)
    -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x128xf32>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %m = linalg.matmul ins(%x, %w : tensor<?x128xf32>, tensor<128x32xf32>)
                     outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<?x32xf32>, tensor<32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %z = arith.maximumf %s, %zero : f32
    linalg.yield %z : f32
  } -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}
'''

_IN_MLIR = """\
func.func @double(%a: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %v = affine.load %a[%i] : memref<4xf32>
    %w = arith.addf %v, %v : f32
    affine.store %w, %a[%i] : memref<4xf32>
  }
  return
}
"""

_MATMUL_MLIR = """\
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %m = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x2xf32>)
                     outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %m : tensor<2x2xf32>
}
"""

_TRAIN_PY = """\
import torch


def get_training(batch_size=8):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = lambda model, x, y: torch.nn.functional.mse_loss(model(x), y)  # noqa: E731
    return model, loss_fn, optimizer, (torch.randn(batch_size, 16), torch.randn(batch_size, 1))
"""

_ADD_MLIR = """\
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

PRELUDE: dict[str, str] = {
    "training.md": '''
import torch
from train import get_training  # train.py: the page's own file, written before any block runs


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


torch.manual_seed(0)
data = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(3)]
loader = [(torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,))) for _ in range(2)]
''',
    "python-api.md": '''
import accel
import torch
from transformers import GPT2Config, GPT2LMHeadModel


class MyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn = torch.nn.Linear(784, 10), torch.nn.BatchNorm1d(10)

    def forward(self, x):
        return torch.relu(self.bn(self.fc(x)))


torch.manual_seed(0)
x, w = torch.randn(8, 784), torch.randn(784, 10)
fn2 = accel.compile(lambda x, w: (x @ w, torch.relu(x @ w)), (x, w))
config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=64)
prompt = torch.randint(0, 1000, (1, 8))
token, steps = prompt[:, -1:], 3
''',
    # the page registers `count-ops`; so may test_pass_api.py's plugin, in the same process
    "passes.md": '''
from accel.passes.base import _REGISTRY
_saved = _REGISTRY.pop("count-ops", None)
''',
    "accel-compile.md": f'''
import torch
from pathlib import Path
Path("train.py").write_text({_TRAIN_PY!r})
Path("add.mlir").write_text({_ADD_MLIR!r})
x = torch.randn(8, 784)
''',
    "README.md": f'''
import numpy as np
from pathlib import Path
Path("in.mlir").write_text({_IN_MLIR!r})
Path("matmul.mlir").write_text({_MATMUL_MLIR!r})
a = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
b = np.arange(7, 13, dtype=np.float32).reshape(3, 2)   # a @ b = [[58, 64], [139, 154]]
np.save("w.npy", b)
''',
    "cpu-jit.md": f'''
import numpy as np
from pathlib import Path
Path("mlp.mlir").write_text({_MLP_MLIR!r})
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 128), dtype=np.float32)
w = rng.standard_normal((128, 32), dtype=np.float32)
b = rng.standard_normal(32, dtype=np.float32)
np.save("w.npy", w)
''',
    "cache.md": "import accel\n" + _MLP,
    "precision.md": "import accel\n" + _MLP,
    "dialects/mncore.md": '''
import numpy as np
array = np.arange(16, dtype=np.float32).reshape(8, 2)
''',
    "dialects/rdu.md": '''
from accel.context import make_context
from accel.ir import Location, Module
_ctx = make_context()
_ctx.__enter__()  # the snippet builds IR in the current context, at an unknown location
_loc = Location.unknown()
_loc.__enter__()
module = Module.parse("func.func @model(%a: tensor<4xf32>) -> tensor<4xf32> {\\n"
                      "  return %a : tensor<4xf32>\\n}")
func_entry_block = module.body.operations[0].regions[0].blocks[0]
a = func_entry_block.arguments[0]
''',
}

#: Run after a page's last block (also when one fails): undo what its prelude entered.
CLEANUP: dict[str, str] = {
    "passes.md": '''
_REGISTRY.pop("count-ops", None)
if _saved is not None:
    _REGISTRY["count-ops"] = _saved
''',
    "dialects/rdu.md": "_loc.__exit__(None, None, None)\n_ctx.__exit__(None, None, None)\n",
}
