"""The models of issue 18's speed table (must-show 5), built from configs with
seeded random weights (nothing is downloaded): torchvision's resnet50 and
vit_b_16, transformers' bert-base and a 150M llama-style decoder. --small
gives the same architectures shrunk, for a dry run on the CPU.

MODELS maps a name to (build(small) -> module, rows, make): rows are the
shapes the table times, make(shape, seed) the forward's positional inputs."""
import torch
import torch.nn as nn


class First(nn.Module):
    """A transformers model called with token ids, its first output (logits or
    the last hidden state)."""
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids)[0]


def images(size):
    def make(shape, seed):
        g = torch.Generator().manual_seed(seed)
        # rounded to bf16 so that the float32 and bf16 contenders read one input
        return (torch.randn(shape[0], 3, size, size, generator=g).bfloat16().float(),)
    return make


def tokens(vocab):
    def make(shape, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randint(3, vocab, shape, generator=g),)
    return make


def resnet50(small):
    import torchvision
    return torchvision.models.resnet50(weights=None)


def vit_b_16(small):
    import torchvision
    if small:
        return torchvision.models.VisionTransformer(image_size=64, patch_size=16, num_layers=2,
                                                    num_heads=4, hidden_dim=64, mlp_dim=128)
    return torchvision.models.vit_b_16(weights=None)


def bert(small):
    import transformers
    kw = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=128, vocab_size=1000) if small else {}
    cfg = transformers.BertConfig(**kw)     # defaults: bert-base
    return First(transformers.BertModel(cfg, add_pooling_layer=False))


def llama(small):
    import transformers
    kw = dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=1000) if small else dict(
        hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
        num_key_value_heads=4, vocab_size=32000)
    cfg = transformers.LlamaConfig(max_position_embeddings=2048, tie_word_embeddings=False,
                                   use_cache=False, **kw)
    return First(transformers.LlamaForCausalLM(cfg))


# name: (build, rows (full), rows (small), make (full), make (small))
MODELS = {
    "resnet50": (resnet50, [(1,), (64,)], [(1,), (2,)], images(224), images(64)),
    "vit_b_16": (vit_b_16, [(1,), (64,)], [(1,), (2,)], images(224), images(64)),
    "bert": (bert, [(1, 128), (32, 128)], [(1, 16), (2, 16)], tokens(30522), tokens(1000)),
    "llama150m": (llama, [(1, 128), (8, 1024)], [(1, 16), (2, 32)], tokens(32000), tokens(1000)),
}


def get(name, small):
    """(module in eval mode, rows, make)"""
    build, rows, rows_small, make, make_small = MODELS[name]
    torch.manual_seed(0)
    m = build(small).eval()
    return m, (rows_small if small else rows), (make_small if small else make)


def label(name, shape):
    return f"{name} " + ("b%d" % shape[0] if len(shape) == 1 else
                         ("b%dx%d" % shape if name.startswith("llama") else "b%d s%d" % shape))
