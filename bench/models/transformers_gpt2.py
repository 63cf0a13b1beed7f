"""Eager transformers models for `python -m opcost` benchmarks (random weights):
    python3 -m opcost trace bench/models/transformers_gpt2.py:gpt2 --input i64[8,512]:range[0,50257]"""
import transformers


def gpt2():
    """GPT-2 with 6 layers (distilgpt2's shape), as GPT2LMHeadModel: 768 hidden, 12 heads."""
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=6, n_embd=768, n_head=12))
