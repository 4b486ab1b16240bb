#!/usr/bin/env python3
"""Builders of the architectures users train, from the libraries users train them with.

plain_loop.py merges BUILDERS into its own (the contract is in its docstring):

    build(params: dict[str, int], batch: int) -> plain_loop.Workload

`params` are a workload key's parameters (perfcast's decoder, bert, vit and
resnet_imagenet families, all defaults filled in). The models come from
Hugging Face `transformers` (GPT2LMHeadModel, LlamaForCausalLM,
BertForMaskedLM: built from a config, no weights downloaded) and
`torchvision` (resnet18 ... resnet152 and VisionTransformer with
weights=None), so the plain loop times the implementation a user would run,
written by others than perfcast's proxies. Dropout is off, as in the proxies;
attention is PyTorch's scaled_dot_product_attention ("sdpa"). BUILDERS holds
only the families whose library is installed (transformers: decoder, bert;
torchvision: vit, resnet_imagenet).

GPT-2's activation is "gelu_pytorch_tanh", the one fused kernel PyTorch
has for the tanh GELU that perfcast's decoder runs, not GPT-2's published
"gelu_new": the same function written as seven element-wise ops, which
autocast runs in fp32 (`pow` is on its fp32 list). Measured on an H100,
gelu_new puts 208 fp32 element-wise launches and ~25 ms into a 119 ms
bf16 training step of GPT-2 small at batch 16 (kernel_mix.py): a user who
keeps "gelu_new" pays that, and perfcast's decoder does not price it.

Which class a decoder maps to:
    norm=0, mlp=0, positions>0, bias=1, tied=1  -> GPT2LMHeadModel (GPT-2 / OPT shapes)
    norm=1, mlp=1, positions=0                  -> LlamaForCausalLM (Llama / Mistral shapes)
Other combinations have no Hugging Face class here and raise ValueError.

ViT uses torchvision's VisionTransformer rather than transformers'
ViTForImageClassification: perfcast's vit family is torchvision's
architecture (vit_b_16 has 86,567,656 parameters in both).

    python3 profiler/validation/real_models.py   # prints parameter counts (needs torch)

The mapping from parameters to constructor arguments is plain Python,
importable and tested without torch (real_models_test.py).
"""

import collections

Workload = collections.namedtuple("Workload", "model inputs target loss")


# ---- Pure parts: parameters -> constructor arguments (no torch) ----

def decoder_config(p):
    """(class name, transformers config kwargs) of a decoder's parameters."""
    kv_heads = p["kv_heads"] or p["heads"]
    common = dict(vocab_size=p["vocab"], hidden_size=p["hidden"],
                  num_hidden_layers=p["layers"], num_attention_heads=p["heads"])
    if p["norm"] == 0 and p["mlp"] == 0 and p["positions"] > 0:
        if p["bias"] != 1 or p["tied"] != 1 or kv_heads != p["heads"]:
            raise ValueError("GPT-2 style decoders have biases, a tied head and no GQA: %r" % p)
        return "GPT2Config", dict(
            vocab_size=p["vocab"], n_embd=p["hidden"], n_layer=p["layers"], n_head=p["heads"],
            n_inner=p["ffn"], n_positions=p["positions"], activation_function="gelu_pytorch_tanh",
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True)
    if p["norm"] == 1 and p["mlp"] == 1 and p["positions"] == 0:
        return "LlamaConfig", dict(
            common, num_key_value_heads=kv_heads, intermediate_size=p["ffn"],
            max_position_embeddings=p["seq_len"], tie_word_embeddings=bool(p["tied"]),
            attention_bias=bool(p["bias"]), mlp_bias=bool(p["bias"]), attention_dropout=0.0,
            rms_norm_eps=1e-5)
    raise ValueError("no Hugging Face decoder class for norm=%d mlp=%d positions=%d" % (
        p["norm"], p["mlp"], p["positions"]))


def bert_config(p):
    return "BertConfig", dict(
        vocab_size=p["vocab"], hidden_size=p["hidden"], num_hidden_layers=p["layers"],
        num_attention_heads=p["heads"], intermediate_size=p["ffn"],
        max_position_embeddings=p["positions"], type_vocab_size=p["type_vocab"],
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def vit_kwargs(p):
    """torchvision.models.vision_transformer.VisionTransformer arguments."""
    return dict(image_size=p["image"], patch_size=p["patch"], num_layers=p["layers"],
                num_heads=p["heads"], hidden_dim=p["hidden"], mlp_dim=p["ffn"],
                num_classes=p["classes"])


RESNETS = {18: "resnet18", 34: "resnet34", 50: "resnet50", 101: "resnet101", 152: "resnet152"}


# ---- Builders (torch, transformers, torchvision imported when called) ----

def _text(model_cls, config_cls, kwargs, p, batch):
    import torch
    import torch.nn.functional as F
    import transformers

    config = getattr(transformers, config_cls)(**kwargs)
    config._attn_implementation = "sdpa"
    inner = getattr(transformers, model_cls)(config)

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, ids):
            return self.inner(input_ids=ids, use_cache=False).logits

    def tokens(g):
        return torch.randint(p["vocab"], (batch, p["seq_len"]), generator=g)

    return Workload(Logits(), lambda g: [tokens(g)], tokens,
                    lambda out, target: F.cross_entropy(out.flatten(0, 1), target.flatten()))


def decoder(p, batch):
    config_cls, kwargs = decoder_config(p)
    model_cls = "GPT2LMHeadModel" if config_cls == "GPT2Config" else "LlamaForCausalLM"
    return _text(model_cls, config_cls, kwargs, p, batch)


def bert(p, batch):
    config_cls, kwargs = bert_config(p)
    return _text("BertForMaskedLM", config_cls, kwargs, p, batch)


def _images(model, p, batch):
    import torch
    import torch.nn.functional as F
    return Workload(model,
                    lambda g: [torch.randn(batch, 3, p["image"], p["image"], generator=g)],
                    lambda g: torch.randint(p["classes"], (batch,), generator=g),
                    F.cross_entropy)


def vit(p, batch):
    from torchvision.models.vision_transformer import VisionTransformer
    return _images(VisionTransformer(**vit_kwargs(p)), p, batch)


def resnet_imagenet(p, batch):
    import torchvision
    model = getattr(torchvision.models, RESNETS[p["depth"]])(weights=None,
                                                              num_classes=p["classes"])
    return _images(model, p, batch)


ALL_BUILDERS = {"decoder": decoder, "bert": bert, "vit": vit, "resnet_imagenet": resnet_imagenet}
_NEEDS = {"decoder": "transformers", "bert": "transformers", "vit": "torchvision",
          "resnet_imagenet": "torchvision"}


def _available(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


# Only the families whose library is installed: plain_loop.py selects
# configurations among the families it has builders for.
BUILDERS = {family: build for family, build in ALL_BUILDERS.items() if _available(_NEEDS[family])}

# The public checkpoints' shapes with the parameter counts perfcast asserts
# (tests/models/architectures_test.cc), for the self-check below.
REFERENCE = [
    ("decoder", dict(layers=12, hidden=768, heads=12, kv_heads=0, ffn=3072, seq_len=1024,
                     vocab=50257, positions=1024, norm=0, mlp=0, bias=1, tied=1), 124439808),
    ("decoder", dict(layers=22, hidden=2048, heads=32, kv_heads=4, ffn=5632, seq_len=2048,
                     vocab=32000, positions=0, norm=1, mlp=1, bias=0, tied=0), 1100048384),
    ("bert", dict(layers=12, hidden=768, heads=12, ffn=3072, seq_len=512, vocab=30522,
                  positions=512, type_vocab=2), 109514298),
    ("vit", dict(layers=12, hidden=768, heads=12, ffn=3072, patch=16, image=224,
                 classes=1000), 86567656),
    ("resnet_imagenet", dict(depth=50, image=224, classes=1000), 25557032),
]


def main():
    failed = 0
    missing = sorted({_NEEDS[f] for f in ALL_BUILDERS if f not in BUILDERS})
    if missing:
        print("not installed (those families are skipped): " + ", ".join(missing))
    for family, params, expected in REFERENCE:
        if family not in BUILDERS:
            continue
        model = BUILDERS[family](params, 1).model
        count = sum(t.numel() for t in model.parameters())
        ok = count == expected
        failed += not ok
        print("%-16s %14d %s (perfcast: %d)" % (family, count, "ok" if ok else "DIFFERS",
                                                expected))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
