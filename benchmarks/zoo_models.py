"""The model zoo: models as users bring them, shared by test/unit/test_zoo.py and zoo.py.

HF transformers models are built offline from `XxxConfig(...)` with random weights: small
sizes, every other option at transformers' default (attention implementation "sdpa",
`use_cache=True`, the config's dropout probabilities). ResNet-18/50 and MobileNetV2 follow
torchvision's definitions (torchvision cannot be installed here), with a width knob for the
tiny test versions.

Three sizes: "tiny" (unit tests: 2 layers, width 32-64, a few tokens or 32x32 images),
"quick" (a faster benchmark) and "full" (the published sizes: GPT-2 small, BERT-base,
ViT-B/16, ResNet at 1x3x224x224, ...). `ZOO[name].build(size)` returns a `Built`: the model
in eval mode, a function making seeded example inputs, and the loss for training steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn

Size = Literal["tiny", "quick", "full"]


# --- torchvision's ResNet and MobileNetV2 (torchvision/models/resnet.py, mobilenetv2.py) --


def _conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


def _conv1x1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """ResNet V1.5: the stride is on the 3x3 convolution, as in torchvision."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = _conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision.models.ResNet; `width` is the first stage's planes (torchvision: 64)."""

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int],
                 num_classes: int = 1000, width: int = 64) -> None:
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block: type[BasicBlock | Bottleneck], planes: int, blocks: int,
                    stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvBNReLU6(nn.Sequential):
    """torchvision's Conv2dNormActivation(..., activation_layer=nn.ReLU6)."""

    def __init__(self, cin: int, cout: int, kernel: int = 3, stride: int = 1,
                 groups: int = 1) -> None:
        super().__init__(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups,
                                   bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU6(inp, hidden, kernel=1))
        layers += [ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision.models.MobileNetV2 (dropout 0.2 before the classifier)."""

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0,
                 dropout: float = 0.2) -> None:
        super().__init__()
        settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
                    [6, 160, 3, 2], [6, 320, 1, 1]]
        input_channel = _make_divisible(32 * width_mult)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult))
        features: list[nn.Module] = [ConvBNReLU6(3, input_channel, stride=2)]
        for t, c, n, s in settings:
            output_channel = _make_divisible(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel,
                                                 s if i == 0 else 1, t))
                input_channel = output_channel
        features.append(ConvBNReLU6(input_channel, self.last_channel, kernel=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout),
                                        nn.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


def _calibrate_batchnorm(model: nn.Module, x: torch.Tensor) -> None:
    """Running statistics from one batch (cumulative average), as after some training:
    non-trivial mean/var in eval mode, and activations that stay in range through the net."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = None
    model.train()
    with torch.no_grad():
        model(x)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = 0.1  # torchvision's default, for the training steps


# --- the zoo ------------------------------------------------------------------------------


@dataclass
class Built:
    """One zoo model, ready to run: `model(*inputs(seed))` as a user calls it."""

    model: nn.Module
    inputs: Callable[[int], tuple[torch.Tensor, ...]]
    #: loss_fn(model, *inputs) -> scalar, for compile_train_step (a cross-entropy or MSE on
    #: the model's main output against fixed seeded targets).
    loss: Callable[..., torch.Tensor]
    #: The tensor(s) compared against eager, out of the model's output structure.
    select: Callable[[Any], Any] = field(default=lambda out: out)
    label: str = ""


class KeywordCall(nn.Module):
    """Calls `model(**dict(zip(names, args)))`: positional inputs for a model whose forward
    takes them by keyword (T5's decoder_input_ids comes after attention_mask)."""

    def __init__(self, model: nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names
        self.config = getattr(model, "config", None)

    def forward(self, *args: torch.Tensor) -> Any:
        return self.model(**dict(zip(self.names, args, strict=True)))


def _ids(batch: int, seq: int, vocab: int) -> Callable[[int], tuple[torch.Tensor, ...]]:
    return lambda seed: (torch.randint(0, vocab, (batch, seq),
                                       generator=torch.Generator().manual_seed(seed)),)


def _randn(*shape: int) -> Callable[[int], tuple[torch.Tensor, ...]]:
    return lambda seed: (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)),)


def _xent(logits: torch.Tensor, classes: int) -> torch.Tensor:
    flat = logits.reshape(-1, logits.shape[-1])
    target = torch.arange(flat.shape[0]) % classes
    return torch.nn.functional.cross_entropy(flat, target)


def _lm_loss(vocab: int) -> Callable[..., torch.Tensor]:
    return lambda model, ids: _xent(model(ids).logits, vocab)


def _mse_hidden(model: nn.Module, *inputs: torch.Tensor) -> torch.Tensor:
    return model(*inputs).last_hidden_state.pow(2).mean()


def _mse_hidden_pooled(model: nn.Module, *inputs: torch.Tensor) -> torch.Tensor:
    """Both outputs of an encoder with a pooler, so that every parameter has a gradient."""
    out = model(*inputs)
    return out.last_hidden_state.pow(2).mean() + out.pooler_output.pow(2).mean()


def _no_dropout(kwargs: dict[str, Any], keys: tuple[str, ...], dropout: bool) -> dict[str, Any]:
    return kwargs if dropout else {**kwargs, **{k: 0.0 for k in keys}}


def _pick(size: Size, tiny: Any, quick: Any, full: Any) -> Any:
    return {"tiny": tiny, "quick": quick, "full": full}[size]


def gpt2(size: Size, dropout: bool = True) -> Built:
    import transformers

    layers, width, heads, vocab, seq = _pick(size, (2, 64, 2, 128, 16), (4, 256, 4, 50257, 64),
                                             (12, 768, 12, 50257, 128))
    kw = _no_dropout(dict(n_layer=layers, n_embd=width, n_head=heads, vocab_size=vocab,
                          n_positions=max(seq, 32) if size == "tiny" else 1024,
                          bos_token_id=vocab - 1, eos_token_id=vocab - 1),
                     ("resid_pdrop", "embd_pdrop", "attn_pdrop"), dropout)
    torch.manual_seed(10)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**kw)).eval()
    return Built(model, _ids(1 if size != "tiny" else 2, seq, vocab), _lm_loss(vocab),
                 lambda out: out.logits, f"GPT-2 {layers}L {width}w")


def _bert_like(cls_name: str, config_name: str, size: Size, dropout: bool, seed: int,
               head: bool) -> Built:
    import transformers

    layers, width, heads, inter, vocab, seq = _pick(
        size, (2, 64, 2, 128, 128, 16), (4, 256, 4, 1024, 30522, 128),
        (12, 768, 12, 3072, 30522 if config_name == "BertConfig" else 50265, 128))
    kw = _no_dropout(dict(num_hidden_layers=layers, hidden_size=width,
                          num_attention_heads=heads, intermediate_size=inter, vocab_size=vocab),
                     ("hidden_dropout_prob", "attention_probs_dropout_prob"), dropout)
    if size == "tiny":
        kw["max_position_embeddings"] = 40
    torch.manual_seed(seed)
    config = getattr(transformers, config_name)(**kw)
    model = getattr(transformers, cls_name)(config).eval()
    batch = 2 if size == "tiny" else 1
    if head:
        return Built(model, _ids(batch, seq, vocab),
                     lambda m, ids: _xent(m(ids).logits, 2), lambda out: out.logits,
                     f"{cls_name} {layers}L {width}w")
    return Built(model, _ids(batch, seq, vocab), _mse_hidden_pooled,
                 lambda out: (out.last_hidden_state, out.pooler_output),
                 f"{cls_name} {layers}L {width}w")


def bert(size: Size, dropout: bool = True) -> Built:
    return _bert_like("BertModel", "BertConfig", size, dropout, 11, head=False)


def bert_classifier(size: Size, dropout: bool = True) -> Built:
    return _bert_like("BertForSequenceClassification", "BertConfig", size, dropout, 12,
                      head=True)


def roberta(size: Size, dropout: bool = True) -> Built:
    return _bert_like("RobertaModel", "RobertaConfig", size, dropout, 13, head=False)


def _decoder_lm(kind: str, size: Size, dropout: bool, seed: int) -> Built:
    """Llama / Mistral causal LMs with grouped-query attention (kv heads < heads)."""
    import transformers

    layers, width, heads, kv, inter, vocab, seq = _pick(
        size, (2, 64, 4, 2, 128, 128, 16), (4, 256, 8, 2, 688, 32000, 64),
        # SmolLM-135M's shape (a Llama): 30 layers, 576 wide, 9 heads, 3 kv heads.
        (30, 576, 9, 3, 1536, 49152, 128))
    kw: dict[str, Any] = dict(num_hidden_layers=layers, hidden_size=width,
                              num_attention_heads=heads, num_key_value_heads=kv,
                              intermediate_size=inter, vocab_size=vocab)
    if size == "tiny":
        kw["max_position_embeddings"] = 64
    if kind == "Mistral":  # a window shorter than the sequence, so the mask is banded
        kw["sliding_window"] = seq // 2
    if not dropout:
        kw["attention_dropout"] = 0.0  # the default already
    torch.manual_seed(seed)
    config = getattr(transformers, f"{kind}Config")(**kw)
    model = getattr(transformers, f"{kind}ForCausalLM")(config).eval()
    return Built(model, _ids(1 if size != "tiny" else 2, seq, vocab), _lm_loss(vocab),
                 lambda out: out.logits, f"{kind} {layers}L {width}w GQA {heads}/{kv}")


def llama(size: Size, dropout: bool = True) -> Built:
    return _decoder_lm("Llama", size, dropout, 14)


def mistral(size: Size, dropout: bool = True) -> Built:
    return _decoder_lm("Mistral", size, dropout, 15)


def t5(size: Size, dropout: bool = True) -> Built:
    """T5ForConditionalGeneration (encoder-decoder): input_ids and decoder_input_ids."""
    import transformers

    layers, width, heads, kv, ff, vocab, seq, dec = _pick(
        size, (2, 64, 2, 32, 128, 128, 16, 8), (2, 256, 4, 64, 1024, 32128, 64, 16),
        (6, 512, 8, 64, 2048, 32128, 128, 32))  # t5-small
    kw = _no_dropout(dict(num_layers=layers, d_model=width, num_heads=heads, d_kv=kv, d_ff=ff,
                          vocab_size=vocab, decoder_start_token_id=0), ("dropout_rate",),
                     dropout)
    torch.manual_seed(16)
    model = KeywordCall(transformers.T5ForConditionalGeneration(transformers.T5Config(**kw)),
                        ("input_ids", "decoder_input_ids")).eval()
    batch = 2 if size == "tiny" else 1

    def inputs(seed: int) -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(seed)
        return (torch.randint(0, vocab, (batch, seq), generator=g),
                torch.randint(0, vocab, (batch, dec), generator=g))

    return Built(model, inputs, lambda m, ids, dec: _xent(m(ids, dec).logits, vocab),
                 lambda out: (out.logits, out.encoder_last_hidden_state),
                 f"T5 {layers}+{layers}L {width}w")


def vit(size: Size, dropout: bool = True) -> Built:
    import transformers

    layers, width, heads, inter, image, patch = _pick(
        size, (2, 64, 2, 128, 32, 8), (4, 384, 6, 1536, 224, 16), (12, 768, 12, 3072, 224, 16))
    kw = _no_dropout(dict(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                          intermediate_size=inter, image_size=image, patch_size=patch,
                          num_labels=10 if size == "tiny" else 1000),
                     ("hidden_dropout_prob", "attention_probs_dropout_prob"), dropout)
    torch.manual_seed(17)
    model = transformers.ViTForImageClassification(transformers.ViTConfig(**kw)).eval()
    batch = 2 if size == "tiny" else 1
    return Built(model, _randn(batch, 3, image, image),
                 lambda m, x: _xent(m(x).logits, 10), lambda out: out.logits,
                 f"ViT {layers}L {width}w /{patch}")


def whisper_encoder(size: Size, dropout: bool = True) -> Built:
    """WhisperModel's encoder (conv1d stem + transformer) on log-mel features."""
    import transformers

    layers, width, heads, ff, mels, positions = _pick(
        size, (2, 64, 2, 128, 16, 32), (4, 384, 6, 1536, 80, 1500),
        (6, 512, 8, 2048, 80, 1500))  # whisper-base's encoder
    kw = _no_dropout(dict(encoder_layers=layers, decoder_layers=layers, d_model=width,
                          encoder_attention_heads=heads, decoder_attention_heads=heads,
                          encoder_ffn_dim=ff, decoder_ffn_dim=ff, num_mel_bins=mels,
                          max_source_positions=positions),
                     ("dropout", "attention_dropout", "activation_dropout"), dropout)
    torch.manual_seed(18)
    model = transformers.WhisperModel(transformers.WhisperConfig(**kw)).get_encoder().eval()
    batch = 2 if size == "tiny" else 1
    return Built(model, _randn(batch, mels, 2 * positions), _mse_hidden,
                 lambda out: out.last_hidden_state, f"Whisper encoder {layers}L {width}w")


def clip(size: Size, dropout: bool = True) -> Built:
    """CLIPModel: text and vision towers, image-text logits."""
    import transformers

    layers, width, heads, inter, vocab, seq, image, patch = _pick(
        size, (2, 64, 2, 128, 128, 16, 32, 8), (4, 256, 4, 1024, 49408, 77, 224, 32),
        (12, 512, 8, 2048, 49408, 77, 224, 32))  # clip-vit-base-patch32 (vision 768 wide)
    vwidth = 768 if size == "full" else width
    # CLIP pools the text at the first end-of-text token (the last of the vocabulary).
    text = dict(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                intermediate_size=inter, vocab_size=vocab, max_position_embeddings=seq,
                bos_token_id=vocab - 2, eos_token_id=vocab - 1, pad_token_id=1)
    vision = dict(num_hidden_layers=layers, hidden_size=vwidth, num_attention_heads=vwidth // 64
                  if size == "full" else heads, intermediate_size=4 * vwidth, image_size=image,
                  patch_size=patch)
    if not dropout:
        text["attention_dropout"] = vision["attention_dropout"] = 0.0  # the defaults already
    torch.manual_seed(19)
    config = transformers.CLIPConfig(text_config=text, vision_config=vision,
                                     projection_dim=width)
    model = transformers.CLIPModel(config).eval()
    batch = 2 if size == "tiny" else 1

    def inputs(seed: int) -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, vocab - 2, (batch, seq), generator=g)
        ids[:, -1] = vocab - 1  # the tokenizer ends every text with end-of-text
        return ids, torch.randn(batch, 3, image, image, generator=g)

    def loss(m: nn.Module, ids: torch.Tensor, pixels: torch.Tensor) -> torch.Tensor:
        return _xent(m(input_ids=ids, pixel_values=pixels).logits_per_image, batch)

    return Built(model, inputs, loss,
                 lambda out: (out.logits_per_image, out.text_embeds, out.image_embeds),
                 f"CLIP {layers}L text {width}w + vision {vwidth}w")


def _cnn(model: nn.Module, size: Size, label: str) -> Built:
    # Tiny: 64x64 keeps 2x2 pixels in the last stage, so that train-mode BatchNorm there
    # normalises over 8 values per channel, not 2 (where its output is ill-conditioned).
    batch, image = (2, 64) if size == "tiny" else (1, 224)
    calib = torch.randn(16 if size == "tiny" else 4, 3, image, image,
                        generator=torch.Generator().manual_seed(99))
    _calibrate_batchnorm(model, calib)
    classes = model.fc.out_features if hasattr(model, "fc") else model.classifier[-1].out_features
    return Built(model.eval(), _randn(batch, 3, image, image),
                 lambda m, x: _xent(m(x), classes), label=label)


def _resnet(size: Size, block: type[BasicBlock | Bottleneck], layers: list[int], seed: int,
            depth: int) -> Built:
    width = 8 if size == "tiny" else 64
    torch.manual_seed(seed)
    model = ResNet(block, layers, num_classes=10 if size == "tiny" else 1000, width=width)
    return _cnn(model, size, f"ResNet-{depth} width {width}")


def resnet18(size: Size, dropout: bool = True) -> Built:
    return _resnet(size, BasicBlock, [2, 2, 2, 2], seed=20, depth=18)


def resnet50(size: Size, dropout: bool = True) -> Built:
    return _resnet(size, Bottleneck, [3, 4, 6, 3], seed=21, depth=50)


def mobilenet_v2(size: Size, dropout: bool = True) -> Built:
    mult = 0.25 if size == "tiny" else 1.0
    torch.manual_seed(22)
    model = MobileNetV2(num_classes=10 if size == "tiny" else 1000, width_mult=mult,
                        dropout=0.2 if dropout else 0.0)
    return _cnn(model, size, f"MobileNetV2 x{mult}")


#: name -> builder(size, dropout=True). Transformers first, then the CNNs.
ZOO: dict[str, Callable[..., Built]] = {
    "gpt2": gpt2, "bert": bert, "bert_cls": bert_classifier, "roberta": roberta,
    "llama": llama, "mistral": mistral, "t5": t5, "vit": vit,
    "whisper_encoder": whisper_encoder, "clip": clip,
    "resnet18": resnet18, "resnet50": resnet50, "mobilenet_v2": mobilenet_v2,
}
TRANSFORMERS = ["gpt2", "bert", "bert_cls", "roberta", "llama", "mistral", "t5", "vit",
                "whisper_encoder", "clip"]
CNNS = ["resnet18", "resnet50", "mobilenet_v2"]
