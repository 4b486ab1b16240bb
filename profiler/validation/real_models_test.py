"""The pure parts of real_models.py (no torch): parameters -> constructor arguments."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402

GPT2 = dict(layers=12, hidden=768, heads=12, kv_heads=0, ffn=3072, seq_len=1024, vocab=50257,
            positions=1024, norm=0, mlp=0, bias=1, tied=1)
LLAMA = dict(layers=22, hidden=2048, heads=32, kv_heads=4, ffn=5632, seq_len=2048, vocab=32000,
             positions=0, norm=1, mlp=1, bias=0, tied=0)


class DecoderConfigTest(unittest.TestCase):
    def test_gpt2(self):
        cls, kwargs = real_models.decoder_config(GPT2)
        self.assertEqual(cls, "GPT2Config")
        self.assertEqual((kwargs["n_layer"], kwargs["n_embd"], kwargs["n_inner"]),
                         (12, 768, 3072))
        self.assertEqual(kwargs["n_positions"], 1024)
        self.assertEqual(kwargs["resid_pdrop"], 0.0)
        # The fused tanh GELU the agent's decoder runs, not "gelu_new"'s seven
        # element-wise ops (a quarter of a bf16 step on an H100).
        self.assertEqual(kwargs["activation_function"], "gelu_pytorch_tanh")

    def test_llama(self):
        cls, kwargs = real_models.decoder_config(LLAMA)
        self.assertEqual(cls, "LlamaConfig")
        self.assertEqual(kwargs["num_key_value_heads"], 4)
        self.assertEqual(kwargs["intermediate_size"], 5632)
        self.assertFalse(kwargs["tie_word_embeddings"])
        self.assertFalse(kwargs["attention_bias"])
        # kv_heads 0 means as many as the query heads.
        self.assertEqual(real_models.decoder_config(dict(LLAMA, kv_heads=0))[1][
            "num_key_value_heads"], 32)

    def test_unmapped_combinations_raise(self):
        with self.assertRaises(ValueError):
            real_models.decoder_config(dict(GPT2, norm=1))
        with self.assertRaises(ValueError):
            real_models.decoder_config(dict(GPT2, tied=0))


class ImageTest(unittest.TestCase):
    def test_vit_and_resnets(self):
        kwargs = real_models.vit_kwargs(dict(layers=12, hidden=768, heads=12, ffn=3072,
                                             patch=16, image=224, classes=1000))
        self.assertEqual((kwargs["patch_size"], kwargs["mlp_dim"]), (16, 3072))
        self.assertEqual(real_models.RESNETS[50], "resnet50")
        self.assertEqual(set(real_models.ALL_BUILDERS),
                         {"decoder", "bert", "vit", "resnet_imagenet"})
        self.assertLessEqual(set(real_models.BUILDERS), set(real_models.ALL_BUILDERS))


if __name__ == "__main__":
    unittest.main()
