"""The zoo's models: real torchvision, timm and transformers architectures,
built with seeded random weights (never a download), each with example
inputs at a given batch size. transformers models come from small configs;
text models come twice, with and without an attention mask.

ZOO maps a name to (family, build); build() returns (module, make_inputs,
dynamic) where make_inputs(batch, seed) gives the forward's positional
arguments and dynamic the export's dynamic_shapes for a dynamic batch."""
import torch
import torch.nn as nn

VOCAB = 1000
SEQ = 16


def images(size, channels=3):
    def make(batch, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(batch, channels, size, size, generator=g),)
    return make


def dyn_batch(n):
    from torch.export import Dim
    b = Dim("batch", min=1, max=64)
    return tuple({0: b} for _ in range(n))


class Main(nn.Module):
    """A model whose forward returns a structure, reduced to one tensor
    (logits, last hidden state, a dict's "out")."""
    def __init__(self, model, key=None, **kw):
        super().__init__()
        self.model, self.key, self.kw = model, key, kw

    def forward(self, x):
        out = self.model(x, **self.kw)
        if self.key is not None:
            return out[self.key]
        return out if torch.is_tensor(out) else out[0]


class HFText(nn.Module):
    """A transformers text model called by keyword, logits or last hidden state."""
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask=None):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]


def token_inputs(mask):
    def make(batch, seed):
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(3, VOCAB, (batch, SEQ), generator=g)
        if not mask:
            return (ids,)
        m = torch.ones(batch, SEQ, dtype=torch.int64)
        for b in range(batch):      # right padding of a different length per row
            m[b, SEQ - 1 - (5 * b + 3) % (SEQ // 2):] = 0
        return ids, m
    return make


def tv(name, size=128, key=None, **kw):
    def build():
        import torchvision
        import torchvision.models.segmentation as seg
        m = getattr(torchvision.models, name, None) or getattr(seg, name)
        m = m(weights=None, **kw)
        return (Main(m, key) if key else m), images(size), dyn_batch(1)
    return ("torchvision", build)


def timm_model(name, size=224):
    def build():
        import timm
        return timm.create_model(name, pretrained=False), images(size), dyn_batch(1)
    return ("timm", build)


SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
DECODER = dict(SMALL, num_key_value_heads=2, max_position_embeddings=128, vocab_size=VOCAB)


def hf_text(config, model, mask):
    def build():
        import transformers
        cfg = getattr(transformers, config[0])(**config[1])
        cfg.use_cache = False       # no KV cache in the outputs
        m = getattr(transformers, model)(cfg)
        return HFText(m), token_inputs(mask), dyn_batch(2 if mask else 1)
    return ("transformers", build)


def hf_other(config, model, make, module=None):
    def build():
        import transformers
        cfg = getattr(transformers, config[0])(**config[1])
        cls = getattr(transformers, model) if module is None else module(model)
        return Main(cls(cfg)), make, dyn_batch(1)
    return ("transformers", build)


def audio(n):
    def make(batch, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(batch, n, generator=g),)
    return make


def mels(bins, frames):
    def make(batch, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(batch, bins, frames, generator=g),)
    return make


def whisper_encoder(name):
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    return WhisperEncoder


TEXT = {
    "bert": (("BertConfig", dict(SMALL, vocab_size=VOCAB, max_position_embeddings=128)),
             "BertModel"),
    "roberta": (("RobertaConfig", dict(SMALL, vocab_size=VOCAB, max_position_embeddings=130)),
                "RobertaModel"),
    "distilbert": (("DistilBertConfig", dict(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4,
                                             hidden_dim=128, max_position_embeddings=128)),
                   "DistilBertModel"),
    "gpt2": (("GPT2Config", dict(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4,
                                 n_positions=128)), "GPT2LMHeadModel"),
    "llama": (("LlamaConfig", DECODER), "LlamaForCausalLM"),
    "mistral": (("MistralConfig", dict(DECODER, sliding_window=8)), "MistralForCausalLM"),
    "qwen2": (("Qwen2Config", DECODER), "Qwen2ForCausalLM"),
    "phi3": (("Phi3Config", dict(DECODER, pad_token_id=0)), "Phi3ForCausalLM"),
    "gemma": (("GemmaConfig", dict(DECODER, head_dim=16)), "GemmaForCausalLM"),
    "t5_encoder": (("T5Config", dict(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128,
                                     num_layers=2, num_heads=4)), "T5EncoderModel"),
    "clip_text": (("CLIPTextConfig", dict(SMALL, vocab_size=VOCAB, max_position_embeddings=77)),
                  "CLIPTextModel"),
}

ZOO = {
    "resnet18": tv("resnet18"),
    "resnet50": tv("resnet50"),
    "mobilenet_v2": tv("mobilenet_v2"),
    "mobilenet_v3_large": tv("mobilenet_v3_large"),
    "efficientnet_b0": tv("efficientnet_b0"),
    "convnext_tiny": tv("convnext_tiny"),
    "regnet_y_400mf": tv("regnet_y_400mf"),
    "densenet121": tv("densenet121"),
    "squeezenet1_1": tv("squeezenet1_1"),
    "shufflenet_v2_x1_0": tv("shufflenet_v2_x1_0"),
    "googlenet": tv("googlenet", aux_logits=False, init_weights=True),
    "mnasnet1_0": tv("mnasnet1_0"),
    "swin_t": tv("swin_t", size=224),
    "vit_b_16": tv("vit_b_16", size=224),
    "deeplabv3_mobilenet_v3_large": tv("deeplabv3_mobilenet_v3_large", key="out",
                                       weights_backbone=None, aux_loss=False),
    "vit_tiny": timm_model("vit_tiny_patch16_224"),
    "deit_tiny": timm_model("deit_tiny_patch16_224"),
    "levit_128s": timm_model("levit_128s"),
    "efficientformer_l1": timm_model("efficientformer_l1"),
    "mobilevit_xxs": timm_model("mobilevit_xxs", size=256),
}
for _name, (_cfg, _cls) in TEXT.items():
    ZOO[_name] = hf_text(_cfg, _cls, mask=False)
    ZOO[_name + "+mask"] = hf_text(_cfg, _cls, mask=True)
ZOO.update({
    "clip_vision": hf_other(("CLIPVisionConfig", dict(SMALL, image_size=64, patch_size=16)),
                            "CLIPVisionModel", images(64)),
    "hf_vit": hf_other(("ViTConfig", dict(SMALL, image_size=64, patch_size=16)), "ViTModel",
                       images(64)),
    "whisper_encoder": hf_other(("WhisperConfig", dict(d_model=64, encoder_layers=2,
                                                       encoder_attention_heads=4,
                                                       encoder_ffn_dim=128, num_mel_bins=80,
                                                       max_source_positions=64)),
                                "WhisperEncoder", mels(80, 128), module=whisper_encoder),
    "wav2vec2": hf_other(("Wav2Vec2Config", dict(SMALL, conv_dim=(32, 32, 32),
                                                 conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                                                 num_conv_pos_embeddings=16,
                                                 num_conv_pos_embedding_groups=4)),
                         "Wav2Vec2Model", audio(1600)),
})
