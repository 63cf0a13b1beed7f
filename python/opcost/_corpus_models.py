"""The model corpus of ``python -m opcost corpus``: torchvision, timm and transformers models built
from their configurations (random weights, nothing downloaded) and hand-written models that use
what the argument language and the replay must cover (functional calls, in-place ops, views of
views, advanced indexing, control flow, a custom autograd Function, einsum, complex values).

Every entry builds its model and inputs for a size: "tiny" (CI on a CPU: a few seconds each) or
"gpu" (realistic batches, 224-pixel images, sequences of 128 to 512, bf16 and autocast variants).
Where a family's constructors differ only in width or depth, one member runs and ``covers`` names
the rest (the table lists them as covered by that family)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

SIZES = ("tiny", "gpu")
MODES = ("inference", "training")


@dataclasses.dataclass
class Case:
    """A built model and what one step of it is called with."""

    model: torch.nn.Module
    inputs: Tuple[Any, ...]
    kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)
    train_kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)  # labels: the model's own loss
    loss_fn: Optional[Callable[[Any], torch.Tensor]] = None


@dataclasses.dataclass(frozen=True)
class CorpusModel:
    name: str  # "source/model"
    build: Callable[[str], Case]  # size -> Case
    training: Optional[str] = None  # the optimizer of its training run ("sgd", "adamw"); None: inference only
    covers: Tuple[str, ...] = ()  # constructors of the same family that this one stands for
    gpu_precision: str = "fp32"  # "fp32", "bf16" (weights and inputs) or "autocast" (bf16) at size "gpu"
    # False: trained at size "gpu" only (tens of millions of parameters: a CPU step takes seconds)
    tiny_training: bool = True

    @property
    def source(self) -> str:
        return self.name.split("/", 1)[0]

    def modes(self, size: str) -> Tuple[str, ...]:
        return MODES if self.training and (self.tiny_training or size != "tiny") else MODES[:1]


def _pick(size: str, tiny: Any, gpu: Any) -> Any:
    if size not in SIZES:
        raise ValueError(f"size={size!r}: use one of {', '.join(SIZES)}")
    return tiny if size == "tiny" else gpu


# Image sides: a tiny run's (CI, the CPU) and a GPU run's, unless a model needs its own.
_TINY_HW, _GPU_HW = 32, 224


def _images(size: str, tiny_hw: int = _TINY_HW, gpu_batch: int = 16, gpu_hw: int = _GPU_HW,
            channels: int = 3) -> torch.Tensor:
    batch, hw = _pick(size, (2, tiny_hw), (gpu_batch, gpu_hw))  # 2: batch norm trains on 2 or more
    return torch.randn(batch, channels, hw, hw)


# ---------------------------------------------------------------------------------------- torchvision

def _tv(constructor: str, tiny_hw: int = _TINY_HW, gpu_hw: int = _GPU_HW, **kwargs: Any) -> Callable[[str], Case]:
    def build(size: str) -> Case:
        import torchvision
        model = getattr(torchvision.models, constructor)(weights=None, num_classes=10, **kwargs)
        return Case(model, (_images(size, tiny_hw, gpu_hw=gpu_hw),))
    return build


def _tv_family(tiny: Callable[[], torch.nn.Module], constructor: str, tiny_hw: int = _TINY_HW,
               **gpu_kwargs: Any) -> Callable[[str], Case]:
    """A family's own class at a tiny width or depth on the CPU, the named constructor on the GPU."""
    def build(size: str) -> Case:
        import torchvision
        model = tiny() if size == "tiny" else getattr(torchvision.models, constructor)(weights=None, num_classes=10,
                                                                                      **gpu_kwargs)
        return Case(model, (_images(size, tiny_hw),))
    return build


def _tiny_densenet() -> torch.nn.Module:
    from torchvision.models import DenseNet
    return DenseNet(growth_rate=16, block_config=(2, 2, 2, 2), num_init_features=32, num_classes=10)


def _tiny_vit() -> torch.nn.Module:
    from torchvision.models import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128,
                             num_classes=10)


def _tiny_maxvit() -> torch.nn.Module:
    from torchvision.models import MaxVit
    # partition 2: every stage's map (64 / 2 / 2^k) divides into 2x2 windows and grids
    return MaxVit(input_size=(64, 64), stem_channels=16, partition_size=2, block_channels=[16, 32, 64, 128],
                  block_layers=[1, 1, 1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=10)


def _tv_detection(size: str) -> Case:
    from torchvision.models import detection
    hw = _pick(size, 64, 320)
    model = detection.fasterrcnn_mobilenet_v3_large_fpn(
        weights=None, weights_backbone=None, num_classes=3, min_size=hw, max_size=hw,
        rpn_pre_nms_top_n_test=_pick(size, 50, 1000), rpn_post_nms_top_n_test=_pick(size, 10, 1000),
        box_detections_per_img=_pick(size, 10, 100))
    images = [torch.rand(3, hw, hw) for _ in range(_pick(size, 1, 8))]
    return Case(model, (images,))


def _tv_segmentation(size: str) -> Case:
    from torchvision.models import segmentation
    model = segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3)
    return Case(model, (_images(size, 64, gpu_batch=8, gpu_hw=512),),
                loss_fn=lambda out: out["out"].float().square().mean())


def _tv_video(size: str) -> Case:
    from torchvision.models import video
    model = video.r3d_18(weights=None, num_classes=10)
    shape = _pick(size, (1, 3, 4, 32, 32), (8, 3, 16, 112, 112))
    return Case(model, (torch.randn(*shape),))


TORCHVISION = [
    CorpusModel("torchvision/alexnet", _tv("alexnet", 64)),
    CorpusModel("torchvision/resnet18", _tv("resnet18"), "sgd", ("resnet34",)),
    CorpusModel("torchvision/resnet50", _tv("resnet50"), "adamw", ("resnet101", "resnet152"), "autocast", False),
    CorpusModel("torchvision/resnext50_32x4d", _tv("resnext50_32x4d"), None, ("resnext101_32x8d", "resnext101_64x4d")),
    CorpusModel("torchvision/wide_resnet50_2", _tv("wide_resnet50_2"), None, ("wide_resnet101_2",), "bf16"),
    CorpusModel("torchvision/vgg11", _tv("vgg11"), None, ("vgg13", "vgg16", "vgg19")),
    CorpusModel("torchvision/vgg11_bn", _tv("vgg11_bn"), None, ("vgg13_bn", "vgg16_bn", "vgg19_bn"), "autocast"),
    CorpusModel("torchvision/densenet121", _tv_family(_tiny_densenet, "densenet121"), "sgd",
                ("densenet161", "densenet169", "densenet201")),
    CorpusModel("torchvision/inception_v3", _tv("inception_v3", 75, gpu_hw=299, aux_logits=False, init_weights=False)),
    CorpusModel("torchvision/googlenet", _tv("googlenet", aux_logits=False, init_weights=False), None, (), "autocast"),
    CorpusModel("torchvision/squeezenet1_0", _tv("squeezenet1_0", 64)),
    CorpusModel("torchvision/squeezenet1_1", _tv("squeezenet1_1", 64), "sgd"),
    CorpusModel("torchvision/shufflenet_v2_x0_5", _tv("shufflenet_v2_x0_5"), "adamw",
                ("shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0")),
    CorpusModel("torchvision/mnasnet0_5", _tv("mnasnet0_5"), None, ("mnasnet0_75", "mnasnet1_0", "mnasnet1_3")),
    CorpusModel("torchvision/mobilenet_v2", _tv("mobilenet_v2"), "sgd", (), "bf16"),
    CorpusModel("torchvision/mobilenet_v3_small", _tv("mobilenet_v3_small"), "adamw"),
    CorpusModel("torchvision/mobilenet_v3_large", _tv("mobilenet_v3_large"), None, (), "autocast"),
    CorpusModel("torchvision/efficientnet_b0", _tv("efficientnet_b0"), "sgd",
                tuple(f"efficientnet_b{i}" for i in range(1, 8))),
    CorpusModel("torchvision/efficientnet_v2_s", _tv("efficientnet_v2_s"), None,
                ("efficientnet_v2_m", "efficientnet_v2_l"), "autocast"),
    CorpusModel("torchvision/regnet_x_400mf", _tv("regnet_x_400mf"), None,
                tuple(f"regnet_x_{s}" for s in ("800mf", "1_6gf", "3_2gf", "8gf", "16gf", "32gf"))),
    CorpusModel("torchvision/regnet_y_400mf", _tv("regnet_y_400mf"), "sgd",
                tuple(f"regnet_y_{s}" for s in ("800mf", "1_6gf", "3_2gf", "8gf", "16gf", "32gf", "128gf"))),
    CorpusModel("torchvision/convnext_tiny", _tv("convnext_tiny"), "adamw",
                ("convnext_small", "convnext_base", "convnext_large"), "autocast", False),
    CorpusModel("torchvision/vit_b_16", _tv_family(_tiny_vit, "vit_b_16"), "adamw",
                ("vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"), "bf16"),
    CorpusModel("torchvision/swin_t", _tv("swin_t", 64), None, ("swin_s", "swin_b"), "autocast"),
    CorpusModel("torchvision/swin_v2_t", _tv("swin_v2_t", 64), None, ("swin_v2_s", "swin_v2_b")),
    CorpusModel("torchvision/maxvit_t", _tv_family(_tiny_maxvit, "maxvit_t", 64)),
    CorpusModel("torchvision/fasterrcnn_mobilenet_v3_large_fpn", _tv_detection),
    CorpusModel("torchvision/lraspp_mobilenet_v3_large", _tv_segmentation, "sgd", (), "autocast"),
    CorpusModel("torchvision/r3d_18", _tv_video, "sgd", (), "fp32", False),
]


# ---------------------------------------------------------------------------------------- timm

def _timm(name: str, tiny_hw: int = 64, img_size: bool = False, **kwargs: Any) -> Callable[[str], Case]:
    """``img_size``: the model takes its input size (a ViT's position table), set to the input's."""
    def build(size: str) -> Case:
        import timm
        hw = _pick(size, tiny_hw, 224)
        extra = dict(kwargs, img_size=hw) if img_size else kwargs
        model = timm.create_model(name, pretrained=False, num_classes=10, **extra)
        return Case(model, (_images(size, tiny_hw),))
    return build


def _timm_entries() -> list:
    plain = ["resnet10t", "efficientnet_lite0", "mobilenetv3_small_050", "mobilenetv4_conv_small", "ghostnet_050",
             "regnetx_002", "lcnet_050", "mixnet_s", "dla46_c", "cspresnet50", "darknet17", "dpn48b",
             "hrnet_w18_small", "poolformer_s12", "edgenext_xx_small", "fastvit_t8", "repvit_m1", "nf_resnet26",
             "resnest14d", "res2net50_14w_8s", "skresnet18", "ese_vovnet19b_slim", "hgnetv2_b0", "efficientvit_b0",
             "starnet_s1", "convnextv2_atto", "tiny_vit_5m_224", "mobilevit_xxs", "mobilevitv2_050", "pvt_v2_b0"]
    sized = {"vit_tiny_patch16_224": 32, "deit_tiny_patch16_224": 32, "convit_tiny": 32, "cait_xxs24_224": 32,
             "levit_128s": 64, "pit_ti_224": 64, "swin_tiny_patch4_window7_224": 64, "mixer_s32_224": 64,
             "resmlp_12_224": 32, "gmlp_ti16_224": 32, "xcit_nano_12_p16_224": 32, "visformer_tiny": 64,
             "sequencer2d_s": 32, "eva02_tiny_patch14_224": 28, "maxvit_nano_rw_256": 64, "coatnet_nano_rw_224": 64,
             "hiera_tiny_224": 64, "botnet26t_256": 64}
    training = {"resnet10t": "sgd", "mobilenetv4_conv_small": "adamw", "vit_tiny_patch16_224": "adamw",
                "convnextv2_atto": "adamw", "mobilevit_xxs": "sgd", "levit_128s": "adamw", "resmlp_12_224": "sgd",
                "lcnet_050": "sgd", "eva02_tiny_patch14_224": "adamw"}
    precision = {"vit_tiny_patch16_224": "autocast", "efficientnet_lite0": "bf16", "convnextv2_atto": "autocast",
                 "swin_tiny_patch4_window7_224": "autocast", "resnet10t": "bf16", "eva02_tiny_patch14_224": "autocast"}
    out = [CorpusModel(f"timm/{n}", _timm(n), training.get(n), (), precision.get(n, "fp32")) for n in plain]
    out += [CorpusModel(f"timm/{n}", _timm(n, hw, img_size=True), training.get(n), (), precision.get(n, "fp32"))
            for n, hw in sized.items()]
    return out


TIMM = _timm_entries()


# ---------------------------------------------------------------------------------------- transformers

def _dims(size: str) -> Dict[str, int]:
    """A transformer's widths: tiny (2 layers of 32) or a GPU-sized one (BERT-base widths, 4 layers)."""
    return _pick(size, dict(hidden=32, layers=2, heads=4, kv_heads=2, ffn=64, vocab=128, seq=16, batch=1, pos=64),
                 dict(hidden=768, layers=4, heads=12, kv_heads=4, ffn=3072, vocab=32000, seq=256, batch=8, pos=1024))


def _tokens(d: Dict[str, int], seq: Optional[int] = None) -> torch.Tensor:
    return torch.randint(4, d["vocab"], (d["batch"], seq or d["seq"]))


def _hf_text(model_class: str, config_class: str, config: Callable[[Dict[str, int]], Dict[str, Any]],
             labels: bool = True) -> Callable[[str], Case]:
    """A text model on token ids; in training its own loss on the same ids as labels."""
    def build(size: str) -> Case:
        import transformers
        d = _dims(size)
        cfg = getattr(transformers, config_class)(**config(d))
        model = getattr(transformers, model_class)(cfg)
        ids = _tokens(d)
        return Case(model, (ids,), {}, {"labels": ids} if labels else {})
    return build


def _bert_like(d: Dict[str, int]) -> Dict[str, Any]:
    return dict(vocab_size=d["vocab"], hidden_size=d["hidden"], num_hidden_layers=d["layers"],
                num_attention_heads=d["heads"], intermediate_size=d["ffn"], max_position_embeddings=d["pos"])


def _decoder(d: Dict[str, int], **extra: Any) -> Dict[str, Any]:
    return dict(_bert_like(d), num_key_value_heads=d["kv_heads"], **extra)


def _hf_seq2seq(model_class: str, config_class: str, config: Callable[[Dict[str, int]], Dict[str, Any]]
                ) -> Callable[[str], Case]:
    def build(size: str) -> Case:
        import transformers
        d = _dims(size)
        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config(d)))
        ids, target = _tokens(d), _tokens(d, d["seq"] // 2)
        return Case(model, (ids,), {"decoder_input_ids": target}, {"labels": target})
    return build


def _hf_vision(model_class: str, config_class: str, config: Callable[[Dict[str, int], int], Dict[str, Any]],
               tiny_hw: int = _TINY_HW) -> Callable[[str], Case]:
    def build(size: str) -> Case:
        import transformers
        d, hw = _dims(size), _pick(size, tiny_hw, 224)
        model = getattr(transformers, model_class)(getattr(transformers, config_class)(num_labels=10, **config(d, hw)))
        pixels = _images(size, tiny_hw, gpu_batch=d["batch"] * 2)
        return Case(model, (pixels,), {}, {"labels": torch.randint(0, 10, (pixels.shape[0],))})
    return build


def _wav2vec2(size: str) -> Case:
    import transformers
    d = _dims(size)
    conv = _pick(size, dict(conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                            num_conv_pos_embedding_groups=2), {})
    cfg = transformers.Wav2Vec2Config(vocab_size=32, hidden_size=d["hidden"], num_hidden_layers=d["layers"],
                                      num_attention_heads=d["heads"], intermediate_size=d["ffn"], **conv)
    audio = torch.randn(d["batch"], _pick(size, 1600, 16000 * 4))
    return Case(transformers.Wav2Vec2Model(cfg), (audio,))


def _whisper(size: str) -> Case:
    import transformers
    d = _dims(size)
    mel, frames = _pick(size, (16, 32), (80, 3000))
    cfg = transformers.WhisperConfig(
        vocab_size=d["vocab"], d_model=d["hidden"], encoder_layers=d["layers"], decoder_layers=d["layers"],
        encoder_attention_heads=d["heads"], decoder_attention_heads=d["heads"], encoder_ffn_dim=d["ffn"],
        decoder_ffn_dim=d["ffn"], num_mel_bins=mel, max_source_positions=frames // 2, max_target_positions=d["pos"],
        # Its default token ids are GPT-2's (50256 and on): inside the small vocabulary instead.
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, begin_suppress_tokens=None)
    target = _tokens(d, d["seq"] // 2)
    return Case(transformers.WhisperForConditionalGeneration(cfg), (torch.randn(d["batch"], mel, frames),),
                {"decoder_input_ids": target}, {"labels": target})


def _t5(d: Dict[str, int]) -> Dict[str, Any]:
    return dict(vocab_size=d["vocab"], d_model=d["hidden"], d_kv=d["hidden"] // d["heads"], d_ff=d["ffn"],
                num_layers=d["layers"], num_heads=d["heads"], decoder_start_token_id=0)


def _bart(d: Dict[str, int]) -> Dict[str, Any]:
    return dict(vocab_size=d["vocab"], d_model=d["hidden"], encoder_layers=d["layers"], decoder_layers=d["layers"],
                encoder_attention_heads=d["heads"], decoder_attention_heads=d["heads"], encoder_ffn_dim=d["ffn"],
                decoder_ffn_dim=d["ffn"], max_position_embeddings=d["pos"])


TRANSFORMERS = [
    CorpusModel("transformers/bert", _hf_text("BertForMaskedLM", "BertConfig", _bert_like), "adamw", (), "autocast"),
    CorpusModel("transformers/roberta", _hf_text("RobertaForMaskedLM", "RobertaConfig",
                                                 lambda d: dict(_bert_like(d), max_position_embeddings=d["pos"] + 2))),
    CorpusModel("transformers/deberta-v2", _hf_text(
        "DebertaV2ForMaskedLM", "DebertaV2Config",
        lambda d: dict(_bert_like(d), relative_attention=True, position_buckets=16, pos_att_type=["p2c", "c2p"])),
        "adamw"),
    CorpusModel("transformers/albert", _hf_text("AlbertForMaskedLM", "AlbertConfig",
                                                lambda d: dict(_bert_like(d), embedding_size=d["hidden"] // 2))),
    CorpusModel("transformers/distilbert", _hf_text(
        "DistilBertForMaskedLM", "DistilBertConfig",
        lambda d: dict(vocab_size=d["vocab"], dim=d["hidden"], n_layers=d["layers"], n_heads=d["heads"],
                       hidden_dim=d["ffn"], max_position_embeddings=d["pos"]))),
    CorpusModel("transformers/gpt2", _hf_text(
        "GPT2LMHeadModel", "GPT2Config",
        lambda d: dict(vocab_size=d["vocab"], n_embd=d["hidden"], n_layer=d["layers"], n_head=d["heads"],
                       n_positions=d["pos"])), "adamw", (), "bf16"),
    CorpusModel("transformers/llama", _hf_text("LlamaForCausalLM", "LlamaConfig", _decoder), "adamw", (), "bf16"),
    CorpusModel("transformers/mistral", _hf_text("MistralForCausalLM", "MistralConfig",
                                                 lambda d: _decoder(d, sliding_window=d["seq"] // 4)),
                "sgd", (), "autocast"),
    CorpusModel("transformers/qwen2", _hf_text("Qwen2ForCausalLM", "Qwen2Config", _decoder)),
    CorpusModel("transformers/phi", _hf_text("PhiForCausalLM", "PhiConfig",
                                             lambda d: dict(_bert_like(d), partial_rotary_factor=0.5))),
    CorpusModel("transformers/gpt-neox", _hf_text("GPTNeoXForCausalLM", "GPTNeoXConfig",
                                                  lambda d: dict(_bert_like(d), rotary_pct=0.25))),
    CorpusModel("transformers/gemma", _hf_text("GemmaForCausalLM", "GemmaConfig",
                                               lambda d: dict(_decoder(d), head_dim=d["hidden"] // d["heads"])),
                None, (), "bf16"),
    CorpusModel("transformers/xlnet", _hf_text(
        "XLNetLMHeadModel", "XLNetConfig",
        lambda d: dict(vocab_size=d["vocab"], d_model=d["hidden"], n_layer=d["layers"], n_head=d["heads"],
                       d_inner=d["ffn"])), "adamw"),  # attention written with torch.einsum
    CorpusModel("transformers/t5", _hf_seq2seq("T5ForConditionalGeneration", "T5Config", _t5), "adamw"),
    CorpusModel("transformers/bart", _hf_seq2seq("BartForConditionalGeneration", "BartConfig", _bart), None, (),
                "autocast"),
    CorpusModel("transformers/vit", _hf_vision(
        "ViTForImageClassification", "ViTConfig",
        lambda d, hw: dict(_bert_like(d), image_size=hw, patch_size=_pick_patch(hw))), "sgd", (), "autocast"),
    CorpusModel("transformers/swin", _hf_vision(
        "SwinForImageClassification", "SwinConfig",
        lambda d, hw: dict(image_size=hw, patch_size=4, embed_dim=d["hidden"] // 2, depths=[1, 1],
                           num_heads=[2, 2], window_size=4 if hw < 64 else 7))),
    CorpusModel("transformers/convnext", _hf_vision(
        "ConvNextForImageClassification", "ConvNextConfig",
        lambda d, hw: dict(num_stages=2, hidden_sizes=[d["hidden"] // 2, d["hidden"]], depths=[1, 1], image_size=hw,
                           out_features=["stage2"]))),
    CorpusModel("transformers/wav2vec2", _wav2vec2),
    CorpusModel("transformers/whisper", _whisper, "adamw"),
]


def _pick_patch(hw: int) -> int:
    return 8 if hw < 64 else 16


# ---------------------------------------------------------------------------------------- hand-written

class FunctionalNet(torch.nn.Module):
    """torch.nn.functional calls on its own parameters, with string and list arguments."""

    def __init__(self):
        super().__init__()
        self.conv_w = torch.nn.Parameter(torch.randn(8, 3, 3, 3) * 0.1)
        self.fc_w, self.fc_b = torch.nn.Parameter(torch.randn(10, 8) * 0.1), torch.nn.Parameter(torch.zeros(10))

    def forward(self, x):
        x = F.pad(x, (1, 1, 1, 1), mode="reflect")
        x = F.gelu(F.conv2d(x, self.conv_w), approximate="tanh")
        x = F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False)
        x = F.layer_norm(x, x.shape[-2:])
        x = F.dropout(x, p=0.1, training=self.training)
        x = torch.div(x.mean((2, 3)), 2.0, rounding_mode="floor") + x.amax((2, 3))
        return F.log_softmax(F.linear(x, self.fc_w, self.fc_b), dim=-1)


class InplaceNet(torch.nn.Module):
    """In-place ops on intermediates (autograd allows them there), a slice written in place."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 16)

    def forward(self, x):
        h = self.fc1(x)
        h.mul_(0.5).add_(1.0)
        h[:, :4] += 1.0
        h.clamp_(min=-6.0, max=6.0)
        h.relu_()  # last: relu's backward reads its output, which nothing changes after
        h = h.masked_fill(h > 5.0, 0.0)
        return self.fc2(h).sigmoid_()


class ViewsNet(torch.nn.Module):
    """Views of views: transpose of a narrow of a view, expand, unfold, split, as_strided."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):  # x: [B, 4, 16]
        v = x.view(x.shape[0], 4, 2, 8).transpose(1, 2)
        v = v.narrow(3, 0, 8)[:, :, ::2].unsqueeze(-1).expand(-1, -1, -1, -1, 2)
        flat = v.reshape(x.shape[0], -1, 8)
        a, b = flat.split([2, flat.shape[1] - 2], dim=1)
        windows = x.unfold(2, 4, 4).permute(0, 2, 1, 3).contiguous()
        strided = x.as_strided((x.shape[0], 2, 8), (x.stride(0), 16, 1))
        return self.fc(b).sum() + a.sum() + windows.sum() + strided.transpose(1, 2).sum()


class IndexingNet(torch.nn.Module):
    """Boolean masks, advanced indexing, index_put_, gather/scatter, index_select, where."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):  # x: [B, 16]
        h = self.fc(x)
        positive = h[h > 0]  # boolean mask: data-dependent size
        on = h.device  # every tensor made here on the model's device (the corpus runs on a GPU too)
        rows = torch.arange(h.shape[0], device=on)
        picked = h[rows, rows % h.shape[1]]  # advanced indexing
        h2 = h.clone()
        h2[:, torch.tensor([0, 3, 5], device=on)] = 0.0  # index_put_
        h2.index_put_((rows, torch.zeros_like(rows)), torch.ones(h.shape[0], device=on, dtype=h.dtype), accumulate=True)
        idx = torch.argsort(h, dim=1)[:, :4]
        g = torch.gather(h, 1, idx)
        s = torch.zeros_like(h).scatter_add(1, idx, g)
        sel = torch.index_select(h2, 1, torch.tensor([1, 2], device=on))
        return positive.sum() + picked.sum() + s.sum() + sel.sum() + torch.where(h > 0, h, h2).sum()


class ControlFlowNet(torch.nn.Module):
    """Python control flow on shapes and on values (an item() decides a branch)."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(3))

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = block(x)
            x = torch.relu(x) if i % 2 == 0 else torch.tanh(x)
        if x.mean().item() > 0:  # a synchronising branch on a value
            x = x * 2
        else:
            x = x - 1
        steps = 0
        while steps < 2 and x.abs().max() > 1e-6:
            x = x / 2
            steps += 1
        return x


class _ScaledSquare(torch.autograd.Function):
    """y = scale * x², with its own backward."""

    @staticmethod
    def forward(ctx, x, scale: float):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * ctx.scale * x, None


class CustomFunctionNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        return _ScaledSquare.apply(self.fc(x), 0.5).mean(-1)


class EinsumNet(torch.nn.Module):
    """einsum with comma equations (the issue's "bd,de->be"), a batched one and an ellipsis."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 16) * 0.1)
        self.heads = torch.nn.Parameter(torch.randn(4, 16, 8) * 0.1)

    def forward(self, x):  # x: [B, T, 16]
        h = torch.einsum("btd,de->bte", x, self.w)
        q = torch.einsum("btd,hde->bhte", h, self.heads)
        scores = torch.einsum("bhqe,bhke->bhqk", q, q).softmax(-1)
        out = torch.einsum("bhqk,bhke->bqhe", scores, q)
        return torch.einsum("...he->...", out)


class SpectralNet(torch.nn.Module):
    """Complex tensors and a complex scalar: rfft, a complex weight, irfft."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)
        self.weight = torch.nn.Parameter(torch.randn(17, dtype=torch.cfloat) * 0.1)

    def forward(self, x):  # x: [B, 32]
        spectrum = torch.fft.rfft(self.fc(x), dim=-1)
        spectrum = spectrum * self.weight * (1 + 0.5j)
        return torch.fft.irfft(spectrum, n=x.shape[-1], dim=-1).abs() + torch.view_as_real(spectrum).sum()


class RecurrentNet(torch.nn.Module):
    """An LSTM and a GRU: their weights reach the op as a tensor list."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 16, batch_first=True)
        self.gru = torch.nn.GRU(16, 16, batch_first=True, bidirectional=True)

    def forward(self, x):
        h, _ = self.lstm(x)
        h, _ = self.gru(h)
        return h.mean(1)


class DataDependentNet(torch.nn.Module):
    """Values that decide shapes or indices: topk, sort, unique, nonzero, masked_select, embedding
    with padding, multinomial."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(32, 16, padding_idx=0)
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, ids):  # ids: [B, T] in [0, 32)
        h = self.fc(self.embed(ids))
        scores = h.mean(-1)
        top = torch.topk(scores, k=2, dim=-1).indices
        picked = torch.gather(h, 1, top.unsqueeze(-1).expand(-1, -1, h.shape[-1]))
        order = torch.sort(scores, dim=-1).indices
        uniq = torch.unique(ids)
        nz = torch.nonzero(scores > 0)
        selected = torch.masked_select(h, h > 0)
        draws = torch.multinomial(torch.softmax(scores, -1), 2)
        return (picked.sum() + h.gather(1, order.unsqueeze(-1).expand_as(h)).sum() + uniq.float().sum()
                + nz.float().sum() + selected.sum() + draws.float().sum())


def _hand(model_class: type, shape: Callable[[str], Tuple[int, ...]], integers: int = 0) -> Callable[[str], Case]:
    def build(size: str) -> Case:
        dims = shape(size)
        x = torch.randint(0, integers, dims) if integers else torch.randn(*dims)
        return Case(model_class(), (x,))
    return build


def _rows(tiny: int, gpu: int, *rest: int) -> Callable[[str], Tuple[int, ...]]:
    return lambda size: (_pick(size, tiny, gpu), *rest)


HANDWRITTEN = [
    CorpusModel("handwritten/functional", _hand(FunctionalNet, lambda s: (_pick(s, 1, 32), 3, 16, 16)), "sgd", (),
                "autocast"),
    CorpusModel("handwritten/inplace", _hand(InplaceNet, _rows(4, 4096, 16)), "sgd"),
    CorpusModel("handwritten/views", _hand(ViewsNet, _rows(2, 4096, 4, 16)), "adamw"),
    CorpusModel("handwritten/indexing", _hand(IndexingNet, _rows(4, 4096, 16)), "sgd"),
    CorpusModel("handwritten/control_flow", _hand(ControlFlowNet, _rows(4, 4096, 16)), "adamw"),
    CorpusModel("handwritten/custom_function", _hand(CustomFunctionNet, _rows(4, 4096, 16)), "sgd"),
    CorpusModel("handwritten/einsum", _hand(EinsumNet, _rows(2, 32, 8, 16)), "adamw", (), "autocast"),
    CorpusModel("handwritten/spectral", _hand(SpectralNet, _rows(4, 4096, 32)), "adamw"),
    CorpusModel("handwritten/recurrent", _hand(RecurrentNet, _rows(2, 32, 8, 16)), "sgd"),
    CorpusModel("handwritten/data_dependent", _hand(DataDependentNet, _rows(2, 64, 8), integers=32)),
]

CORPUS: Sequence[CorpusModel] = TORCHVISION + TIMM + TRANSFORMERS + HANDWRITTEN

# The runs CI takes (`corpus --subset ci`, tests/corpus): every hand-written and transformers
# model, the detection, segmentation and video models, and torchvision and timm models of every
# kind of layer (convolutions, depthwise and grouped ones, attention in windows, MLP mixers,
# recurrent layers, rotary embeddings) at about a third of the whole tiny corpus's time. The
# rest of the tiny corpus runs with `corpus` (docs/corpus.md).
CI_SUBSET = frozenset(
    [f"{m.name}:{mode}" for m in HANDWRITTEN + TRANSFORMERS for mode in m.modes("tiny")]
    + [f"torchvision/{n}" for n in (
        "fasterrcnn_mobilenet_v3_large_fpn:inference", "lraspp_mobilenet_v3_large:inference", "r3d_18:inference",
        "resnet18:inference", "resnet18:training", "mobilenet_v3_small:inference", "efficientnet_b0:inference",
        "vit_b_16:inference", "vit_b_16:training", "squeezenet1_1:inference", "squeezenet1_1:training",
        "densenet121:inference", "regnet_x_400mf:inference", "shufflenet_v2_x0_5:inference", "swin_t:inference",
        "convnext_tiny:inference")]
    + [f"timm/{n}" for n in (
        "vit_tiny_patch16_224:inference", "eva02_tiny_patch14_224:inference", "gmlp_ti16_224:inference",
        "resmlp_12_224:inference", "mixer_s32_224:inference", "dla46_c:inference", "starnet_s1:inference",
        "mobilenetv4_conv_small:inference", "sequencer2d_s:inference", "convit_tiny:inference",
        "cait_xxs24_224:inference", "efficientnet_lite0:inference", "resnet10t:inference", "resnet10t:training",
        "lcnet_050:inference", "convnextv2_atto:inference", "ese_vovnet19b_slim:inference")])


def by_name() -> Dict[str, CorpusModel]:
    return {m.name: m for m in CORPUS}
